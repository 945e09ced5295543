"""Adafactor factored by logical axes: optax's updates on matrices, T5X's factoring of
attention kernels and scanned layers, and the optimizer bytes that saves."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import seqio
from jax.sharding import PartitionSpec as P

import numpy_params
from crosstask.models import config as config_lib
from crosstask.models import model as model_lib
from crosstask.models import network
from crosstask.runtime.state import adafactor
from crosstask.runtime.state import optimizers


def _grads(params, step):
  keys = jax.random.split(jax.random.key(step), len(jax.tree.leaves(params)))
  leaves, treedef = jax.tree.flatten(params)
  return treedef.unflatten([jax.random.normal(k, x.shape) * (1 + i)
                            for i, (k, x) in enumerate(zip(keys, leaves))])


def _steps(tx, params, n=4):
  out = []

  @jax.jit  # One compiled step instead of op by op.
  def step_fn(grads, state, params):
    updates, state = tx.update(grads, state, params)
    return updates, state, optax.apply_updates(params, updates)

  state = tx.init(params)
  for step in range(n):
    updates, state, params = step_fn(_grads(params, step), state, params)
    out.append(updates)
  return out, state


PARAMS_2D = {
    'wi': jax.random.normal(jax.random.key(1), (128, 256)),   # embed x mlp
    'wo': jax.random.normal(jax.random.key(2), (256, 128)),   # mlp x embed
    'embedding': jax.random.normal(jax.random.key(3), (384, 128)),  # vocab x embed
    'small': jax.random.normal(jax.random.key(4), (8, 300)),  # unfactored: 8 < 128
    'scale': jnp.ones((128,)),
}
AXES_2D = {'wi': P('embed', 'mlp'), 'wo': P('mlp', 'embed'), 'embedding': P('vocab', 'embed'),
           'small': P('heads', 'relpos_buckets'), 'scale': P('embed')}


@pytest.mark.parametrize('options', [
    {}, {'momentum': 0.9, 'weight_decay_rate': 1e-3},
    {'clipping_threshold': None, 'multiply_by_parameter_scale': False}],
    ids=['t5x-defaults', 'momentum-decay', 'plain'])
def test_equals_optax_adafactor_on_matrices(options):
  lr = optax.linear_schedule(1e-2, 1e-3, 10)
  ours, state = _steps(optimizers.adafactor(lr, **options, param_axes=AXES_2D), PARAMS_2D)
  theirs, _ = _steps(optax.adafactor(lr, **options), PARAMS_2D)
  for a, b in zip(ours, theirs):
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=2e-5, atol=1e-7), a, b)
  assert state.v_row['wi'].shape == (128, 1) and state.v_col['wi'].shape == (1, 256)
  assert state.v['small'].shape == (8, 300) and state.v_row['small'].shape == ()


def test_attention_kernels_are_factored_rows_by_embed_columns_by_heads_and_kv():
  kernel = {'query': jax.random.normal(jax.random.key(0), (256, 4, 64))}
  _, state = _steps(optimizers.adafactor(1e-2, param_axes={'query': P('embed', 'heads', 'kv')}),
                    kernel, n=1)
  assert state.v_row['query'].shape == (256, 1, 1)
  assert state.v_col['query'].shape == (1, 4, 64)
  assert state.v['query'].shape == ()
  # optax looks at the two largest dims (256 and 64 < 128): a second moment as large as
  # the kernel.
  assert optax.adafactor(1e-2).init(kernel)[0].v['query'].shape == (256, 4, 64)
  # A 3-D kernel factored as a [256, 256] matrix: the same update as the reshaped matrix.
  flat = {'query': kernel['query'].reshape(256, 256)}
  ours, _ = _steps(optimizers.adafactor(1e-2, param_axes={'query': P('embed', 'heads', 'kv')}),
                   kernel)
  want, _ = _steps(optimizers.adafactor(1e-2, param_axes={'query': P('embed', 'mlp')}), flat)
  for a, b in zip(ours, want):
    np.testing.assert_allclose(a['query'].reshape(256, 256), b['query'], rtol=2e-5, atol=1e-7)


def test_scanned_layers_are_batch_dimensions_updated_as_separate_layers():
  """A [layers, embed, mlp] parameter moves as its layers would one by one (T5X)."""
  stacked = {'wi': jax.random.normal(jax.random.key(0), (3, 128, 256)) * jnp.array(
      [1.0, 10.0, 0.1])[:, None, None]}
  ours, state = _steps(optimizers.adafactor(1e-2, param_axes={'wi': P('layers', 'embed', 'mlp')}),
                       stacked)
  assert state.v_row['wi'].shape == (3, 128, 1) and state.v_col['wi'].shape == (3, 1, 256)
  for layer in range(3):
    one = {'wi': stacked['wi'][layer]}
    grads_of_layer = lambda p, step: {'wi': _grads(stacked, step)['wi'][layer]}
    tx = optimizers.adafactor(1e-2, param_axes={'wi': P('embed', 'mlp')})
    st = tx.init(one)
    params = one
    for step in range(4):
      upd, st = tx.update(grads_of_layer(params, step), st, params)
      params = optax.apply_updates(params, upd)
      np.testing.assert_allclose(ours[step]['wi'][layer], upd['wi'], rtol=2e-5, atol=1e-7)


def test_the_size_floor_applies_to_matrices_only_as_in_t5x():
  """T5X factors a 3-D kernel or a scanned parameter by its names at any size, and takes
  optax's rule (two largest dimensions, both >= 128) for every matrix, names or not."""
  plan = lambda shape, *names: adafactor.factoring(shape, names)
  assert plan((64, 2, 32), 'embed', 'heads', 'kv') == adafactor.Factoring((0,), (1, 2), (0, 1, 2))
  assert plan((3, 64, 96), 'layers', 'embed', 'mlp') == adafactor.Factoring((1,), (2,), (1, 2))
  assert plan((64, 96), 'embed', 'mlp') == adafactor.Factoring((), (), (0, 1))  # 64 < 128
  # A matrix ignores its names: optax's rule, here the factoring its names forbid.
  assert plan((256, 300), 'heads', 'relpos_buckets') == adafactor.Factoring((0,), (1,), (0, 1))
  assert plan((3, 64), 'layers', 'embed') == adafactor.Factoring((), (), (1,))
  with pytest.raises(ValueError, match=r"incomplete Adafactor factor rule.*'embed', 'heads', "
                                       r"'relpos_buckets'"):
    plan((64, 2, 32), 'embed', 'heads', 'relpos_buckets')


def test_update_with_other_axes_than_init_is_refused():
  kernel = {'query': jnp.ones((256, 4, 64))}
  state = optimizers.adafactor(1e-2, param_axes={'query': P('embed', 'heads', 'kv')}).init(kernel)
  unnamed = optimizers.adafactor(1e-2, param_axes={'query': None})  # optax's rule: unfactored
  with pytest.raises(ValueError, match=r"parameter 'query' was built with another factoring"):
    unnamed.update(kernel, state, kernel)


def test_a_parameter_without_logical_axes_is_refused_not_factored_another_way():
  kernel = {'query': jnp.ones((256, 4, 64)), 'scale': jnp.ones((256,))}
  with pytest.raises(TypeError, match='param_axes'):
    optimizers.adafactor(1e-2)
  with pytest.raises(TypeError, match='param_axes'):
    optimizers.create_optimizer(optimizers.adafactor, 1e-2)
  tx = optimizers.adafactor(1e-2, param_axes={'scale': P('embed')})
  with pytest.raises(ValueError, match=r"no logical axes for parameter 'query'"):
    tx.init(kernel)


def _t5_1_1_small():
  """T5 1.1 small's network (crosstask/gin/t5_1_1/small.gin)."""
  cfg = config_lib.TransformerConfig(
      vocab_size=32128, d_model=512, d_ff=1024, num_heads=6, d_kv=64, num_encoder_layers=8,
      num_decoder_layers=8, activations=('gelu', 'linear'), logits_via_embedding=False)
  vocab = seqio.ByteVocabulary()
  return model_lib.EncoderDecoderModel(network.Transformer(cfg), vocab, vocab)


def _bytes(tree) -> int:
  return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree))


def test_optimizer_state_of_t5_small_drops_to_the_factored_statistics():
  model = _t5_1_1_small()
  shapes = {'encoder_input_tokens': (1, 8), 'decoder_input_tokens': (1, 8)}
  boxed = jax.eval_shape(lambda: model.get_initial_variables(jax.random.key(0), shapes))['params']
  params, axes = nn.unbox(boxed), nn.get_partition_spec(boxed)
  ours = jax.eval_shape(optimizers.adafactor(1e-3, param_axes=axes).init, params)
  theirs = jax.eval_shape(optax.adafactor(1e-3).init, params)
  param_bytes, ours_b, theirs_b = _bytes(params), _bytes(ours), _bytes(theirs)
  print(f'T5 1.1 small: params {param_bytes / 2**20:.1f} MiB, optimizer state: optax '
        f'{theirs_b / 2**20:.2f} MiB, by logical axes {ours_b / 2**20:.2f} MiB')
  # Every attention kernel [512, 6, 64] is unfactored in optax: 4 per encoder layer,
  # 8 per decoder layer, each as large as the kernel.
  attention = (4 * 8 + 8 * 8) * 512 * 6 * 64 * 4
  assert theirs_b > attention
  assert ours_b < 0.01 * param_bytes
  assert ours_b < 0.02 * theirs_b
  for leaf in jax.tree.leaves(ours.v):  # What stays unfactored is small (norms, rel. bias).
    assert leaf.size <= 6 * 32 or leaf.ndim == 1


def test_a_state_built_outside_the_trainer_from_explicit_axes_restores_into_it(tmp_path):
  """`tx.init` anywhere gives the Trainer's state: nothing reaches the optimizer but its
  arguments, so the state a caller builds restores into `Trainer.abstract_state()`."""
  from crosstask.runtime.config import run as run_lib
  from crosstask.runtime.sharding import partitioning
  from crosstask.runtime.state import checkpoints
  from crosstask.runtime.state import trainer as trainer_lib
  cfg = config_lib.TransformerConfig(
      vocab_size=264, d_model=128, d_ff=160, num_heads=4, d_kv=32, num_encoder_layers=1,
      num_decoder_layers=1, activations=('gelu', 'linear'), dtype='float32')
  vocab = seqio.ByteVocabulary()
  model = model_lib.EncoderDecoderModel(network.Transformer(cfg), vocab, vocab)
  run = run_lib.resolve(model, partitioning.Partitioner(), batch_size=8,
                        lengths={'inputs': 16, 'targets': 16})
  tx, sched = optimizers.create_optimizer(optimizers.adafactor, 1e-3, param_axes=run.param_axes,
                                          grad_clip_norm=1.0)
  shapes = run.input_shapes
  params = numpy_params.random_params(model.module,
                                      np.ones(shapes['encoder_input_tokens'], np.int32),
                                      np.ones(shapes['decoder_input_tokens'], np.int32))
  outside = {'step': jnp.zeros((), jnp.int32), 'params': params, 'opt_state': tx.init(params)}
  # The attention kernels [128 embed, 4 heads, 32 kv] are factored by T5X's rules (embed
  # rows, heads x kv = 128 columns); optax's two-largest-dimensions rule leaves them whole.
  query = outside['opt_state'][1].v_row['encoder']['layers_0']['attention']['query']
  assert query.shape == (128, 1, 1)

  tx2, _ = optimizers.create_optimizer(optimizers.adafactor, 1e-3, param_axes=run.param_axes,
                                       grad_clip_norm=1.0)
  trainer = trainer_lib.Trainer(run, tx2, sched)
  mgr = checkpoints.manager(str(tmp_path))
  checkpoints.save(mgr, 0, outside, batches_consumed=0)
  mgr.wait_until_finished()
  restored, _ = checkpoints.restore(mgr, 0, trainer.abstract_state())
  mgr.close()
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(restored), jax.device_get(outside))
