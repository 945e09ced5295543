"""GPU: training and decoding of LongLM and T5 1.1 on one GPU, crosstask vs HF PyTorch.

    python benchmarks/gpu.py                                   # the default rows below
    python benchmarks/gpu.py --rows train:longlm_large:cudnn:none:8 hf-train:longlm_large:8:adamw
    python benchmarks/gpu.py --platform cpu --rows check train:tiny:xla:none:2  # smoke, no GPU

Every row runs in its own process (harness.run_child_lines), one after another, so a
row owns the device and an OOM or a crash costs that row only: it is recorded with its
status and the reason. `--share_processes` (the CPU smoke run: no device memory to give
back) runs the rows of one framework and XLA flags in one process instead. A row's
`wall_s` is its own time in its process, start-up excluded.

A row is KIND:POSITIONAL[:OPTION...] (gpu_spec.py parses it):

  check                                 cuDNN attention vs XLA attention on the GPU: T5's
                                        relative bias with padding, packing and causal
                                        masks at once, values and gradients, bfloat16
                                        (CPU: the XLA version of the same call)
  train:MODEL:ATTENTION:REMAT:BATCH     crosstask's runtime Trainer step: bf16 compute,
                                        f32 parameters, packed rows (2-4 examples a row)
      options: adafactor (T5X's, the default) | adamw (optax); FLAGS; scan
  hf-train:MODEL:BATCH                  transformers' T5ForConditionalGeneration, bf16
                                        autocast, SDPA, the same tokens unpacked
      options: adafactor (transformers', the default) | adamw (torch, fused on CUDA);
               ckpt (gradient checkpointing); compile (torch.compile)
  decode:MODEL:BEAMS:BATCH              the model's two decoding programs (encode; a
                                        while_loop over the cache)      options: FLAGS; scan
  hf-decode:MODEL:BEAMS:BATCH           `generate`    options: static (default) | dynamic;
                                        compile (transformers' compiled forward)
  infer:MODEL:BATCH, hf-infer:MODEL:BATCH   the eval-only job end to end (gpu_infer.py)

FLAGS names an entry of gpu_spec.XLA_FLAG_SETS, passed to the row's process in XLA_FLAGS;
`scan` makes each layer stack one nn.scan (compiles in a fraction of the unrolled time).
Warm-up (compile and 2 calls) is excluded and each timed call ends with the device
synchronised. Weights are random (seeded): speed does not depend on their values.

Ratios: a crosstask row's `ratio_vs_hf` is against HF's fastest row that ran for the
same model (training: any batch and setting that fits; decoding and infer: the same
batch and beams, any cache and compilation), and `hf_row` / `hf_setting` name it.

MFU = model FLOPs per step / step time / the GPU's dense bf16 peak (crosstask/runtime/
topology.py). Model FLOPs (benchmarks/flops.py) count every matmul of a teacher-forced
forward pass, times 3 for training; remat's recomputation is not counted, so remat
lowers MFU. Decoding reports generated tokens per second (batch x beams x new tokens)
and `roofline_ratio`, its step time over the HBM roofline's (roofline.py).
"""

import argparse
import datetime
import json
import os
import pathlib
import sys
import time
import traceback
from typing import Any

import flops
import gpu_spec
import harness
import roofline
from gpu_workload import Lengths

sys.path.insert(0, str(harness.ROOT))

DEFAULT_ROWS = [
    'check',
    'train:longlm_large:cudnn:none:16:scan', 'train:longlm_large:xla:none:16:scan',
    'train:longlm_large:cudnn:dots:32:scan', 'train:longlm_large:cudnn:dots:64:scan',
    'train:longlm_large:cudnn:dots_attention:64:scan',
    'train:longlm_large:cudnn:dots_attention:64:scan:adamw',
    'hf-train:longlm_large:16', 'hf-train:longlm_large:16:adamw',
    'hf-train:longlm_large:64:ckpt', 'hf-train:longlm_large:64:adamw:ckpt',
    'hf-train:longlm_large:16:adamw:compile',
    'train:t5_1_1_base:cudnn:dots_attention:64:scan', 'hf-train:t5_1_1_base:32:adamw',
    'train:t5_1_1_large:cudnn:dots_attention:32:scan', 'hf-train:t5_1_1_large:16:adamw',
    'decode:longlm_large:1:32:scan', 'hf-decode:longlm_large:1:32',
    'hf-decode:longlm_large:1:32:compile', 'hf-decode:longlm_large:1:32:dynamic',
    'decode:longlm_large:4:32:scan', 'hf-decode:longlm_large:4:32',
    'decode:longlm_large:1:128:scan', 'hf-decode:longlm_large:1:128',
    'hf-decode:longlm_large:1:128:compile',
    'infer:longlm_large:32:scan', 'hf-infer:longlm_large:32',
]


def peak_flops(device_kind: str) -> float | None:
  """Dense bf16 peak of the device, from the runtime's one chip table."""
  from crosstask.runtime.sharding import topology
  chip = topology.chip_for_device_kind(device_kind)
  return chip.peak_bf16_flops if chip else None


def hbm_bandwidth(device_kind: str) -> float | None:
  """HBM bytes a second of the device, from the same table."""
  from crosstask.runtime.sharding import topology
  chip = topology.chip_for_device_kind(device_kind)
  return chip.hbm_bytes_per_s if chip else None


def run_row(row: gpu_spec.Row, lengths: Lengths, steps: int, platform: str) -> dict:
  """One row in this process: its raw measurement."""
  import gpu_crosstask
  import gpu_hf
  device = 'cuda' if platform == 'gpu' else 'cpu'
  if row.kind == 'check':
    return gpu_crosstask.row_check(lengths)
  if row.kind == 'train':
    return gpu_crosstask.row_train(row, lengths, steps)
  if row.kind == 'hf-train':
    return gpu_hf.row_hf_train(row, lengths, steps, device)
  if row.kind == 'decode':
    return gpu_crosstask.row_decode(row, lengths, steps)
  if row.kind == 'hf-decode':
    return gpu_hf.row_hf_decode(row, lengths, steps, device)
  import gpu_infer  # the eval-only job: the data and vocabulary it reads
  if row.kind == 'infer':
    return gpu_infer.row_infer(row, lengths, steps)
  return gpu_infer.row_hf_infer(row, lengths, steps, device)


def describe(row: gpu_spec.Row, raw: dict, lengths: Lengths) -> dict:
  """The JSON row: its settings, status, speed, MFU and memory."""
  out: dict[str, Any] = {'row': row.text, 'kind': row.kind, 'framework': row.framework,
                         'settings': row.settings()}
  if 'error' in raw:
    return {**out, 'status': raw.get('status', 'failed'), 'reason': raw['error']}
  out['status'] = 'ok'
  if row.kind == 'check':
    return {**out, **raw}
  from gpu_crosstask import model_config
  cfg = model_config(row.model)
  summ = harness.summary(raw['times'], 1.0)
  out.update(model=row.model, batch=row.batch, step_s=summ['median_s'],
             step_s_min=summ['min_s'], step_s_max=summ['max_s'], reps=summ['reps'],
             **{k: v for k, v in raw.items() if k != 'times'})
  peak = peak_flops(raw.get('device') or '')
  if row.work == 'train':
    out.update(lengths=f'{lengths.inputs}/{lengths.targets}', packed=row.kind == 'train')
    model_flops = flops.train_step(cfg, row.batch, lengths.inputs, lengths.targets)
    out['tokens_per_s'] = row.batch * (lengths.inputs + lengths.targets) / summ['median_s']
  elif row.work == 'decode':
    out.update(beams=row.beams, lengths=f'{lengths.inputs}->{lengths.new_tokens}')
    model_flops = flops.decode(cfg, row.batch, lengths.inputs, lengths.new_tokens, row.beams)
    out['tokens_per_s'] = row.batch * row.beams * lengths.new_tokens / summ['median_s']
    out.update(roofline.decode_roofline(
        cfg, row.batch, lengths.inputs, lengths.new_tokens, row.beams,
        shared_cross=row.framework == 'crosstask',
        hbm_bytes_per_s=hbm_bandwidth(raw.get('device') or ''), measured_s=summ['median_s']))
  else:  # infer: the job's examples per second
    out['examples_per_s'] = raw['examples'] / summ['median_s']
    return out
  out['model_tflop'] = model_flops / 1e12
  out['mfu'] = model_flops / summ['median_s'] / peak if peak else None
  if out.get('predicted_step_s'):  # crosstask.compile's prediction, calibrated here
    out['measured_over_predicted'] = summ['median_s'] / out['predicted_step_s']
  return out


def _speed(row: dict) -> float | None:
  return row.get('tokens_per_s') or row.get('examples_per_s')


def _same_work(row: dict, hf: dict) -> bool:
  """Whether HF's row did the work crosstask's did: the same model; for decoding and
  the job also the same batch and beams (training compares tokens/s at any batch)."""
  if hf['framework'] != 'hf' or hf['kind'] != 'hf-' + row['kind'] or hf['status'] != 'ok':
    return False
  if hf.get('model') != row.get('model'):
    return False
  return row['kind'] == 'train' or (hf.get('batch'), hf.get('beams')) == (
      row.get('batch'), row.get('beams'))


def add_ratios(rows: list[dict]) -> None:
  """ratio_vs_hf: crosstask's speed over HF's fastest row of the same work, named."""
  for row in rows:
    if row['framework'] != 'crosstask' or not _speed(row):
      continue
    twins = [r for r in rows if _same_work(row, r) and _speed(r)]
    if twins:
      best = max(twins, key=_speed)
      row.update(ratio_vs_hf=_speed(row) / _speed(best), hf_row=best['row'],
                 hf_setting=gpu_spec.parse(best['row']).hf_setting())


def child_env(row: gpu_spec.Row, platform: str) -> dict[str, str]:
  env = harness.thread_env(harness.default_threads())
  env.setdefault('XLA_PYTHON_CLIENT_MEM_FRACTION', '0.92')
  if platform == 'cpu':
    env['JAX_PLATFORMS'] = 'cpu'
  env['XLA_FLAGS'] = (env.get('XLA_FLAGS', '') + ' ' + row.xla_flags).strip()
  return env


def not_run(row: gpu_spec.Row, reason: str) -> dict:
  return {'row': row.text, 'kind': row.kind, 'framework': row.framework,
          'settings': row.settings(), 'status': 'not_run', 'reason': reason}


def measure(rows: list[gpu_spec.Row], args, timeout_s: float) -> list[dict]:
  """The rows run one after another in a process of their own, each described with its
  date, its wall time in that process and the load; rows the process did not finish
  (a crash, the time limit) carry its error."""
  cmd = [sys.executable, __file__, *(f'--child={row.text}' for row in rows),
         f'--steps={args.steps}', f'--platform={args.platform}', f'--lengths={args.lengths}',
         f'--new_tokens={args.new_tokens}']
  date, load, start = _now(), list(os.getloadavg()), time.perf_counter()
  done, error = harness.run_child_lines(cmd, child_env(rows[0], args.platform), timeout_s)
  lengths = Lengths.parse(args.lengths, args.new_tokens)
  out = []
  for i, row in enumerate(rows):
    if i < len(done):
      raw, when = done[i]['raw'], done[i]
    else:
      raw = error or {'error': 'its process printed no result for it', 'status': 'failed'}
      if i > len(done):  # the process ended on an earlier row
        raw = {'error': f'not run: its process ended on {rows[len(done)].text}',
               'status': 'not_run'}
      when = dict(date=date, wall_s=time.perf_counter() - start,
                  load_1_5_15min_at_start=load, load_1_5_15min_at_end=list(os.getloadavg()))
    out.append({**describe(row, raw, lengths),
                **{k: when[k] for k in ('date', 'wall_s', 'load_1_5_15min_at_start',
                                        'load_1_5_15min_at_end')}})
  return out


def run_rows(rows: list[gpu_spec.Row], lengths: Lengths, steps: int, platform: str) -> None:
  """The child: each row measured in turn, its raw result, date, wall time and load
  printed as one JSON line as soon as it is done."""
  for row in rows:
    date, load, start = _now(), list(os.getloadavg()), time.perf_counter()
    try:
      raw = run_row(row, lengths, steps, platform)
    except Exception as e:  # pylint: disable=broad-except  # the next row still runs
      traceback.print_exc()
      raw = {'error': f'{type(e).__name__}: {e}'[-600:], 'status': 'failed'}
    print(json.dumps({'row': row.text, 'raw': raw, 'date': date,
                      'wall_s': time.perf_counter() - start, 'load_1_5_15min_at_start': load,
                      'load_1_5_15min_at_end': list(os.getloadavg())}), flush=True)


def _now() -> str:
  return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')


def requested(texts: list[str]) -> list[gpu_spec.Row]:
  """The rows `--rows` names, each once, in the order first named: the session script's
  CPU sizes make some of its GPU rows the same row, and one row measured twice would
  write two entries of one name to gpu.json."""
  first: dict[str, gpu_spec.Row] = {}
  for text in texts:
    first.setdefault(text, gpu_spec.parse(text))
  return list(first.values())


def process_groups(specs: list[gpu_spec.Row], share: bool) -> list[list[gpu_spec.Row]]:
  """The rows each process runs: one row each, or (`share`) every row of one framework
  and XLA flags, in the order of each group's first row."""
  if not share:
    return [[row] for row in specs]
  groups: dict[tuple[str, str], list[gpu_spec.Row]] = {}
  for row in specs:
    groups.setdefault((row.framework, row.xla_flags), []).append(row)
  return list(groups.values())


def print_table(rows: list[dict]) -> None:
  table = [(r['row'], _speed(r), r.get('step_s'),
            f"{100 * r['mfu']:.1f}%" if r.get('mfu') else '-', r.get('peak_gib'),
            r.get('ratio_vs_hf'), r.get('roofline_ratio'),
            r['status'] if r['status'] != 'ok' else r.get('ok', '')) for r in rows]
  print(harness.table(table, ['row', 'tokens|examples/s', 'step s', 'MFU', 'peak GiB', 'x HF',
                              'x roofline', 'note']))


def parse_args(argv):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--rows', nargs='+', default=DEFAULT_ROWS)
  parser.add_argument('--steps', type=int, default=10, help='timed calls per row')
  parser.add_argument('--platform', choices=['gpu', 'cpu'], default='gpu',
                      help='cpu: a smoke run without a GPU (no MFU)')
  parser.add_argument('--timeout_s', type=int, default=900, help='per row')
  parser.add_argument('--lengths', default='512/512',
                      help='INPUTS/TARGETS tokens of the training rows and decoding inputs')
  parser.add_argument('--new_tokens', type=int, default=128, help='decoded per row')
  parser.add_argument('--deadline_s', type=float, default=None,
                      help='start no row after this many seconds (rows left: not_run)')
  parser.add_argument('--out', default=None, help='JSON path (default benchmarks/results/'
                      'gpu.json; a cpu run writes only when given)')
  parser.add_argument('--share_processes', action='store_true',
                      help='rows of one framework and XLA flags share a process (a CPU '
                      'smoke run: no device memory to give back between rows)')
  parser.add_argument('--child', action='append', help=argparse.SUPPRESS)
  return parser.parse_args(argv)


def main(argv=None) -> int:
  args = parse_args(argv)
  lengths = Lengths.parse(args.lengths, args.new_tokens)
  if args.child:  # the rows of one process; a JSON line after each
    run_rows([gpu_spec.parse(text) for text in args.child], lengths, args.steps, args.platform)
    return 0
  try:
    specs = requested(args.rows)
  except ValueError as e:
    raise SystemExit(f'--rows: {e}') from None
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
  order = [row.text for row in specs]
  start_load = os.getloadavg()
  began = time.perf_counter()

  def save():  # after every process, so a lease that ends mid-run keeps the rows done
    rows.sort(key=lambda r: order.index(r['row']))  # in the order asked, whatever the groups
    if args.platform == 'gpu' or args.out:
      harness.write('gpu', {'gpu': machine, 'peak_bf16_flops': peak_flops(machine),
                            'lengths': vars(lengths), 'rows': rows},
                    harness.default_threads(), start_load, str(out))
  for group in process_groups(specs, args.share_processes):
    spent = time.perf_counter() - began
    if args.deadline_s and spent > args.deadline_s:
      rows += [not_run(row, f'the run passed --deadline_s={args.deadline_s:.0f} '
                            f'before this row ({spent:.0f} s)') for row in group]
      continue
    timeout = args.timeout_s * len(group)
    if args.deadline_s:  # a process may run 60 s past the deadline, no more
      timeout = max(30, min(timeout, args.deadline_s + 60 - spent))
    done = measure(group, args, timeout)
    rows += done
    add_ratios(rows)
    for row in done:
      print(json.dumps(row), flush=True)
    save()
  save()
  print_table(rows)
  return 0


if __name__ == '__main__':
  sys.exit(main())
