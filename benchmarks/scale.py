"""The scale table: the largest global batch each model's train step fits on each TPU slice.

    python benchmarks/scale.py                         # the whole table (hours; see below)
    python benchmarks/scale.py --models t5_1_1_large --topologies v5e-8 --layouts fsdp
    python benchmarks/scale.py --quick                 # smoke run: tiny, one batch, one slice
    python benchmarks/scale.py --models longlm_large --topologies v5e-8 --batch 128 --scan

Method. Every figure comes from compiling the real train step (the runtime's
Trainer and Partitioner, the model's gin file, T5X's Adafactor as
`runs/pretrain.gin` configures it) for the slice with `python -m crosstask.compile`,
on a machine without a TPU (libtpu's compile-only devices). Nothing is run, so
nothing here is a measured speed: FLOPs and HBM bytes are XLA's cost model, the
step time a roofline (FLOPs at bf16 peak vs HBM traffic at full bandwidth, whichever
is longer) and the collective bytes the operands of the collectives in the optimized
program (one loop iteration counted once).

For each (model, slice, layout, lengths) the global batch starts at one row per
batch shard and doubles while the compile fits the chip's HBM (the TPU compiler
refuses a program that does not), then bisects between the last fit and the first
miss in whole rows per shard. A row records the largest batch that fits, or the
smallest tried when none does (`fits: false`). Each compile is its own process, so
host memory is given back between compiles.

Cost: the unscanned 24-layer models take minutes and over 10 GiB of host memory per
compile on a 2-core machine; XL and XXL need the layer scan (`--scan`, once
`TransformerConfig.scan_layers` exists) to compile in reasonable time. Rows are
merged into benchmarks/results/scale.json as they finish, so a run can be split
(--models / --topologies) and resumed.
"""

import argparse
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from typing import Any

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


def config_fields() -> set[str]:
  """TransformerConfig's fields: which of remat / attention / scan this tree has."""
  sys.path.insert(0, str(ROOT))
  from crosstask.models import config  # pylint: disable=g-import-not-at-top
  return {f.name for f in dataclasses.fields(config.TransformerConfig)}


def has_layouts() -> bool:
  sys.path.insert(0, str(ROOT))
  import inspect  # pylint: disable=g-import-not-at-top
  from crosstask.runtime import partitioning  # pylint: disable=g-import-not-at-top
  return 'layout' in inspect.signature(partitioning.Partitioner.__init__).parameters


def model_bindings(opts: Options, fields: set[str]) -> list[str]:
  """Gin bindings for the remat / attention / scan options, where the model has them."""
  wanted = {'remat_policy': repr(opts.remat) if opts.remat else None,
            'attention': repr(opts.attention) if opts.attention else None,
            'scan_layers': 'True' if opts.scan else None}
  bindings = []
  for field, value in wanted.items():
    if value is None:
      continue
    if field not in fields:
      raise SystemExit(f'TransformerConfig has no field {field!r} in this tree; drop the '
                       f'option that sets it.')
    bindings.append(f'config.TransformerConfig.{field}={value}')
  return bindings


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
  start = time.perf_counter()
  try:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout_s,
                          env=env, cwd=ROOT, check=False)
  except subprocess.TimeoutExpired:
    return {'fits': None, 'error': f'compile passed --timeout_s={opts.timeout_s}',
            'global_batch': batch}
  lines = done.stdout.strip().splitlines()
  if done.returncode or not lines or not lines[-1].startswith('{'):
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return {'fits': None, 'global_batch': batch,
            'error': f'exit {done.returncode} after {time.perf_counter() - start:.0f} s: '
                     + ' | '.join(tail)}
  return json.loads(lines[-1])


def largest_batch(model: str, topology: str, lengths: tuple[int, int], opts: Options,
                  bindings: list[str], shards: int, quick: bool) -> dict[str, Any]:
  """Doubles the global batch from one row per shard while it fits, then bisects."""
  tried: dict[int, dict[str, Any]] = {}

  def fits(batch: int) -> bool:
    tried[batch] = compile_once(model, topology, batch, lengths, opts, bindings)
    result = tried[batch]
    print(f'  {model} {topology} {opts.layout} batch {batch}: '
          f'{"fits" if result.get("fits") else "no"} '
          f'{result.get("per_chip_gib") or float("nan"):.2f} GiB'
          + (f' ({result["error"][:200]})' if result.get('error') else ''), flush=True)
    return bool(result.get('fits'))

  low, high = None, None  # rows per shard: largest fitting, smallest failing
  rows = 1
  while True:
    if fits(rows * shards):
      low = rows
      if quick or rows * shards * 2 > opts.max_batch:
        break
      rows *= 2
    else:
      high = rows
      break
  while low is not None and high is not None and high - low > 1:
    middle = (low + high) // 2
    if fits(middle * shards):
      low = middle
    else:
      high = middle
  return tried[(low or 1) * shards]


def topology_chips(topology: str) -> int:
  sys.path.insert(0, str(ROOT))
  from crosstask.runtime import topology as topology_lib  # pylint: disable=g-import-not-at-top
  return topology_lib.parse(topology).num_chips


def shards_of(topology: str, layout: str, num_partitions: int | None) -> int:
  """Batch shards: the chips, less the tensor-parallel 'model' axis."""
  chips = topology_chips(topology)
  return chips // (num_partitions or 1) if 'tensor' in layout else chips


def row(model: str, topology: str, lengths_name: str, opts: Options,
        result: dict[str, Any]) -> dict[str, Any]:
  lengths = LENGTHS[lengths_name]
  keep = ('chips', 'per_chip_gib', 'hbm_gib', 'fits', 'flops_per_chip', 'collective_bytes',
          'compile_s', 'params_gib', 'opt_state_gib', 'temp_gib', 'roofline_step_s',
          'mfu_bound', 'error')
  compiled = result.get('model_options') or {}  # what the config held, where it has it
  return {'model': model, 'topology': topology, 'layout': opts.layout,
          'remat': compiled.get('remat_policy', opts.remat or 'default'),
          'attention': compiled.get('attention', opts.attention or 'default'),
          'scan': compiled.get('scan_layers', opts.scan),
          'global_batch': result.get('global_batch'),
          'lengths': {'inputs': lengths[0], 'targets': lengths[1], 'name': lengths_name},
          **{k: result.get(k) for k in keep}}


def _key(r: dict[str, Any]) -> tuple:
  return (r['model'], r['topology'], r['layout'], r['remat'], r['attention'], r.get('scan'),
          r['lengths']['name'])


def merge(path: pathlib.Path, new_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
  rows = json.loads(path.read_text()) if path.exists() else []
  by_key = {_key(r): r for r in rows}
  for r in new_rows:
    by_key[_key(r)] = r
  merged = sorted(by_key.values(), key=lambda r: (MODELS_ORDER.get(r['model'], 99),
                                                   r['topology'], r['layout']))
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(merged, indent=1) + '\n')
  return merged


MODELS_ORDER = {m: i for i, m in enumerate(MODELS)}


def table(rows: list[dict[str, Any]]) -> str:
  head = ('| model | slice | layout | remat | attention | scan | lengths | global batch | '
          'GiB / chip (HBM) | TFLOP / chip / step | collective GiB | roofline ms | compile s |')
  lines = [head, '|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|']
  for r in rows:
    fits = ('' if r.get('fits') else ' (no fit)') + ('' if r.get('searched', True) else ' (set)')
    roof = r.get('roofline_step_s')
    lines.append(
        f"| {r['model']} | {r['topology']} | {r['layout']} | {r['remat']} | "
        f"{r['attention']} | {'yes' if r.get('scan') else 'no'} | "
        f"{r['lengths']['inputs']}/{r['lengths']['targets']} | {r['global_batch']}{fits} | "
        f"{(r.get('per_chip_gib') or 0):.1f} ({r.get('hbm_gib') or '?'}) | "
        f"{(r.get('flops_per_chip') or 0) / 1e12:.1f} | "
        f"{(r.get('collective_bytes') or 0) / 2 ** 30:.2f} | "
        f"{'' if roof is None else f'{roof * 1e3:.0f}'} | {(r.get('compile_s') or 0):.0f} |")
  return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--models', default=','.join(TABLE_MODELS),
                      help=f'comma-separated, from {list(MODELS)}')
  parser.add_argument('--topologies', default=','.join(TOPOLOGIES))
  parser.add_argument('--layouts', default=None,
                      help="comma-separated Partitioner layouts (data, fsdp, tensor, ...); "
                           "default: fsdp where the Partitioner has layouts, else data")
  parser.add_argument('--lengths', default=None,
                      help=f'comma-separated from {list(LENGTHS)}; default: both for '
                           'LongLM, 512/512 for T5')
  parser.add_argument('--num_partitions', type=int, default=None,
                      help="the 'model' axis for the tensor layouts")
  parser.add_argument('--remat', default=None, help='TransformerConfig.remat_policy')
  parser.add_argument('--attention', default=None, help='TransformerConfig.attention')
  parser.add_argument('--scan', action='store_true', help='TransformerConfig.scan_layers')
  parser.add_argument('--max_batch', type=int, default=2048)
  parser.add_argument('--batch', type=int, default=None,
                      help='compile this one global batch per row instead of searching for '
                           'the largest that fits (the row says whether it fits)')
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
  fields = config_fields()
  if args.layouts is None:
    args.layouts = 'fsdp' if has_layouts() else 'data'
  results_path = pathlib.Path(args.out) if args.out else (QUICK_RESULTS if args.quick
                                                           else RESULTS)
  done = []
  for layout in args.layouts.split(','):
    opts = Options(layout=layout, remat=args.remat, attention=args.attention, scan=args.scan,
                   num_partitions=args.num_partitions, max_batch=args.max_batch,
                   timeout_s=args.timeout_s)
    bindings = model_bindings(opts, fields)
    for model in models:
      for topology in args.topologies.split(','):
        for lengths_name in (args.lengths.split(',') if args.lengths
                             else DEFAULT_LENGTHS[model]):
          shards = shards_of(topology, layout, args.num_partitions)
          if args.batch:
            result = compile_once(model, topology, args.batch, LENGTHS[lengths_name], opts,
                                  bindings)
          else:
            result = largest_batch(model, topology, LENGTHS[lengths_name], opts, bindings,
                                   shards, args.quick)
          result.setdefault('chips', topology_chips(topology))
          done.append({**row(model, topology, lengths_name, opts, result),
                       'searched': not args.batch})
          merge(results_path, done)
  print(table(json.loads(results_path.read_text())))
  print(f'wrote {results_path}')


if __name__ == '__main__':
  main()
