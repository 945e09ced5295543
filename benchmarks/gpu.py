"""GPU: training and decoding of LongLM and T5 1.1 on one GPU, crosstask vs HF PyTorch.

    python benchmarks/gpu.py                                   # the default rows below
    python benchmarks/gpu.py --rows train:longlm_large:cudnn:none:8 hf-train:longlm_large:8
    python benchmarks/gpu.py --platform cpu --rows check train:tiny:xla:none:2  # smoke, no GPU

Every row runs in its own process, one after another, so a row owns the device and an
OOM or a crash costs that row only (it is recorded with its error). Rows:

  check                                 cuDNN attention vs XLA attention on the GPU: T5's
                                        relative bias and packing masks, values and
                                        gradients, bfloat16 (CPU: the XLA version of the
                                        same call, `dot_product`)
  train:MODEL:ATTENTION:REMAT:BATCH[:FLAGS[:scan]]   crosstask's runtime Trainer step: bf16
                                        compute, f32 parameters, T5X's Adafactor, packed
                                        512/512 rows (2-4 examples a row, segment ids and
                                        positions as the feature converter writes them)
  hf-train:MODEL:BATCH                  transformers' T5ForConditionalGeneration, bf16
                                        autocast, SDPA attention, transformers' Adafactor,
                                        the same tokens unpacked (HF's T5 has no segment masks)
  decode:MODEL:BEAMS:BATCH[:FLAGS[:scan]]   the model's two decoding programs (encode; a
                                        while_loop over the cache), 512 in, 128 out
  (`scan`: the layer stacks as one nn.scan each, which compiles in a fraction of the
  unrolled stack's time; benchmarks/README.md gives both)
  hf-decode:MODEL:BEAMS:BATCH[:CACHE]   `generate`, CACHE 'static' (the default) or
                                        'dynamic'; a crosstask row's ratio
                                        is against its fastest HF twin

FLAGS names an entry of XLA_FLAG_SETS, passed to that row's process in XLA_FLAGS.
Warm-up (compile and 2 calls) is excluded and each timed call ends with the device
synchronised. Weights are random (seeded): speed does not depend on their values.

MFU = model FLOPs per step / step time / the GPU's dense bf16 peak (H100 SXM and H200:
989 TFLOP/s). Model FLOPs (benchmarks/flops.py) count every matmul of a teacher-forced
forward pass, 2 per multiply-add, times 3 for training (6 N tokens for the weights
plus the attention scores and values); remat's recomputation is not counted, so remat
lowers MFU. Decoding reports generated tokens per second (batch x beams x new tokens).
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import flops
import harness
import side_worker

sys.path.insert(0, str(harness.ROOT))

MODELS = {
    'longlm_large': 'crosstask/gin/longlm/large.gin',
    't5_1_1_base': 'crosstask/gin/t5_1_1/base.gin',
    't5_1_1_large': 'crosstask/gin/t5_1_1/large.gin',
    'tiny': 'crosstask/gin/t5_1_1/tiny.gin',  # smoke runs and tests
}
# XLA GPU options tried per row (a row's FLAGS field); kept in the GPU profile only
# where a row shows they pay.
XLA_FLAG_SETS = {
    'default': '',
    'lhs': '--xla_gpu_enable_latency_hiding_scheduler=true',
    'no_triton_gemm': '--xla_gpu_enable_triton_gemm=false',
    'no_cmd_buffer': '--xla_gpu_enable_command_buffer=',
}
INPUTS, TARGETS, NEW_TOKENS = 512, 512, 128
DEFAULT_ROWS = [
    'check',
    'train:longlm_large:cudnn:none:16:default:scan', 'train:longlm_large:xla:none:16:default:scan',
    'hf-train:longlm_large:16',
    'train:longlm_large:cudnn:dots:32:default:scan', 'train:longlm_large:cudnn:dots:64:default:scan',
    'train:t5_1_1_base:cudnn:dots:64:default:scan', 'hf-train:t5_1_1_base:32',
    'train:t5_1_1_large:cudnn:dots:32:default:scan', 'hf-train:t5_1_1_large:16',
    'decode:longlm_large:1:32:default:scan', 'hf-decode:longlm_large:1:32',
    'decode:longlm_large:4:32:default:scan', 'hf-decode:longlm_large:4:32',
    'decode:longlm_large:1:128:default:scan', 'hf-decode:longlm_large:1:128',
    'decode:longlm_large:4:128:default:scan', 'hf-decode:longlm_large:4:128',
]


def peak_flops(device_kind: str) -> float | None:
  """Dense bf16 peak of the device, from the runtime's one chip table."""
  from crosstask.runtime import topology
  chip = topology.chip_for_device_kind(device_kind)
  return chip.peak_bf16_flops if chip else None


def model_config(model: str, **overrides: Any):
  from crosstask.runtime import model_gin
  bindings = ["config.TransformerConfig.dtype = 'bfloat16'",
              'config.TransformerConfig.dropout_rate = 0.0']
  bindings += [f'config.TransformerConfig.{k} = {v!r}' for k, v in overrides.items()]
  return model_gin.config_from_gin(MODELS[model], bindings)


def packed_batch(batch: int, inputs: int, targets: int, vocab: int, seed: int = 0
                 ) -> dict[str, Any]:
  """Rows filled to the last token by 2-4 examples each, as the packing converter lays
  them out: segment ids from 1, positions restarting per example, decoder inputs the
  targets shifted right within each example (0 first)."""
  import numpy as np
  rng = np.random.default_rng(seed)
  out = {k: np.zeros((batch, n), np.int32) for k, n in (
      ('encoder_input_tokens', inputs), ('encoder_segment_ids', inputs),
      ('encoder_positions', inputs), ('decoder_input_tokens', targets),
      ('decoder_target_tokens', targets), ('decoder_segment_ids', targets),
      ('decoder_positions', targets))}
  for row in range(batch):
    k = int(rng.integers(2, 5))
    for name, length in (('encoder', inputs), ('decoder', targets)):
      cuts = np.sort(rng.choice(np.arange(1, length), k - 1, replace=False))
      starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [length]])
      for seg, (a, b) in enumerate(zip(starts, ends), start=1):
        out[f'{name}_segment_ids'][row, a:b] = seg
        out[f'{name}_positions'][row, a:b] = np.arange(b - a)
    out['encoder_input_tokens'][row] = rng.integers(2, vocab, inputs)
    tgt = rng.integers(2, vocab, targets)
    out['decoder_target_tokens'][row] = tgt
    dec = np.concatenate([[0], tgt[:-1]])
    dec[out['decoder_positions'][row] == 0] = 0
    out['decoder_input_tokens'][row] = dec
  out['decoder_loss_weights'] = np.ones((batch, targets), np.float32)
  return out


def _timed(fn, steps: int, sync) -> list[float]:
  for _ in range(2):
    sync(fn())
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    sync(fn())
    times.append(time.perf_counter() - start)
  return times


def _jax_peak_gib() -> float | None:
  import jax
  stats = jax.devices()[0].memory_stats() or {}
  peak = stats.get('peak_bytes_in_use')
  return peak / 2**30 if peak else None


def row_check() -> dict[str, Any]:
  """cuDNN's fused attention against the XLA einsum path, with T5's bias and packing."""
  import jax
  import jax.numpy as jnp
  import numpy as np
  from crosstask.models import attention
  on_gpu = jax.default_backend() == 'gpu'
  fused = 'cudnn' if on_gpu else 'dot_product'
  b, s, h, d = 4, INPUTS, 16, 64
  rng = np.random.default_rng(0)
  q, k, v = (jnp.asarray(rng.normal(size=(b, s, h, d)), jnp.bfloat16) for _ in range(3))
  bias = jnp.asarray(rng.normal(size=(1, h, s, s)), jnp.float32)
  seg = packed_batch(b, s, s, 100)['decoder_segment_ids']
  results = {}
  for causal in (False, True):
    mask = attention.AttentionMask.from_valid(jnp.ones((b, s), bool), jnp.ones((b, s), bool),
                                              jnp.asarray(seg), jnp.asarray(seg), causal=causal)

    def xla(q, k, v, bias):
      logits = jnp.einsum('bqhd,bkhd->bhqk', q, k, preferred_element_type=jnp.float32)
      p = jax.nn.softmax(logits + bias + mask.bias(), axis=-1).astype(v.dtype)
      return jnp.einsum('bhqk,bkhd->bqhd', p, v)

    def impl(q, k, v, bias):
      return attention.fused_attention(fused, q, k, v, mask, bias)

    def loss(f):
      return lambda *a: jnp.sum(f(*a).astype(jnp.float32) ** 2)
    ref, got = jax.jit(xla)(q, k, v, bias), jax.jit(impl)(q, k, v, bias)
    gref = jax.jit(jax.grad(loss(xla), argnums=(0, 1, 2, 3)))(q, k, v, bias)
    ggot = jax.jit(jax.grad(loss(impl), argnums=(0, 1, 2, 3)))(q, k, v, bias)

    def rel(a, b):
      a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
      return float(np.abs(a - b).max() / (np.abs(b).max() + 1e-9))
    results['causal' if causal else 'bidirectional'] = {
        'out_rel_err': rel(got, ref),
        'grad_rel_err': {n: rel(x, y) for n, x, y in zip('qkvb', ggot, gref)}}
  worst = max([r['out_rel_err'] for r in results.values()]
              + [e for r in results.values() for e in r['grad_rel_err'].values()])
  return {'implementation': fused, 'shape': [b, s, h, d], 'errors': results,
          'worst_rel_err': worst, 'ok': worst < 2e-2}


def row_train(model: str, attention: str, remat: str, batch: int, steps: int,
              scan: bool = False) -> dict:
  import jax
  from crosstask.models.model import EncoderDecoderModel
  from crosstask.models.network import Transformer
  from crosstask.runtime import optimizers, partitioning
  from crosstask.runtime import trainer as trainer_lib
  cfg = model_config(model, attention=attention, remat_policy=remat, scan_layers=scan)
  net = EncoderDecoderModel(Transformer(cfg), None, None, z_loss=1e-4)
  data = packed_batch(batch, INPUTS, TARGETS, cfg.vocab_size)
  shapes = {k: v.shape for k, v in data.items()}
  tx, schedule = optimizers.create_optimizer(
      optimizers.adafactor, learning_rate=1e-3,
      param_axes=trainer_lib.param_logical_axes(net, shapes))
  trainer = trainer_lib.Trainer(net, partitioning.Partitioner(), tx, schedule, shapes)
  start = time.perf_counter()
  state = trainer.init_state(0)
  jb = jax.device_put(data)
  key = jax.random.key(0)
  holder = {'state': state}

  def step():
    holder['state'], metrics = trainer.train_step(holder['state'], jb, key)
    return metrics
  jax.block_until_ready(step())
  compile_s = time.perf_counter() - start
  times = _timed(step, steps, jax.block_until_ready)
  loss = float(step()['loss'])
  return {'times': times, 'compile_s': compile_s, 'loss': loss, 'peak_gib': _jax_peak_gib(),
          'device': jax.devices()[0].device_kind}


def _hf_model(model: str, device: str):
  import torch
  import transformers
  from crosstask.models import hf_import
  cfg = model_config(model)
  torch.manual_seed(0)
  conf = transformers.T5Config(**hf_import.hf_config_from(cfg))
  with torch.device(device):  # initialised where it runs: a 1B model's CPU init is slow
    try:
      hf = transformers.T5ForConditionalGeneration._from_config(conf, attn_implementation='sdpa')
      impl = 'sdpa'
    except (ValueError, ImportError):
      hf = transformers.T5ForConditionalGeneration(conf)
      impl = 'eager'
  return cfg, hf, impl


def row_hf_train(model: str, batch: int, steps: int, device: str) -> dict:
  import torch
  import transformers
  cfg, hf, impl = _hf_model(model, device)
  hf.train()
  opt = transformers.optimization.Adafactor(hf.parameters(), lr=1e-3, relative_step=False,
                                            scale_parameter=True, warmup_init=False)
  g = torch.Generator().manual_seed(0)
  ids = torch.randint(2, cfg.vocab_size, (batch, INPUTS), generator=g).to(device)
  labels = torch.randint(2, cfg.vocab_size, (batch, TARGETS), generator=g).to(device)
  sync = (lambda _: torch.cuda.synchronize()) if device == 'cuda' else (lambda _: None)

  def step():
    with torch.autocast(device, dtype=torch.bfloat16):
      loss = hf(input_ids=ids, labels=labels).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss
  if device == 'cuda':
    torch.cuda.reset_peak_memory_stats()
  times = _timed(step, steps, sync)
  peak = torch.cuda.max_memory_allocated() / 2**30 if device == 'cuda' else None
  name = torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu'
  return {'times': times, 'loss': float(step()), 'peak_gib': peak, 'device': name,
          'attention': impl}


def _decoded_positions(rows, length: int) -> int:
  """Tokens decoded over all rows: each row up to and including its first EOS (id 1)."""
  total = 0
  for row in rows.tolist():
    total += row.index(1) + 1 if 1 in row else length
  return total


def _decode_inputs(batch: int, vocab: int):
  import numpy as np
  rng = np.random.default_rng(0)
  return rng.integers(2, vocab, (batch, INPUTS)).astype(np.int32)


def row_decode(model: str, beams: int, batch: int, steps: int, scan: bool = False) -> dict:
  import flax.linen as nn
  import jax
  import numpy as np
  from crosstask.models import decoding
  from crosstask.models.model import EncoderDecoderModel
  from crosstask.models.network import Transformer
  from crosstask.runtime import platform
  profile = platform.profile()
  cfg = model_config(model, attention='xla', scan_layers=scan)  # decoding attends one query: no fused kernel
  vocab = type('Vocab', (), {'eos_id': 1})()
  kwargs = ({} if beams == 1 else {'decode_fn': decoding.beam_search,
                                   'default_decoder_params': {'alpha': 1.0,
                                                              'length_penalty': 'hf'}})
  net = EncoderDecoderModel(Transformer(cfg), vocab, vocab, **kwargs)
  inputs = _decode_inputs(batch, cfg.vocab_size)
  shapes = {'encoder_input_tokens': (1, INPUTS), 'decoder_input_tokens': (1, NEW_TOKENS)}
  params = jax.jit(lambda: nn.unbox(net.get_initial_variables(jax.random.key(0), shapes))
                   )()['params']
  feats = jax.device_put({'encoder_input_tokens': inputs,
                          'decoder_input_tokens': np.zeros((batch, NEW_TOKENS), np.int32)})
  start = time.perf_counter()
  fn = side_worker.decoding_fn(net, params, feats, beams, profile)  # as the CPU benchmark
  seqs = fn()  # best decodes on the host [batch, length]
  compile_s = time.perf_counter() - start
  times = _timed(fn, steps, lambda _: None)  # fn's host copy waits for the device
  # Decoding runs until every row has its EOS or fills its length; a random model's
  # argmax may well be the pad id, so count positions up to the first EOS.
  generated = _decoded_positions(seqs, NEW_TOKENS)
  return {'times': times, 'compile_s': compile_s, 'peak_gib': _jax_peak_gib(),
          'generated_tokens': generated, 'device': jax.devices()[0].device_kind}


def row_hf_decode(model: str, beams: int, batch: int, steps: int, device: str,
                  cache_kind: str = 'static') -> dict:
  import copy
  import torch
  import transformers
  cfg, hf, impl = _hf_model(model, device)
  hf = hf.to(torch.bfloat16).eval()  # decoding in bf16 weights, as crosstask's
  ids = torch.from_numpy(_decode_inputs(batch, cfg.vocab_size)).long().to(device)
  sync = (lambda _: torch.cuda.synchronize()) if device == 'cuda' else (lambda _: None)
  # The caches are built here, with the decoder's layer count: generate sizes them by
  # num_layers (the encoder's), which breaks on LongLM-large's 24+32 layers
  # (IndexError in the cache's update, transformers 5.17).
  dec_conf = copy.deepcopy(hf.config)
  dec_conf.num_layers = dec_conf.num_decoder_layers
  if cache_kind == 'static':
    cache = transformers.EncoderDecoderCache(
        transformers.StaticCache(config=dec_conf, max_cache_len=NEW_TOKENS + 1),
        transformers.StaticCache(config=dec_conf, max_cache_len=INPUTS))
  else:
    cache = None

  def fn():
    past = cache if cache is not None else transformers.EncoderDecoderCache(
        transformers.DynamicCache(config=dec_conf), transformers.DynamicCache(config=dec_conf))
    if cache is not None:
      cache.reset()
    with torch.no_grad():
      return hf.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                         num_beams=beams, max_new_tokens=NEW_TOKENS, length_penalty=1.0,
                         early_stopping=False, eos_token_id=1, pad_token_id=0,
                         decoder_start_token_id=0, past_key_values=past)
  out = fn()
  if device == 'cuda':
    torch.cuda.reset_peak_memory_stats()
  times = _timed(fn, steps, sync)
  return {'times': times, 'peak_gib': (torch.cuda.max_memory_allocated() / 2**30
                                       if device == 'cuda' else None),
          'generated_tokens': _decoded_positions(out[:, 1:].cpu().numpy(), NEW_TOKENS),
          'attention': impl,
          'cache': cache_kind,
          'device': torch.cuda.get_device_name(0) if device == 'cuda' else 'cpu'}


def run_row(spec: str, steps: int, platform: str) -> dict:
  """One row in this process: the measurement, or the error that stopped it."""
  kind, *fields = spec.split(':')
  device = 'cuda' if platform == 'gpu' else 'cpu'
  if kind == 'check':
    return row_check()
  if kind == 'train':
    model, attention, remat, batch = fields[:4]
    return row_train(model, attention, remat, int(batch), steps, fields[5:6] == ['scan'])
  if kind == 'hf-train':
    return row_hf_train(fields[0], int(fields[1]), steps, device)
  if kind == 'decode':
    return row_decode(fields[0], int(fields[1]), int(fields[2]), steps, fields[4:5] == ['scan'])
  if kind == 'hf-decode':
    return row_hf_decode(fields[0], int(fields[1]), int(fields[2]), steps, device,
                         *fields[3:4])
  raise SystemExit(f'unknown row {spec!r}: see the docstring for the row forms')


def describe(spec: str, raw: dict) -> dict:
  """The JSON row: the spec's fields, speed, MFU and memory."""
  kind, *fields = spec.split(':')
  row: dict[str, Any] = {'row': spec, 'kind': kind,
                         'framework': 'hf' if kind.startswith('hf-') else 'crosstask'}
  if kind == 'check' or 'error' in raw:
    return {**row, **raw}
  model = fields[0]
  row['model'] = model
  cfg = model_config(model)
  summ = harness.summary(raw['times'], 1.0)
  row.update(step_s=summ['median_s'], step_s_min=summ['min_s'], step_s_max=summ['max_s'],
             reps=summ['reps'], peak_gib=raw.get('peak_gib'), device=raw.get('device'),
             compile_s=raw.get('compile_s'))
  peak = peak_flops(raw.get('device') or '')
  if kind in ('train', 'hf-train'):
    batch = int(fields[3] if kind == 'train' else fields[1])
    row.update(batch=batch, lengths=f'{INPUTS}/{TARGETS}', loss=raw.get('loss'),
               packed=kind == 'train')
    if kind == 'train':
      row.update(attention=fields[1], remat=fields[2],
                 xla_flags=fields[4] if len(fields) > 4 else 'default',
                 scan_layers=fields[5:6] == ['scan'])
    else:
      row.update(attention='sdpa' if raw.get('attention') == 'sdpa' else raw.get('attention'))
    model_flops = flops.train_step(cfg, batch, INPUTS, TARGETS)
    row['tokens_per_s'] = batch * (INPUTS + TARGETS) / summ['median_s']
  else:
    beams, batch = int(fields[1]), int(fields[2])
    row.update(beams=beams, batch=batch, lengths=f'{INPUTS}->{NEW_TOKENS}',
               generated_tokens=raw.get('generated_tokens'), cache=raw.get('cache'))
    if kind == 'decode':
      row.update(xla_flags=fields[3] if len(fields) > 3 else 'default',
                 scan_layers=fields[4:5] == ['scan'])
    model_flops = flops.decode(cfg, batch, INPUTS, NEW_TOKENS, beams)
    row['tokens_per_s'] = batch * beams * NEW_TOKENS / summ['median_s']
  row['model_tflop'] = model_flops / 1e12
  row['mfu'] = model_flops / summ['median_s'] / peak if peak else None
  return row


def _same_work(row: dict, hf: dict) -> bool:
  """Whether `hf` measured the work of crosstask's `row` (model, batch, beams)."""
  kinds = {'train': 'hf-train', 'decode': 'hf-decode'}
  return (hf['kind'] == kinds.get(row['kind']) and hf.get('model') == row.get('model')
          and hf.get('batch') == row.get('batch') and hf.get('beams') == row.get('beams'))


def add_ratios(rows: list[dict]) -> None:
  """ratio_vs_hf: crosstask tokens/s over its fastest HF twin's."""
  for row in rows:
    if row['framework'] != 'crosstask' or not row.get('tokens_per_s'):
      continue
    twins = [r['tokens_per_s'] for r in rows if r['framework'] == 'hf'
             and r.get('tokens_per_s') and _same_work(row, r)]
    if twins:
      row['ratio_vs_hf'] = row['tokens_per_s'] / max(twins)


def child_env(spec: str, platform: str) -> dict[str, str]:
  env = harness.thread_env(harness.default_threads())
  env.setdefault('XLA_PYTHON_CLIENT_MEM_FRACTION', '0.92')
  if platform == 'cpu':
    env['JAX_PLATFORMS'] = 'cpu'
  kind, *fields = spec.split(':')
  flag_name = (fields[4] if kind == 'train' and len(fields) > 4 else
               fields[3] if kind == 'decode' and len(fields) > 3 else 'default')
  if flag_name not in XLA_FLAG_SETS:
    raise SystemExit(f'{spec!r}: unknown XLA flag set {flag_name!r}; one of {list(XLA_FLAG_SETS)}')
  env['XLA_FLAGS'] = (env.get('XLA_FLAGS', '') + ' ' + XLA_FLAG_SETS[flag_name]).strip()
  return env


def main(argv=None) -> int:
  global INPUTS, TARGETS, NEW_TOKENS  # pylint: disable=global-statement
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rows', nargs='+', default=DEFAULT_ROWS)
  parser.add_argument('--steps', type=int, default=10, help='timed calls per row')
  parser.add_argument('--platform', choices=['gpu', 'cpu'], default='gpu',
                      help='cpu: a smoke run without a GPU (no MFU)')
  parser.add_argument('--timeout_s', type=int, default=900, help='per row')
  parser.add_argument('--lengths', default=f'{INPUTS}/{TARGETS}',
                      help='INPUTS/TARGETS tokens of the training rows and decoding inputs')
  parser.add_argument('--new_tokens', type=int, default=NEW_TOKENS, help='decoded per row')
  parser.add_argument('--deadline_s', type=float, default=None,
                      help='start no row after this many seconds (rows left are listed)')
  parser.add_argument('--out', default=None, help='JSON path (default benchmarks/results/'
                      'gpu.json; a cpu run writes only when given)')
  parser.add_argument('--child', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  INPUTS, TARGETS = (int(n) for n in args.lengths.split('/'))
  NEW_TOKENS = args.new_tokens
  if args.child:  # one row; its JSON on the last stdout line
    print(json.dumps(run_row(args.child, args.steps, args.platform)))
    return 0
  os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'] = 'false'  # the parent never computes
  if args.platform == 'gpu':
    import jax
    gpus = [d for d in jax.devices() if d.platform == 'gpu']
    if not gpus:
      print('gpu.py: no GPU on this machine; nothing to measure.')
      return 0
    machine = gpus[0].device_kind
  else:
    machine = 'cpu'
  out = pathlib.Path(args.out) if args.out else harness.RESULTS / 'gpu.json'
  rows: list[dict] = []
  start_load = os.getloadavg()
  began = time.perf_counter()
  for i, spec in enumerate(args.rows):
    if args.deadline_s and time.perf_counter() - began > args.deadline_s:
      print(f'deadline: not run: {args.rows[i:]}', flush=True)
      break
    env = child_env(spec, args.platform)
    start = time.perf_counter()
    timeout = args.timeout_s
    if args.deadline_s:  # a row may run 60 s past the deadline, no more
      timeout = max(30, min(timeout, args.deadline_s + 60 - (time.perf_counter() - began)))
    try:
      done = subprocess.run([sys.executable, __file__, f'--child={spec}',
                             f'--steps={args.steps}', f'--platform={args.platform}',
                             f'--lengths={args.lengths}', f'--new_tokens={args.new_tokens}'],
                            capture_output=True, text=True, env=env, cwd=str(harness.ROOT),
                            timeout=timeout, check=False)
      lines = done.stdout.strip().splitlines()
      if done.returncode or not lines or not lines[-1].startswith('{'):
        tail = [l for l in (done.stderr or done.stdout).strip().splitlines() if l.strip()][-3:]
        raw = {'error': f'exit {done.returncode}: ' + ' | '.join(tail)[-600:]}
      else:
        raw = json.loads(lines[-1])
    except subprocess.TimeoutExpired:
      raw = {'error': f'passed its time limit ({timeout:.0f} s)'}
    row = describe(spec, raw)
    row['wall_s'] = time.perf_counter() - start
    rows.append(row)
    add_ratios(rows)
    print(json.dumps(row), flush=True)
    if args.platform == 'gpu' or args.out:
      harness.write('gpu', {'gpu': machine, 'peak_bf16_flops': peak_flops(machine),
                            'rows': rows}, harness.default_threads(), start_load, str(out))
  table = [(r['row'], r.get('tokens_per_s'), r.get('step_s'),
            f"{100 * r['mfu']:.1f}%" if r.get('mfu') else '-', r.get('peak_gib'),
            r.get('ratio_vs_hf'), 'error' if 'error' in r else r.get('ok', ''))
           for r in rows]
  print(harness.table(table, ['row', 'tokens/s', 'step s', 'MFU', 'peak GiB', 'x HF', 'note']))
  return 0


if __name__ == '__main__':
  sys.exit(main())
