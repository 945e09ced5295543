"""Data, model and mixed parallelism on 8 virtual CPU devices match one device."""

import flax.linen as nn
import jax
import numpy as np
import optax
import pytest
import seqio

from crosstask.models import config as config_lib
from crosstask.models import model as model_lib
from crosstask.models import network
from crosstask.runtime import optimizers, partitioning, trainer as trainer_lib

SHAPES = {'encoder_input_tokens': (8, 16), 'decoder_input_tokens': (8, 16)}


def _model():
  cfg = config_lib.TransformerConfig(
      vocab_size=264, d_model=32, d_ff=64, num_heads=8, d_kv=8, num_encoder_layers=1,
      num_decoder_layers=1, activations=('gelu', 'linear'), logits_via_embedding=False,
      dropout_rate=0.0, dtype='float32')
  vocab = seqio.ByteVocabulary()
  return model_lib.EncoderDecoderModel(network.Transformer(cfg), vocab, vocab)


def _batch():
  rng = np.random.default_rng(0)
  enc = rng.integers(3, 259, size=(8, 16), dtype=np.int32)
  tgt = rng.integers(3, 259, size=(8, 16), dtype=np.int32)
  tgt[:, 12:] = 0  # Some padding, so weights matter.
  enc[:, 14:] = 0
  dec_in = np.concatenate([np.zeros((8, 1), np.int32), tgt[:, :-1]], axis=1)
  return {'encoder_input_tokens': enc, 'decoder_input_tokens': dec_in,
          'decoder_target_tokens': tgt, 'decoder_loss_weights': (tgt > 0).astype(np.int32)}


def _run(partitioner, num_microbatches=1):
  tx, schedule = optimizers.create_optimizer(optimizers.adafactor, 1e-2)
  trainer = trainer_lib.Trainer(_model(), partitioner, tx, schedule, SHAPES,
                                num_microbatches=num_microbatches)
  state = trainer.init_state(seed=0)
  batch = partitioner.shard_batch(_batch())
  loss, _, grads = trainer.loss_and_grads(state['params'], batch)
  state, metrics = trainer.train_step(state, batch, jax.random.key(1))
  return trainer, jax.device_get((loss, grads, state['params'], metrics))


@pytest.fixture(scope='module')
def reference():
  return _run(partitioning.Partitioner(devices=jax.devices()[:1]))[1]


@pytest.mark.parametrize('num_partitions', [1, 8, 2], ids=['data8x1', 'model1x8', 'mixed4x2'])
def test_sharded_matches_single_device(reference, num_partitions):
  assert len(jax.devices()) == 8
  part = partitioning.Partitioner(num_partitions=num_partitions)
  assert part.mesh.shape == {'data': 8 // num_partitions, 'model': num_partitions}
  trainer, (loss, grads, params, metrics) = _run(part)
  ref_loss, ref_grads, ref_params, ref_metrics = reference
  np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
  np.testing.assert_allclose(metrics['loss'], ref_metrics['loss'], rtol=1e-5)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), grads,
               ref_grads)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), params,
               ref_params)
  shardings = jax.tree.leaves(trainer.param_shardings)
  if num_partitions > 1:  # The wide dimensions really are split over 'model'.
    assert any(not s.is_fully_replicated for s in shardings)
  else:  # Pure data parallelism keeps a whole copy of the parameters per device.
    assert all(s.is_fully_replicated for s in shardings)


def test_logical_rules_map_axes():
  part = partitioning.Partitioner(num_partitions=2)
  boxed = {'w': nn.Partitioned(np.zeros((4, 8)), names=('embed', 'mlp')),
           'e': nn.Partitioned(np.zeros((8, 4)), names=('vocab', 'embed'))}
  sh = part.logical_to_sharding(boxed)
  assert tuple(sh['w'].spec) == (None, 'model')
  assert tuple(sh['e'].spec) == ('model', None)
  with pytest.raises(ValueError, match='num_partitions=3'):
    partitioning.Partitioner(num_partitions=3)


def test_microbatches_match_full_batch(reference):
  _, (loss, _, params, metrics) = _run(partitioning.Partitioner(num_partitions=2),
                                       num_microbatches=2)
  np.testing.assert_allclose(metrics['loss'], reference[3]['loss'], rtol=1e-5)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), params,
               reference[2])


def test_schedules():
  rsqrt = optimizers.rsqrt_decay(1.0, warmup_steps=100)
  np.testing.assert_allclose(rsqrt(0), 0.1, rtol=1e-6)
  np.testing.assert_allclose(rsqrt(400), 0.05, rtol=1e-6)
  warm = optimizers.rsqrt_decay(1.0, warmup_steps=100, linear_warmup=True)
  np.testing.assert_allclose(warm(49), 0.05, rtol=1e-6)
  lin = optimizers.linear_decay(1e-3, total_steps=110, warmup_steps=10)
  np.testing.assert_allclose([lin(5), lin(10), lin(60), lin(110)], [5e-4, 1e-3, 5e-4, 0.0],
                             atol=1e-9)
  tx, sched = optimizers.create_optimizer(optimizers.adamw, 1e-3, grad_clip_norm=1.0,
                                          accumulate_steps=2)
  assert isinstance(tx, optax.MultiSteps) and float(sched(7)) == pytest.approx(1e-3)
