"""`Trainer.compiler_options` reaches XLA: same step, a named error for a wrong option."""

import jax
import numpy as np
import pytest

from crosstask.runtime import trainer as trainer_lib
from test_runtime_checkpoint_safety import _trainer as tiny_trainer

MEMORY_SCHEDULER = {'xla_cpu_scheduler_type': 'CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED'}


def _trainer(**kwargs) -> trainer_lib.Trainer:
  return tiny_trainer(**kwargs)[0]


def _batch(trainer):
  rng = np.random.default_rng(0)
  tokens = rng.integers(3, 260, (8, 16)).astype(np.int32)
  return trainer.partitioner.shard_batch({
      'encoder_input_tokens': tokens, 'decoder_input_tokens': tokens,
      'decoder_target_tokens': tokens, 'decoder_loss_weights': np.ones((8, 16), np.float32)})


def _two_steps(trainer):
  state = trainer.init_state(seed=0)
  batch = _batch(trainer)
  for _ in range(2):
    state, metrics = trainer.train_step(state, batch, jax.random.key(0))
  return jax.device_get(state), jax.device_get(metrics)


@pytest.mark.skipif(jax.default_backend() != 'cpu', reason='an XLA:CPU scheduler option')
def test_memory_optimized_schedule_trains_the_same_and_plans_no_more_memory():
  plain, scheduled = _trainer(compiler_options={}), _trainer(compiler_options=MEMORY_SCHEDULER)
  (a, ma), (b, mb) = _two_steps(plain), _two_steps(scheduled)
  assert float(ma['loss']) == pytest.approx(float(mb['loss']), rel=1e-5)
  jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6),
               a['params'], b['params'])
  state = plain.init_state(seed=0)
  batch = _batch(plain)
  temps = [t.compile_train_step(state, batch, jax.random.key(0))
           .memory_analysis().temp_size_in_bytes for t in (plain, scheduled)]
  assert temps[1] <= temps[0]


def test_unknown_compiler_option_names_the_binding():
  trainer = _trainer(compiler_options={'xla_cpu_scheduler_typo': 'x'})
  state = trainer.init_state(seed=0)
  with pytest.raises(ValueError, match=r"Trainer\.compiler_options=.*xla_cpu_scheduler_typo"):
    trainer.train_step(state, _batch(trainer), jax.random.key(0))


@pytest.mark.skipif(jax.default_backend() != 'cpu', reason='the CPU default')
def test_cpu_default_is_the_memory_optimized_scheduler_and_empty_keeps_xlas():
  assert _trainer().compiler_options == MEMORY_SCHEDULER == trainer_lib.CPU_COMPILER_OPTIONS
  assert _trainer(compiler_options={}).compiler_options == {}
