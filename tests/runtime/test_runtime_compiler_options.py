"""The platform profile's train-step options reach XLA: the same step with fewer bytes of
temporaries planned, and a wrong option named by its gin binding."""

import jax
import numpy as np
import pytest

from crosstask.runtime.config import platform
from crosstask.runtime.state import trainer as trainer_lib
from test_runtime_checkpoint_safety import _trainer as tiny_trainer


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


@pytest.mark.slow(seconds=5)  # a platform option's check, not the inner loop's
@pytest.mark.skipif(jax.default_backend() != 'cpu', reason="the CPU profile's options")
def test_the_cpu_profile_trains_like_xlas_defaults_and_plans_no_more_memory():
  plain = _trainer(profile=platform.profile('cpu', train_compiler_options={}))
  profiled = _trainer()  # the profile of the mesh's devices: CPU here
  assert profiled.compiler_options == dict(platform.PROFILES['cpu'].train_compiler_options)
  assert plain.compiler_options == {}
  (a, ma), (b, mb) = _two_steps(plain), _two_steps(profiled)
  assert float(ma['loss']) == pytest.approx(float(mb['loss']), rel=1e-5)
  jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6),
               a['params'], b['params'])
  state = plain.init_state(seed=0)
  batch = _batch(plain)
  temps = [t.compile_train_step(state, batch, jax.random.key(0))
           .memory_analysis().temp_size_in_bytes for t in (plain, profiled)]
  # What the option is for, visible in the compiled program: the memory-optimized
  # scheduler orders the same step for fewer bytes of temporaries than XLA's default
  # (422824 -> 421800 on the tiny step); an option XLA stopped reading leaves them equal.
  assert temps[1] < temps[0]


def test_unknown_compiler_option_names_the_binding():
  trainer = _trainer(profile=platform.profile(
      train_compiler_options={'xla_cpu_scheduler_typo': 'x'}))
  state = trainer.init_state(seed=0)
  with pytest.raises(ValueError, match=r'platform\.profile\.train_compiler_options=.*'
                                       r'xla_cpu_scheduler_typo'):
    trainer.train_step(state, _batch(trainer), jax.random.key(0))
