"""Layouts (data, fsdp, tensor, fsdp+tensor) on 8 virtual CPU devices train like one
device; state is placed from abstract shapes; microbatches span every data device."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import seqio
from jax.sharding import PartitionSpec as P

from crosstask.models import config as config_lib
from crosstask.models import model as model_lib
from crosstask.models import network
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import optimizers
from crosstask.runtime.state import trainer as trainer_lib

LENGTHS = {'inputs': 16, 'targets': 16}


def _model(num_heads=8, **overrides):
  fields = dict(vocab_size=264, d_model=32, d_ff=64, num_heads=num_heads, d_kv=8,
                num_encoder_layers=1, num_decoder_layers=1, activations=('gelu', 'linear'),
                logits_via_embedding=False, dropout_rate=0.0, dtype='float32')
  fields.update(overrides)
  vocab = seqio.ByteVocabulary()
  return model_lib.EncoderDecoderModel(network.Transformer(config_lib.TransformerConfig(**fields)),
                                       vocab, vocab)


def _batch(rows=8):
  rng = np.random.default_rng(0)
  enc = rng.integers(3, 259, size=(rows, 16), dtype=np.int32)
  tgt = rng.integers(3, 259, size=(rows, 16), dtype=np.int32)
  tgt[:, 12:] = 0  # Some padding, so weights matter.
  enc[:, 14:] = 0
  dec_in = np.concatenate([np.zeros((rows, 1), np.int32), tgt[:, :-1]], axis=1)
  return {'encoder_input_tokens': enc, 'decoder_input_tokens': dec_in,
          'decoder_target_tokens': tgt, 'decoder_loss_weights': (tgt > 0).astype(np.int32)}


def _trainer(partitioner, num_microbatches=1, optimizer=optimizers.adafactor, rows=8,
             **model_kw):
  run = run_lib.resolve(_model(**model_kw), partitioner, batch_size=rows, lengths=LENGTHS,
                        num_microbatches=num_microbatches)
  tx, schedule = optimizers.create_optimizer(optimizer, 1e-2, param_axes=run.param_axes)
  return trainer_lib.Trainer(run, tx, schedule)


def _run(partitioner, num_microbatches=1):
  trainer = _trainer(partitioner, num_microbatches)
  state = trainer.init_state(seed=0)
  batch = partitioner.shard_batch(_batch())
  loss, _, grads = trainer.loss_and_grads(state['params'], batch)
  state, metrics = trainer.train_step(state, batch, jax.random.key(1))
  return trainer, jax.device_get((loss, grads, state['params'], metrics))


def _close(a, b):
  jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5), a, b)


@pytest.fixture(scope='module')
def reference():
  return _run(partitioning.Partitioner(devices=jax.devices()[:1]))[1]


LAYOUTS = [('data', 1, (8, 1, 1)), ('tensor', 8, (1, 1, 8)), ('data', 2, (4, 1, 2)),
           ('fsdp', 1, (1, 8, 1)), ('fsdp+tensor', 2, (1, 4, 2))]


# The fast set (`-m 'not slow'`) runs the layout that splits both ways; the full suite all.
@pytest.mark.parametrize('layout,num_partitions,mesh', [
    pytest.param(l, n, m, id=f'{l}-{n}', marks=() if l == 'fsdp+tensor' else pytest.mark.slow)
    for l, n, m in LAYOUTS])
def test_layouts_match_single_device(reference, layout, num_partitions, mesh):
  assert len(jax.devices()) == 8
  part = partitioning.Partitioner(num_partitions=num_partitions, layout=layout)
  assert tuple(part.mesh.shape.values()) == mesh
  assert tuple(part.mesh.axis_names) == ('data', 'fsdp', 'model')
  trainer, (loss, grads, params, metrics) = _run(part)
  ref_loss, ref_grads, ref_params, ref_metrics = reference
  np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
  np.testing.assert_allclose(metrics['loss'], ref_metrics['loss'], rtol=1e-5)
  _close(grads, ref_grads)
  _close(params, ref_params)
  query = trainer.param_shardings['encoder']['layers_0']['attention']['query']
  embed_axis = 'fsdp' if 'fsdp' in layout else None
  assert query.spec[0] == embed_axis and query.spec[1] == 'model'
  if layout == 'data' and num_partitions == 1:  # Whole parameters on every device.
    assert all(s.is_fully_replicated for s in jax.tree.leaves(trainer.param_shardings))


def test_activation_embed_stays_whole_where_the_batch_took_fsdp():
  part = partitioning.Partitioner(layout='fsdp')
  assert nn.logical_to_mesh_axes(('batch', 'length', 'embed'), part.rules) == P(
      ('data', 'fsdp'), None, None)
  assert nn.logical_to_mesh_axes(('embed', 'mlp'), part.rules) == P('fsdp', 'model')
  assert nn.logical_to_mesh_axes(('batch', 'length', 'heads', 'kv'), part.rules) == P(
      ('data', 'fsdp'), None, 'model', None)
  tensor = partitioning.Partitioner(num_partitions=2, layout='tensor')
  boxed = {'w': nn.Partitioned(np.zeros((4, 8)), names=('embed', 'mlp')),
           'e': nn.Partitioned(np.zeros((8, 4)), names=('vocab', 'embed'))}
  sh = tensor.logical_to_sharding(boxed)
  assert tuple(sh['w'].spec) == (None, 'model') and tuple(sh['e'].spec) == ('model', None)


def test_a_layout_that_would_replicate_a_split_tensor_is_refused():
  part = partitioning.Partitioner(num_partitions=8, layout='tensor')
  with pytest.raises(ValueError, match=r"parameter '\w+/[\w/]+' dimension \d \('heads', "
                                       r"size 12\) over mesh axis 'model' \(size 8\)"):
    _trainer(part, num_heads=12)
  with pytest.raises(ValueError, match=r"layout='tensor' .* NUM_PARTITIONS"):
    partitioning.Partitioner(layout='tensor')
  with pytest.raises(ValueError, match=r"layout='model'"):
    partitioning.Partitioner(layout='model')
  with pytest.raises(ValueError, match='num_partitions=3'):
    partitioning.Partitioner(num_partitions=3)
  with pytest.raises(ValueError, match=r'BATCH_SIZE=12 .* 8 batch shards'):
    partitioning.Partitioner(layout='fsdp').check_batch(12)


def test_state_shardings_come_from_abstract_shapes_and_the_init_honours_them():
  part = partitioning.Partitioner(num_partitions=2, layout='fsdp+tensor')
  trainer = _trainer(part, optimizer=optimizers.adamw)
  abstract = trainer.abstract_state()
  assert trainer._init._cache_size() == 0  # Nothing was compiled to know the placements.
  adam = abstract['opt_state'][0]
  for moments in (adam.mu, adam.nu):
    jax.tree.map(lambda m, p: m.sharding == p.sharding or pytest.fail(f'{m} vs {p}'),
                 moments, abstract['params'])
  assert abstract['step'].sharding.is_fully_replicated
  state = trainer.init_state(seed=0)
  jax.tree.map(lambda x, a: x.sharding.is_equivalent_to(a.sharding, x.ndim)
               or pytest.fail(f'{x.sharding} vs {a.sharding}'), state, abstract)

  factored = _trainer(part, d_model=128, d_ff=256, d_kv=16).abstract_state()
  query = factored['params']['encoder']['layers_0']['attention']['query']  # [128, 8, 16]
  ada = factored['opt_state']
  v_row = ada.v_row['encoder']['layers_0']['attention']['query']
  v_col = ada.v_col['encoder']['layers_0']['attention']['query']
  assert query.sharding.spec == P('fsdp', 'model', None)
  assert v_row.shape == (128, 1, 1) and v_row.sharding.spec == P('fsdp', None, None)
  assert v_col.shape == (1, 8, 16) and v_col.sharding.spec == P(None, 'model', None)


def test_train_step_compiles_from_abstract_arguments_alone():
  """What an ahead-of-time compile for absent devices needs: no buffer, no init run."""
  part = partitioning.Partitioner(num_partitions=2, layout='fsdp+tensor')
  trainer = _trainer(part)
  batch = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in _batch().items()}
  rng = jax.eval_shape(lambda: jax.random.key(0))
  compiled = trainer.compile_train_step(trainer.abstract_state(), batch, rng)
  assert trainer._init._cache_size() == 0
  state_in = compiled.input_shardings[0][0]
  jax.tree.map(lambda got, want: got.is_equivalent_to(want.sharding, len(want.shape))
               or pytest.fail(f'{got} vs {want.sharding}'), state_in, trainer.abstract_state())
  assert compiled.memory_analysis().argument_size_in_bytes > 0
  # A batch the data axes do not split is refused once, where the run is resolved.
  with pytest.raises(ValueError, match=r'BATCH_SIZE=6 .* 4 batch shards'):
    run_lib.resolve(trainer.model, part, batch_size=6, lengths=LENGTHS)


def test_microbatches_span_every_data_device_and_keep_rows_in_place():
  part = partitioning.Partitioner(layout='fsdp')
  trainer = _trainer(part, num_microbatches=2, rows=16)
  batch = part.shard_batch(_batch(16))
  with part.context():
    micro = jax.jit(trainer.microbatches)(batch)['encoder_input_tokens']
  assert micro.shape == (2, 8, 16)
  full = np.asarray(batch['encoder_input_tokens'])
  for i in range(2):  # Microbatch i holds rows i, 2+i, 4+i, ...
    np.testing.assert_array_equal(np.asarray(micro[i]), full[i::2])
  held = {s.device: s for s in batch['encoder_input_tokens'].addressable_shards}
  assert len(micro.addressable_shards) == 8
  for shard in micro.addressable_shards:  # Every device: 1 row of each microbatch, its own.
    assert shard.data.shape == (2, 1, 16)
    mine = np.asarray(held[shard.device].data)
    np.testing.assert_array_equal(np.asarray(shard.data)[:, 0], mine)
  with pytest.raises(ValueError, match=r'microbatches of 4 rows, which do not divide over the 8'):
    part.check_batch(8, num_microbatches=2)  # A batch of 8 in 2 microbatches.
  with pytest.raises(ValueError, match=r'must split the batch of 16 into equal microbatches'):
    part.check_batch(16, num_microbatches=3)


def test_microbatches_match_full_batch(reference):
  _, (loss, grads, params, metrics) = _run(
      partitioning.Partitioner(num_partitions=2), num_microbatches=2)
  np.testing.assert_allclose(loss, reference[0], rtol=1e-5)
  np.testing.assert_allclose(metrics['loss'], reference[3]['loss'], rtol=1e-5)
  _close(grads, reference[1])
  _close(params, reference[2])


def _device_bytes(tree, device) -> int:
  return sum(s.data.nbytes for x in jax.tree.leaves(tree) for s in x.addressable_shards
             if s.device == device)


# The fast set initialises the layout that splits both ways; the full suite all four.
@pytest.mark.parametrize('layout,num_partitions,shards', [
    pytest.param(l, n, s, id=f'{l}-{n}-{s}', marks=() if l == 'fsdp+tensor' else pytest.mark.slow)
    for l, n, s in [('data', 1, 1), ('fsdp', 1, 8), ('tensor', 8, 8), ('fsdp+tensor', 2, 8)]])
def test_per_device_bytes_of_parameters_and_optimizer_state(layout, num_partitions, shards):
  """AdamW's moments mirror the parameters, so they shard exactly as they do."""
  part = partitioning.Partitioner(num_partitions=num_partitions, layout=layout)
  model = _model(vocab_size=256, d_model=64, d_ff=128, d_kv=8, num_encoder_layers=2,
                 num_decoder_layers=2)
  tx, schedule = optimizers.create_optimizer(optimizers.adamw, 1e-3, param_axes=None)
  trainer = trainer_lib.Trainer(run_lib.resolve(model, part, batch_size=8, lengths=LENGTHS),
                                tx, schedule)
  state = trainer.init_state(seed=0)
  total = {k: sum(x.nbytes for x in jax.tree.leaves(state[k])) for k in ('params', 'opt_state')}
  for device in jax.devices():
    per_device = {k: _device_bytes(state[k], device) for k in total}
    print(f'{layout}: {device} params {per_device["params"]} of {total["params"]}, '
          f'optimizer {per_device["opt_state"]} of {total["opt_state"]} bytes')
    for k in total:
      assert per_device[k] == pytest.approx(total[k] / shards, rel=0.05), (k, device)
  # What the abstract state says is what the initialiser placed.
  for device in jax.devices():
    planned = sum(np.prod(x.sharding.shard_shape(x.shape)) * x.dtype.itemsize
                  for x in jax.tree.leaves(trainer.abstract_state()['opt_state']))
    assert planned == _device_bytes(state['opt_state'], device)


def test_meshes_follow_mesh_utils_and_fall_back_to_the_device_order(monkeypatch):
  devices = jax.devices()
  from jax.experimental import mesh_utils
  part = partitioning.Partitioner(num_partitions=2, layout='fsdp+tensor')
  np.testing.assert_array_equal(part.mesh.devices,
                                mesh_utils.create_device_mesh((1, 4, 2), devices))

  # Multi-slice: CPU devices have no slice_index, so the list splits into consecutive slices,
  # and the 'data' axis runs over the slices (slice-major).
  sliced = partitioning.Partitioner(layout='fsdp', num_slices=2)
  assert tuple(sliced.mesh.shape.values()) == (2, 4, 1)
  np.testing.assert_array_equal(sliced.mesh.devices[:, :, 0],
                                np.asarray(devices, dtype=object).reshape(2, 4))

  class Fake:  # Devices mesh_utils sorts by slice_index (as on a multi-slice TPU).
    platform, device_kind, process_index = 'cpu', 'cpu', 0

    def __init__(self, i):
      self.id, self.slice_index = i, i % 2

    def __repr__(self):
      return f'Fake({self.id})'
  fakes = [Fake(i) for i in range(8)]
  grid = partitioning.device_grid((2, 1, 2), (2, 1, 1), fakes)
  assert grid.shape == (4, 1, 2)
  assert [{d.slice_index for d in grid[r].flat} for r in range(4)] == [{0}, {0}, {1}, {1}]

  def refuse(*args, **kwargs):
    raise NotImplementedError('no topology for these devices')
  monkeypatch.setattr(mesh_utils, 'create_device_mesh', refuse)
  monkeypatch.setattr(mesh_utils, 'create_hybrid_device_mesh', refuse)
  plain = partitioning.Partitioner(num_partitions=2)
  np.testing.assert_array_equal(plain.mesh.devices,
                                np.asarray(devices, dtype=object).reshape(4, 1, 2))
  grid = partitioning.device_grid((2, 1, 2), (2, 1, 1), fakes)
  assert [d.id for d in grid.flat] == list(range(8))


def test_one_host_loads_the_whole_batch():
  part = partitioning.Partitioner(num_partitions=2, layout='fsdp+tensor')
  assert part.host_input(16) == partitioning.HostInput(shard_index=0, num_shards=1,
                                                       batch_size=16)
  batch = part.shard_batch(_batch(16))
  np.testing.assert_array_equal(np.asarray(batch['encoder_input_tokens']),
                                _batch(16)['encoder_input_tokens'])
  assert batch['encoder_input_tokens'].sharding.spec == P(('data', 'fsdp'))


def test_schedules():
  rsqrt = optimizers.rsqrt_decay(1.0, warmup_steps=100)
  np.testing.assert_allclose(rsqrt(0), 0.1, rtol=1e-6)
  np.testing.assert_allclose(rsqrt(400), 0.05, rtol=1e-6)
  warm = optimizers.rsqrt_decay(1.0, warmup_steps=100, linear_warmup=True)
  # T5X's 'constant * linear_warmup * rsqrt_decay': step / warmup_steps, 0 at step 0.
  np.testing.assert_allclose([warm(0), warm(50), warm(100), warm(400)], [0.0, 0.05, 0.1, 0.05],
                             rtol=1e-6)
  lin = optimizers.linear_decay(1e-3, total_steps=110, warmup_steps=10)
  np.testing.assert_allclose([lin(5), lin(10), lin(60), lin(110)], [5e-4, 1e-3, 5e-4, 0.0],
                             atol=1e-9)
  tx, sched = optimizers.create_optimizer(optimizers.adamw, 1e-3, grad_clip_norm=1.0,
                                          accumulate_steps=2, param_axes=None)
  assert isinstance(tx, optax.MultiSteps) and float(sched(7)) == pytest.approx(1e-3)


def test_the_logged_rate_is_the_one_applied_under_accumulation():
  """Under MultiSteps (k=2) the inner optimizer counts updates, not steps: after 4 steps
  the schedule is at 2, where the train step would say 4."""
  schedule = lambda count: 1e-3 * (count + 1)
  tx, sched = optimizers.create_optimizer(optimizers.adamw, schedule, accumulate_steps=2,
                                          param_axes=None)
  params = {'w': jnp.ones(3)}
  state = tx.init(params)
  for _ in range(4):
    _, state = tx.update({'w': jnp.ones(3)}, state, params)
  assert float(trainer_lib.applied_learning_rate(sched, state, 4)) == pytest.approx(3e-3)
  assert float(trainer_lib.applied_learning_rate(sched, (), 4)) == pytest.approx(5e-3)
