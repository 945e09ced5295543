"""crosstask's side of gpu.py: the attention check, the Trainer's step, the decoding programs.

Each function runs one row in the calling process (gpu.py gives every row its own)
and returns its raw measurement; gpu.py turns that into the JSON row.
"""

import dataclasses
import time
from typing import Any

import gpu_spec
import gpu_workload
import harness
import side_worker
from gpu_workload import Lengths


def model_config(model: str, **overrides: Any):
  """The model's gin config with bf16 compute, no dropout and `overrides` bound."""
  import sys
  sys.path.insert(0, str(harness.ROOT))
  from crosstask.runtime.config import model_gin
  bindings = ["config.TransformerConfig.dtype = 'bfloat16'",
              'config.TransformerConfig.dropout_rate = 0.0']
  bindings += [f'config.TransformerConfig.{k} = {v!r}' for k, v in overrides.items()]
  return model_gin.config_from_gin(gpu_spec.MODELS[model], bindings)


def jax_peak_gib() -> float | None:
  import jax
  stats = jax.devices()[0].memory_stats() or {}
  peak = stats.get('peak_bytes_in_use')
  return peak / 2**30 if peak else None


def check_masks(batch: int, length: int, causal: bool):
  """Padding, packing and (for the decoder) causality together: rows of 2-4 packed
  examples, row i ending in i/8 of the length as padding."""
  import jax.numpy as jnp
  import numpy as np
  from crosstask.models import attention
  seg = gpu_workload.packed_batch(batch, length, length, 100)['decoder_segment_ids']
  valid = np.ones((batch, length), bool)
  for i in range(batch):
    valid[i, length - i * length // 8:] = False
  mask = attention.AttentionMask.from_valid(jnp.asarray(valid), jnp.asarray(valid),
                                            jnp.asarray(seg), jnp.asarray(seg), causal=causal)
  return mask, valid


def row_check(lengths: Lengths) -> dict[str, Any]:
  """cuDNN's fused attention, as the mask call and in its ragged layout, against the XLA
  einsum path with T5's relative bias and padding, packing and causal masks at once (CPU:
  the XLA version of the mask call)."""
  import jax
  import jax.numpy as jnp
  import numpy as np
  on_gpu = jax.default_backend() == 'gpu'
  implementations = ('cudnn', 'cudnn_segments') if on_gpu else ('dot_product',)
  b, s, h, d = 4, lengths.inputs, 16, 64
  rng = np.random.default_rng(0)
  q, k, v = (jnp.asarray(rng.normal(size=(b, s, h, d)), jnp.bfloat16) for _ in range(3))
  # T5's bias is relative, a function of the key's distance from the query (one table
  # entry per head and distance): the ragged layout may read it per segment, where only
  # distances agree with the row's. Gradients are compared on the table.
  table = jnp.asarray(rng.normal(size=(h, 2 * s - 1)), jnp.float32)
  by_implementation: dict[str, dict[str, Any]] = {}
  for fused in implementations:
    try:
      by_implementation[fused] = _check_one(fused, q, k, v, table)
    except Exception as e:  # pylint: disable=broad-except  # recorded; the others still run
      by_implementation[fused] = {'error': f'{type(e).__name__}: {e}'[:600]}
  first = by_implementation[implementations[0]]
  ran = [r['worst_rel_err'] for r in by_implementation.values() if 'worst_rel_err' in r]
  worst = max(ran) if ran else float('inf')
  return {'implementation': implementations[0], 'shape': [b, s, h, d],
          'masks': 'padding+packing(+causal)', 'errors': first.get('errors'),
          'by_implementation': by_implementation, 'worst_rel_err': worst,
          'ok': len(ran) == len(implementations) and worst < 2e-2}


def relative_bias(table):
  """float32 [1, heads, len, len] from a [heads, 2 len - 1] table: bias[h, i, j] =
  table[h, j - i + len - 1], as T5's relative attention bias depends on j - i only."""
  import jax.numpy as jnp
  length = (table.shape[1] + 1) // 2
  distance = jnp.arange(length)[None, :] - jnp.arange(length)[:, None] + length - 1
  return table[:, distance][None]


def _rel_err(a, b) -> float:
  """Largest absolute difference over the reference's largest magnitude."""
  import numpy as np
  a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
  return float(np.abs(a - b).max() / (np.abs(b).max() + 1e-9))


def _check_one(fused: str, q, k, v, table) -> dict[str, Any]:
  """One implementation's output and gradient errors against XLA, both mask kinds."""
  import jax
  import jax.numpy as jnp
  from crosstask.models import attention
  b, s = q.shape[:2]
  results = {}
  for causal in (False, True):
    mask, valid = check_masks(b, s, causal)
    # Padded queries attend to nothing: their outputs are undefined, so compared off.
    keep = jnp.asarray(valid)[:, :, None, None]

    def xla(q, k, v, table, mask=mask):
      logits = jnp.einsum('bqhd,bkhd->bhqk', q, k, preferred_element_type=jnp.float32)
      p = jax.nn.softmax(logits + relative_bias(table) + mask.bias(), axis=-1)
      return jnp.einsum('bhqk,bkhd->bqhd', p.astype(v.dtype), v)

    def impl(q, k, v, table, mask=mask, fused=fused):
      return attention.fused_attention(fused, q, k, v, mask, relative_bias(table))

    def loss(f, keep=keep):
      return lambda *a: jnp.sum(jnp.where(keep, f(*a).astype(jnp.float32), 0.0) ** 2)
    ref, got = (jnp.where(keep, jax.jit(f)(q, k, v, table), 0) for f in (xla, impl))
    gref = jax.jit(jax.grad(loss(xla), argnums=(0, 1, 2, 3)))(q, k, v, table)
    ggot = jax.jit(jax.grad(loss(impl), argnums=(0, 1, 2, 3)))(q, k, v, table)
    results['causal' if causal else 'bidirectional'] = {
        'out_rel_err': _rel_err(got, ref),
        'grad_rel_err': {n: _rel_err(x, y) for n, x, y in zip('qkvb', ggot, gref)}}
  worst = max([r['out_rel_err'] for r in results.values()]
              + [e for r in results.values() for e in r['grad_rel_err'].values()])
  return {'errors': results, 'worst_rel_err': worst}


def optimizer(name: str, run):
  """(tx, schedule): T5X's Adafactor (factored by the run's logical axes) or optax's AdamW,
  constant rate 1e-3."""
  from crosstask.runtime.state import optimizers
  fn = optimizers.adafactor if name == 'adafactor' else optimizers.adamw
  return optimizers.create_optimizer(fn, learning_rate=1e-3, param_axes=run.param_axes)


def row_config(row: gpu_spec.Row, **overrides: Any):
  """The row's model config: its layer scan and layouts, and `overrides`."""
  return model_config(row.model, scan_layers=row.scan, scan_unroll=row.unroll,
                      cross_keys_last=row.cross_keys_last,
                      decode_cross_attention=row.decode_cross_attention,
                      beam_self_cache=row.beam_self_cache,
                      fused_qkv=row.fused_qkv, fused_mlp=row.fused_mlp, **overrides)


def train_workload(row: gpu_spec.Row, lengths: Lengths):
  """(Trainer, packed batch on the host, its Run) of a train row: T5X's loss with z-loss, the
  row's optimizer, one default Partitioner, resolved into a Run as `crosstask.train`
  resolves its own."""
  from crosstask.models.model import EncoderDecoderModel
  from crosstask.models.network import Transformer
  from crosstask.runtime.config import run as run_lib
  from crosstask.runtime.state import trainer as trainer_lib
  cfg = row_config(row, attention=row.attention, remat_policy=row.remat)
  run = run_lib.resolve(EncoderDecoderModel(Transformer(cfg), None, None, z_loss=1e-4),
                        batch_size=row.batch, pack=True,
                        lengths={'inputs': lengths.inputs, 'targets': lengths.targets})
  data = gpu_workload.packed_batch(row.batch, lengths.inputs, lengths.targets, cfg.vocab_size)
  return trainer_lib.Trainer(run, *optimizer(row.optimizer, run)), data, run


def prediction(trainer, run, device_kind: str) -> dict[str, Any]:
  """What `crosstask.compile` predicts for the step this row compiled and ran (model
  FLOPs at the chip's bf16 peak plus HBM bytes at full bandwidth; the larger alone is
  the roofline, `predicted_floor_s`), so each
  train row sets the prediction beside the measured step; none for a chip not in the
  runtime's table (the CPU)."""
  from crosstask.runtime.jobs import aot
  from crosstask.runtime.sharding import topology
  chip = topology.chip_for_device_kind(device_kind)
  if chip is None:
    return {'predicted_step_s': None, 'prediction_note': f'no chip entry for {device_kind!r}'}
  report = aot.report_programs(trainer, run, {'train_step': trainer.compiled_train_step},
                               chip=chip, topology='local')
  return {'predicted_step_s': report.predicted_step_s, 'predicted_mfu': report.predicted_mfu,
          'predicted_floor_s': report.predicted_floor_s, 'predicted_bound': report.predicted_bound,
          'predicted_terms_s': report.predicted_terms_s}


def row_train(row: gpu_spec.Row, lengths: Lengths, steps: int) -> dict[str, Any]:
  import jax
  trainer, data, run = train_workload(row, lengths)
  start = time.perf_counter()
  holder = {'state': trainer.init_state(0)}
  jb = jax.device_put(data)
  key = jax.random.key(0)

  def step():
    holder['state'], metrics = trainer.train_step(holder['state'], jb, key)
    return metrics
  jax.block_until_ready(step())
  compile_s = time.perf_counter() - start
  times = gpu_workload.timed(step, steps, jax.block_until_ready)
  loss = float(step()['loss'])
  device = jax.devices()[0].device_kind
  return {'times': times, 'compile_s': compile_s, 'loss': loss, 'peak_gib': jax_peak_gib(),
          'device': device, **prediction(trainer, run, device)}


def decoding_model(cfg, beams: int):
  """The model as the runtime decodes it: greedy, or HF's beam search (length penalty 1)."""
  from crosstask.models import decoding
  from crosstask.models.model import EncoderDecoderModel
  from crosstask.models.network import Transformer
  from crosstask.runtime.config import platform
  cfg = dataclasses.replace(cfg, decode_cross_attention=platform.decoding_kernel(
      cfg.decode_cross_attention, platform.profile()))  # interpreted in --quick
  vocab = type('Vocab', (), {'eos_id': 1})()
  kwargs = ({} if beams == 1 else {'decode_fn': decoding.beam_search,
                                   'default_decoder_params': {'alpha': 1.0,
                                                              'length_penalty': 'hf'}})
  return EncoderDecoderModel(Transformer(cfg), vocab, vocab, **kwargs)


def random_params(net, lengths: Lengths):
  """Seeded random parameters, initialised on the device."""
  import flax.linen as nn
  import jax
  shapes = {'encoder_input_tokens': (1, lengths.inputs),
            'decoder_input_tokens': (1, lengths.new_tokens)}
  return jax.jit(lambda: nn.unbox(net.get_initial_variables(jax.random.key(0), shapes))
                 )()['params']


def decode_workload(row: gpu_spec.Row, lengths: Lengths):
  """(model, random parameters, input batch on the device) of a decode row."""
  import jax
  import numpy as np
  # Decoding attends one query at a time: no fused kernel.
  cfg = row_config(row, attention='xla')
  net = decoding_model(cfg, row.beams)
  inputs = gpu_workload.decode_inputs(row.batch, lengths.inputs, cfg.vocab_size)
  feats = jax.device_put({'encoder_input_tokens': inputs, 'decoder_input_tokens':
                          np.zeros((row.batch, lengths.new_tokens), np.int32)})
  return net, random_params(net, lengths), feats


def row_decode(row: gpu_spec.Row, lengths: Lengths, steps: int) -> dict[str, Any]:
  import jax
  from crosstask.runtime.config import platform
  net, params, feats = decode_workload(row, lengths)
  start = time.perf_counter()
  fn = side_worker.decoding_fn(net, params, feats, row.beams, platform.profile())
  seqs = fn()  # best decodes on the host [batch, length]
  compile_s = time.perf_counter() - start
  times = gpu_workload.timed(fn, steps, lambda _: None)  # fn's host copy waits
  return {'times': times, 'compile_s': compile_s, 'peak_gib': jax_peak_gib(),
          'generated_tokens': gpu_workload.decoded_positions(seqs, lengths.new_tokens),
          'device': jax.devices()[0].device_kind}
