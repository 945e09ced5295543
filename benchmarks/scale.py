"""The scale table: the largest global batch each model's train step fits on each TPU slice.

    python benchmarks/scale.py --scan                  # the whole table (~1.5 h on 2 cores)
    python benchmarks/scale.py --models t5_1_1_large --topologies v5e-8 --layouts fsdp
    python benchmarks/scale.py --quick                 # smoke run: tiny, one batch, one slice
    python benchmarks/scale.py --models longlm_large --topologies v5e-8 --batch 128 --scan

Method. Every figure comes from compiling the real train step (the runtime's
Trainer and Partitioner, the model's gin file, T5X's Adafactor as
`runs/pretrain.gin` configures it) for the slice with `python -m crosstask.compile`,
on a machine without a TPU (libtpu's compile-only devices). Nothing is run, so
nothing here is a measured speed: the step time is `crosstask.compile`'s prediction
(`compile_report.predict`: the model's FLOPs at bf16 peak, the program's HBM bytes at
full bandwidth, its collective bytes over the interconnect, whichever is longest;
every iteration of a scanned layer loop counted).

For each (model, slice, layout, lengths) the search looks for the largest global batch
on a grid of whole rows per batch shard with at most 3 significant binary digits
(1..8, 10, 12, 14, 16, 20, 24, ...: neighbours <= 25 % apart) that the compile fits in
the chip's HBM (the TPU compiler refuses a program that does not, in seconds). It
starts where fitting rows of the same model predict (--start where none does), then
compiles the grid point that a straight line through the per-chip memory seen so far
(memory is close to linear in rows per chip) puts last below HBM, until the largest
fit and the smallest miss are grid neighbours: typically 2-3 compiles a row. A row
records the largest fit and `miss_batch`, the next grid batch, which did not fit
(None when --max_batch capped the search), or the smallest batch tried when none
fits (`fits: false`). Each compile is its own process, so host memory is given back
between compiles. Attention and remat default to the TPU platform profile's choice
(what 'auto' becomes on a TPU, and in `crosstask.compile` for one), bound explicitly so
each row names them.

Cost: with `--scan` a compile takes 30-100 s on a 2-core machine (a refusal a few
seconds), and the whole table about 1.5-2 hours; the unscanned 24-layer models take
minutes and over 10 GiB of host memory per compile. Rows are merged into
benchmarks/results/scale.json as they finish, so a run can be split
(--models / --topologies) and resumed.
"""

import argparse
import dataclasses
import json
import os
import pathlib
import sys
import tempfile
from typing import Any

import harness

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / 'benchmarks' / 'results' / 'scale.json'
# A smoke run's rows are not the table's: they go to the temporary directory.
QUICK_RESULTS = pathlib.Path(tempfile.gettempdir()) / 'crosstask_scale_quick.json'

MODELS = {
    'longlm_small': 'longlm/small.gin',
    'longlm_base': 'longlm/base.gin',
    'longlm_large': 'longlm/large.gin',
    't5_1_1_large': 't5_1_1/large.gin',
    't5_1_1_xl': 't5_1_1/xl.gin',
    't5_1_1_xxl': 't5_1_1/xxl.gin',
    't5_1_1_tiny': 't5_1_1/tiny.gin',  # for --quick and tests, not in the table
}
TABLE_MODELS = [m for m in MODELS if m != 't5_1_1_tiny']
TOPOLOGIES = ['v5e-8', 'v5e-16', 'v4-16', 'v5p-8']
# OutGen: LOT's title+outline -> story; 1024/1024: the fused-attention comparison.
LENGTHS = {'512/512': (512, 512), 'outgen': (128, 512), '1024/1024': (1024, 1024)}
# Both length sets for LongLM (LOT's OutGen is its long-output task); 512/512 for T5.
DEFAULT_LENGTHS = {m: (['512/512', 'outgen'] if m.startswith('longlm') else ['512/512'])
                   for m in MODELS}


@dataclasses.dataclass
class Options:
  layout: str
  remat: str | None
  attention: str | None
  scan: bool
  num_partitions: int | None
  max_batch: int
  timeout_s: int


def tpu_profile():
  sys.path.insert(0, str(ROOT))
  from crosstask.runtime.config import platform  # pylint: disable=g-import-not-at-top
  return platform.PROFILES['tpu']


def model_bindings(opts: Options) -> list[str]:
  """Gin bindings for the remat / attention / scan options that are set."""
  wanted = {'remat_policy': repr(opts.remat) if opts.remat else None,
            'attention': repr(opts.attention) if opts.attention else None,
            'scan_layers': 'True' if opts.scan else None}
  return [f'config.TransformerConfig.{field}={value}' for field, value in wanted.items()
          if value is not None]


def compile_once(model: str, topology: str, batch: int, lengths: tuple[int, int],
                 opts: Options, bindings: list[str]) -> dict[str, Any]:
  """One `python -m crosstask.compile --json` in its own process; its JSON line."""
  cmd = [sys.executable, '-m', 'crosstask.compile', f'--gin_file={MODELS[model]}',
         '--gin_file=runs/pretrain.gin', f'--topology={topology}', f'--layout={opts.layout}',
         f'--gin.BATCH_SIZE={batch}', '--gin.PACK=False',
         f"--gin.TASK_FEATURE_LENGTHS={{'inputs': {lengths[0]}, 'targets': {lengths[1]}}}",
         '--json'] + [f'--gin.{b}' for b in bindings]
  if opts.num_partitions:
    cmd.append(f'--num_partitions={opts.num_partitions}')
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [str(ROOT)] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]),
             JAX_PLATFORMS='cpu')
  result = harness.run_child(cmd, env, opts.timeout_s)
  if result.get('status') == 'timeout':
    return {'fits': None, 'error': f'compile passed --timeout_s={opts.timeout_s}',
            'global_batch': batch}
  if result.get('status') == 'failed':
    return {'fits': None, 'global_batch': batch, 'error': result['error']}
  return result


def on_grid(rows: int) -> bool:
  """The rows per shard the search tries: at most 3 significant binary digits
  (1..8, 10, 12, 14, 16, 20, 24, 28, 32, 40, ...), so neighbours differ by <= 25 %."""
  drop = max(rows.bit_length() - 3, 0)
  return rows >= 1 and (rows >> drop) << drop == rows


def grid_above(rows: int) -> int:
  rows += 1
  while not on_grid(rows):
    rows += 1
  return rows


def grid_floor(rows: float) -> int:
  """The largest grid point <= rows (1 at least)."""
  r = max(int(rows), 1)
  while not on_grid(r):
    r -= 1
  return r


def total_gib(result: dict[str, Any]) -> float | None:
  """Per-chip memory of a compile, fitting or refused. XLA:TPU's refusal names the HLO
  temporaries it wanted; the state (parameters, optimizer) comes on top of those."""
  gib = result.get('per_chip_gib')
  if result.get('fits') is None or not gib or gib != gib:  # crash, timeout, or NaN
    return None
  if result.get('error'):
    gib += (result.get('params_gib') or 0) + (result.get('opt_state_gib') or 0)
  return gib


def fixed_gib(result: dict[str, Any]) -> float:
  """Memory that does not grow with the batch: parameters, their gradients, optimizer."""
  return 2 * (result.get('params_gib') or 0) + (result.get('opt_state_gib') or 0)


def capacity_gib(hbm_gib: float) -> float:
  # XLA:TPU plans against slightly less than the chip's HBM (15.75 of v5e's 16 GiB).
  return hbm_gib * 0.984


def predict_rows(points: list[tuple[int, float]], fixed: float, capacity: float
                 ) -> float | None:
  """Rows per shard at which per-chip memory reaches `capacity`, on a straight line
  (memory is close to linear in rows per chip): through the two points nearest the
  capacity, or from one point and the batch-independent memory."""
  points = sorted(points, key=lambda p: abs(p[1] - capacity))
  if len(points) >= 2 and points[0][0] != points[1][0]:
    (r1, m1), (r2, m2) = points[:2]
    slope = (m2 - m1) / (r2 - r1)
    if slope > 0:
      return r1 + (capacity - m1) / slope
  if points:
    r1, m1 = points[0]
    slope = (m1 - fixed) / r1 if m1 > fixed else m1 / r1
    return r1 + (capacity - m1) / slope if slope > 0 else None
  return None


def largest_batch(model: str, topology: str, lengths: tuple[int, int], opts: Options,
                  bindings: list[str], shards: int, quick: bool, start_rows: int = 1,
                  compile_fn=None) -> dict[str, Any]:
  """The largest global batch, in rows per batch shard on `on_grid`'s grid, that fits.

  Starts at `start_rows` per shard (a prediction), then compiles the grid point a
  straight-line memory model predicts to be the last that fits, kept strictly between
  the largest fit and the smallest miss so far, until those two are neighbours on the
  grid (or the fit reaches --max_batch). The result carries 'miss_batch' (the next
  grid batch, which did not fit; None when capped) and 'compiles'.
  """
  compile_fn = compile_fn or compile_once
  tried: dict[int, dict[str, Any]] = {}
  points: list[tuple[int, float]] = []
  cap_rows = grid_floor(opts.max_batch / shards)
  low, high = None, None  # rows per shard: largest fitting, smallest failing
  rows = min(max(grid_floor(start_rows), 1), cap_rows)
  fixed, capacity = 0.0, None
  while True:
    result = tried[rows] = compile_fn(model, topology, rows * shards, lengths, opts,
                                      bindings)
    fit = bool(result.get('fits'))
    print(f'  {model} {topology} {opts.layout} {lengths[0]}/{lengths[1]} batch '
          f'{rows * shards} ({rows}/shard): {"fits" if fit else "no"} '
          f'{result.get("per_chip_gib") or float("nan"):.2f} GiB '
          f'{result.get("compile_s") or 0:.0f} s'
          + (f' ({result["error"][:160]})' if result.get('error') else ''), flush=True)
    if fit:
      low = rows
    else:
      high = rows
    gib = total_gib(result)
    if gib is not None:
      points.append((rows, gib))
      fixed = fixed_gib(result)
    if result.get('hbm_gib'):
      capacity = capacity_gib(result['hbm_gib'])
    if quick or (low is not None and (low >= cap_rows or grid_above(low) >= (high or 1e9))):
      break
    if high == 1 or len(tried) >= 10:
      break
    guess = predict_rows(points, fixed, capacity) if capacity and fit is not None else None
    nxt = grid_floor(guess) if guess else (rows * 2 if fit else rows // 2)
    if low is not None:
      nxt = max(nxt, grid_above(low))
    if high is not None:
      nxt = min(nxt, grid_floor(high - 1))
    nxt = min(nxt, cap_rows)
    if nxt in tried:  # the line is no help here: step towards the gap
      nxt = grid_above(low) if low is not None else grid_floor(high - 1)
      if nxt in tried:
        break
    rows = nxt
  best = tried[low if low is not None else min(tried)]
  return {**best, 'miss_batch': high * shards if high is not None and low is not None
          else None, 'compiles': len(tried)}


def prior_rows(model: str, lengths: tuple[int, int], topology: str, layout: str,
               shards: int, earlier: list[dict[str, Any]]) -> int | None:
  """A starting point for the search from fitting rows of the same model with the same
  options: their memory per row per chip (scaled by tokens per row when the lengths
  differ; the state divided over the chips) carried to this slice's HBM."""
  sys.path.insert(0, str(ROOT))
  from crosstask.runtime.sharding import topology as topology_lib  # pylint: disable=g-import-not-at-top
  hbm = topology_lib.parse(topology).chip.hbm_gib
  chips = topology_chips(topology)
  same = [r for r in earlier if r['model'] == model and r.get('fits') and
          r['layout'] == layout and 'tensor' not in r['layout'] and r.get('per_chip_gib')]
  if not same:
    return None
  same.sort(key=lambda r: (r['lengths']['inputs'], r['lengths']['targets']) != lengths)
  r = same[0]
  old_rows = r['global_batch'] / r['chips']
  fixed_old = fixed_gib(r)
  slope = (r['per_chip_gib'] - fixed_old) / old_rows
  slope *= sum(lengths) / (r['lengths']['inputs'] + r['lengths']['targets'])
  fixed = fixed_old * r['chips'] / chips
  if slope <= 0:
    return None
  per_chip_rows = (capacity_gib(hbm) - fixed) / slope
  return max(grid_floor(per_chip_rows * chips / shards), 1)


def topology_chips(topology: str) -> int:
  sys.path.insert(0, str(ROOT))
  from crosstask.runtime.sharding import topology as topology_lib  # pylint: disable=g-import-not-at-top
  return topology_lib.parse(topology).num_chips


def shards_of(topology: str, layout: str, num_partitions: int | None) -> int:
  """Batch shards: the Partitioner's data axes for the layout on the slice's chips."""
  from crosstask.runtime.sharding import partitioning  # pylint: disable=g-import-not-at-top
  return partitioning.batch_shards(layout, topology_chips(topology), num_partitions or 1)


def row(model: str, topology: str, lengths_name: str, opts: Options,
        result: dict[str, Any]) -> dict[str, Any]:
  lengths = LENGTHS[lengths_name]
  keep = ('chips', 'per_chip_gib', 'hbm_gib', 'fits', 'flops_per_chip', 'collective_bytes',
          'compile_s', 'params_gib', 'opt_state_gib', 'temp_gib', 'model_flops_per_chip',
          'predicted_flops_per_chip', 'predicted_terms_s', 'predicted_bound',
          'predicted_step_s', 'predicted_floor_s', 'predicted_mfu', 'error', 'miss_batch', 'compiles')
  compiled = result.get('model_options') or {}  # what the config held, where it has it
  return {'model': model, 'topology': topology, 'layout': opts.layout,
          'remat': compiled.get('remat_policy', opts.remat or 'default'),
          'attention': compiled.get('attention', opts.attention or 'default'),
          'scan': compiled.get('scan_layers', opts.scan),
          'global_batch': result.get('global_batch'),
          'lengths': {'inputs': lengths[0], 'targets': lengths[1], 'name': lengths_name},
          **{k: result.get(k) for k in keep}}


def _key(r: dict[str, Any]) -> tuple:
  # A row at a set batch (--batch) sits beside the searched one for the same options.
  return (r['model'], r['topology'], r['layout'], r['remat'], r['attention'], r.get('scan'),
          r['lengths']['name'], r.get('searched', True))


def merge(path: pathlib.Path, new_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
  rows = json.loads(path.read_text()) if path.exists() else []
  by_key = {_key(r): r for r in rows}
  for r in new_rows:
    by_key[_key(r)] = r
  merged = sorted(by_key.values(), key=lambda r: (
      MODELS_ORDER.get(r['model'], 99), not r.get('searched', True),
      TOPOLOGIES.index(r['topology']) if r['topology'] in TOPOLOGIES else 99,
      r['topology'], r['layout'], list(LENGTHS).index(r['lengths']['name'])
      if r['lengths']['name'] in LENGTHS else 99, r['remat'], r['attention'],
      not r.get('scan')))
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(merged, indent=1) + '\n')
  return merged


MODELS_ORDER = {m: i for i, m in enumerate(MODELS)}


def table(rows: list[dict[str, Any]]) -> str:
  head = ('| model | slice | layout | remat | attention | scan | lengths | global batch | '
          'next on the grid | GiB / chip (HBM) | TFLOP / chip / step | collective GiB | '
          'predicted ms | compile s |')
  lines = [head, '|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|']
  for r in rows:
    searched = r.get('searched', True)
    fits = ('' if r.get('fits') else ' (no fit)') + ('' if searched else ' (set)')
    if not searched or not r.get('fits'):
      following = '-'
    elif r.get('miss_batch'):
      following = f"{r['miss_batch']}: no fit"
    else:
      following = 'not tried (--max_batch)'
    roof = r.get('predicted_step_s')
    if roof is not None:
      roof_text = f'{roof * 1e3:.0f}'
    elif (r.get('predicted_terms_s') or {}).get('flops'):  # a row compiled before the
      roof_text = f">= {r['predicted_terms_s']['flops'] * 1e3:.0f}"  # prediction: FLOPs only
    else:
      roof_text = ''
    flops = r.get('predicted_flops_per_chip') or r.get('flops_per_chip') or 0
    lines.append(
        f"| {r['model']} | {r['topology']} | {r['layout']} | {r['remat']} | "
        f"{r['attention']} | {'yes' if r.get('scan') else 'no'} | "
        f"{r['lengths']['inputs']}/{r['lengths']['targets']} | {r['global_batch']}{fits} | "
        f"{following} | "
        f"{(r.get('per_chip_gib') or 0):.1f} ({r.get('hbm_gib') or '?'}) | "
        f"{flops / 1e12:.1f} | "
        f"{(r.get('collective_bytes') or 0) / 2 ** 30:.2f} | "
        f"{roof_text} | {(r.get('compile_s') or 0):.0f} |")
  return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--models', default=','.join(TABLE_MODELS),
                      help=f'comma-separated, from {list(MODELS)}')
  parser.add_argument('--topologies', default=','.join(TOPOLOGIES))
  parser.add_argument('--layouts', default='fsdp',
                      help="comma-separated Partitioner layouts (data, fsdp, tensor, ...)")
  parser.add_argument('--lengths', default=None,
                      help=f'comma-separated from {list(LENGTHS)}; default: both for '
                           'LongLM, 512/512 for T5')
  parser.add_argument('--num_partitions', type=int, default=None,
                      help="the 'model' axis for the tensor layouts")
  parser.add_argument('--remat', default=None,
                      help="TransformerConfig.remat_policy; default: the TPU platform "
                           "profile's (what 'auto' becomes when training on a TPU)")
  parser.add_argument('--attention', default=None,
                      help="TransformerConfig.attention; default: the TPU profile's")
  parser.add_argument('--scan', action='store_true', help='TransformerConfig.scan_layers')
  parser.add_argument('--max_batch', type=int, default=2048)
  parser.add_argument('--batch', type=int, default=None,
                      help='compile this one global batch per row instead of searching for '
                           'the largest that fits (the row says whether it fits)')
  parser.add_argument('--start', type=int, default=None,
                      help='rows per batch shard to start the search at where no fitting row '
                           'of the same model (in --out or this run) predicts one; default 1')
  parser.add_argument('--timeout_s', type=int, default=3600, help='per compile')
  parser.add_argument('--quick', action='store_true',
                      help='smoke run: one batch per row (no search), tiny model on v5e-8 '
                           'unless --models/--topologies say otherwise; rows go to --out '
                           '(default: the temporary directory), not the table')
  parser.add_argument('--out', default=None,
                      help=f'where rows are merged (default {RESULTS.relative_to(ROOT)})')
  args = parser.parse_args(argv)
  if args.quick:
    if args.models == parser.get_default('models'):
      args.models = 't5_1_1_tiny'
    if args.topologies == parser.get_default('topologies'):
      args.topologies = 'v5e-8'
  models = [m for m in args.models.split(',') if m]
  unknown = [m for m in models if m not in MODELS]
  if unknown:
    raise SystemExit(f'--models: unknown {unknown}; known: {list(MODELS)}')
  # Bound explicitly (what 'auto' resolves to on a TPU), so every row names them.
  tpu = tpu_profile()
  args.attention = args.attention or tpu.attention
  args.remat = args.remat or tpu.remat
  results_path = pathlib.Path(args.out) if args.out else (QUICK_RESULTS if args.quick
                                                           else RESULTS)
  done = []
  for layout in args.layouts.split(','):
    opts = Options(layout=layout, remat=args.remat, attention=args.attention, scan=args.scan,
                   num_partitions=args.num_partitions, max_batch=args.max_batch,
                   timeout_s=args.timeout_s)
    bindings = model_bindings(opts)
    for model in models:
      for topology in args.topologies.split(','):
        for lengths_name in (args.lengths.split(',') if args.lengths
                             else DEFAULT_LENGTHS[model]):
          shards = shards_of(topology, layout, args.num_partitions)
          if args.batch:
            result = compile_once(model, topology, args.batch, LENGTHS[lengths_name], opts,
                                  bindings)
          else:
            earlier = (json.loads(results_path.read_text()) if results_path.exists()
                       else []) + done
            earlier = [r for r in earlier if (r['remat'], r['attention'], r.get('scan')) ==
                       (opts.remat or 'default', opts.attention or 'default', opts.scan)]
            start = prior_rows(model, LENGTHS[lengths_name], topology, layout, shards,
                               earlier) or args.start or 1
            result = largest_batch(model, topology, LENGTHS[lengths_name], opts, bindings,
                                   shards, args.quick, start_rows=start)
          result.setdefault('chips', topology_chips(topology))
          done.append({**row(model, topology, lengths_name, opts, result),
                       'searched': not args.batch})
          merge(results_path, done)
  print(table(json.loads(results_path.read_text())))
  print(f'wrote {results_path}')


if __name__ == '__main__':
  main()
