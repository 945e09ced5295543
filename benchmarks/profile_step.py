"""Where a train step's (or a decode's) time goes: a jax.profiler trace, split into categories.

    python benchmarks/profile_step.py --model longlm_large --attention cudnn --remat dots_attention \\
        --batch 64 --scan                                   # on a GPU
    python benchmarks/profile_step.py --decode --batch 32 --scan   # one greedy decode
    python benchmarks/profile_step.py --quick               # tiny model on the CPU

`--decode` traces whole decodes (encoder and loop, gpu.py's decode row) instead: the
table is then per decode call, and `ms_per_token_step` divides it by the new tokens.
`--save_raw DIR` keeps the gzipped trace and HLO text there, to read them again later.

Captures `--steps` train steps of the runtime's Trainer (gpu.py's train row: bf16
compute, f32 parameters, T5X's Adafactor or optax's AdamW, packed rows) with
`jax.profiler.trace`, reads the trace's XPlane file with `jax.profiler.ProfileData`,
and joins every executed XLA op (by its HLO instruction name) to the compiled
step's HLO text, whose metadata carries the JAX name stack and the Python stack
(file and function) each op came from. A table of the top ops by device time and the
split into categories is printed and written as JSON (--out).

Categories (trace_categories.py): matmuls, attention, loss (softmax cross-entropy and
z-loss over the vocabulary), optimizer update, parameter casts and copies, other, and
idle: the step's span on the device less the union of the ops' busy intervals.

Verified on the CPU (tests/benchmarks/test_benchmark_profile.py, a real trace of the
tiny model): the ops are the XLA:CPU thunks on the host plane's `tf_XLA*` threads.
On a GPU the ops are read from the device plane's 'XLA Ops' line (one event per HLO
op, named by it), falling back to the kernels' `hlo_op` stat; that layout follows the
XPlane the GPU profiler writes and is not yet verified on a GPU.
"""

import argparse
import collections
import os
import pathlib
import sys
import tempfile
import time
from typing import Any

import gpu_crosstask
import gpu_spec
import harness
import trace_categories
from gpu_workload import Lengths

# XLA:CPU's bookkeeping events on its threads: not ops.
_CPU_NOISE = ('ThreadpoolListener', 'ThunkExecutor', 'SlinkyThreadPool', 'end: ')
# Control flow: its time is the time of the ops it runs, which the trace lists too.
_CONTAINERS = ('conditional', 'while', 'call')


def capture(row: gpu_spec.Row, lengths: Lengths, steps: int, logdir: str):
  """(HLO text of the compiled step, seconds per step) after tracing `steps` steps."""
  import jax
  trainer, data, _ = gpu_crosstask.train_workload(row, lengths)
  partitioner = trainer.partitioner
  state, batch, key = trainer.init_state(0), jax.device_put(data), jax.random.key(0)
  compiled = trainer.compile_train_step(state, batch, key)
  with partitioner.context():
    for _ in range(2):  # warm-up, out of the trace
      state, metrics = compiled(state, batch, key)
    jax.block_until_ready(metrics)
    with jax.profiler.trace(logdir):
      start = time.perf_counter()
      for _ in range(steps):
        state, metrics = compiled(state, batch, key)
      jax.block_until_ready(metrics)
      seconds = (time.perf_counter() - start) / steps
  return compiled.as_text(), seconds


def capture_decode(row: gpu_spec.Row, lengths: Lengths, steps: int, logdir: str):
  """(HLO text of the compiled loop, seconds per decode) after tracing `steps` whole
  decodes (encoder and loop) of gpu.py's decode row."""
  import jax
  from crosstask.runtime.config import platform
  net, params, batch = gpu_crosstask.decode_workload(row, lengths)
  prof = platform.profile()
  encode, loop = net.decoding_programs(num_decodes=row.beams)
  encode = jax.jit(encode, compiler_options=prof.decoding_compiler_options('encoder') or None)
  loop = jax.jit(loop, compiler_options=prof.decoding_compiler_options('loop') or None)
  rng = jax.random.PRNGKey(0)
  encoded = encode(params, batch)
  loop_c = loop.lower(params, batch, *encoded, rng).compile()
  encode_c = encode.lower(params, batch).compile()
  for _ in range(2):  # warm-up, out of the trace
    jax.block_until_ready(loop_c(params, batch, *encode_c(params, batch), rng))
  with jax.profiler.trace(logdir):
    start = time.perf_counter()
    for _ in range(steps):
      out = loop_c(params, batch, *encode_c(params, batch), rng)
    jax.block_until_ready(out)
    seconds = (time.perf_counter() - start) / steps
  return loop_c.as_text(), seconds


def save_raw(directory: str, xplane: pathlib.Path, hlo_text: str, stem: str) -> None:
  """The trace and the HLO text, gzipped, for reading again without the machine."""
  import gzip
  import shutil
  out = pathlib.Path(directory)
  out.mkdir(parents=True, exist_ok=True)
  with open(xplane, 'rb') as src, gzip.open(out / f'{stem}.xplane.pb.gz', 'wb') as dst:
    shutil.copyfileobj(src, dst)
  with gzip.open(out / f'{stem}.hlo.txt.gz', 'wt') as dst:
    dst.write(hlo_text)


def trace_events(xplane_path: str, ops: dict | None = None, module: str | None = None
                 ) -> list[tuple[str, int, int]]:
  """(HLO op name, start ns, duration ns) of every op executed in the trace: the device
  planes' 'XLA Ops' lines where there are any (TPU), else each GPU kernel (named after
  its HLO op with `trace_categories.hlo_name`: inside command buffers the 'hlo_op'
  stat names only the buffer), else the XLA:CPU threads. `module`: keep only kernels
  of HLO modules whose name holds it (a decode's loop, not its encoder)."""
  import jax
  ops = ops or {}
  data = jax.profiler.ProfileData.from_file(xplane_path)
  events = []
  for plane in data.planes:
    if not plane.name.startswith('/device:'):
      continue
    lines = {line.name: line for line in plane.lines}
    if 'XLA Ops' in lines:
      events += [(_op_name(e.name), int(e.start_ns), int(e.duration_ns))
                 for e in lines['XLA Ops'].events]
    else:  # kernels on streams
      for line in plane.lines:
        for e in line.events:
          stats = {k: str(v) for k, v in e.stats}
          op = stats.get('hlo_op')
          if not op or module and module not in stats.get('hlo_module', module):
            continue
          name = trace_categories.hlo_name(e.name, ops)
          if name == e.name and not op.startswith('command_buffer') and e.name not in ops:
            name = _op_name(op)  # a kernel launched outside a buffer, named by its op
          events.append((name, int(e.start_ns), int(e.duration_ns)))
  if events:
    return events
  for plane in data.planes:
    if plane.name != '/host:CPU':
      continue
    for line in plane.lines:
      if not line.name.startswith('tf_XLA'):
        continue
      events += [(e.name, int(e.start_ns), int(e.duration_ns)) for e in line.events
                 if e.duration_ns > 0 and not e.name.startswith(_CPU_NOISE)]
  return events


def _op_name(text: str) -> str:
  """'%fusion.12 = ...' or 'fusion.12' -> 'fusion.12'."""
  return text.split(' ')[0].lstrip('%')


def busy_ns(events: list[tuple[str, int, int]]) -> int:
  """The union of the events' intervals, in ns (ops on parallel threads counted once)."""
  total, end = 0, None
  for _, start, dur in sorted(events, key=lambda e: e[1]):
    stop = start + dur
    if end is None or start >= end:
      total += dur
      end = stop
    elif stop > end:
      total += stop - end
      end = stop
  return total


def breakdown(events: list[tuple[str, int, int]], hlo_text: str, steps: int,
              top: int = 15, ops: dict | None = None) -> dict[str, Any]:
  """Per step: time in each category, idle time, and the top ops by time."""
  ops = ops if ops is not None else trace_categories.parse_hlo(hlo_text)
  per_op: dict[str, list[int]] = collections.defaultdict(list)
  for name, _, dur in events:
    if name not in ops or ops[name].opcode not in _CONTAINERS:
      per_op[name].append(dur)
  by_category = collections.Counter()
  rows = []
  for name, durs in per_op.items():
    category = trace_categories.categorize(name, ops)
    by_category[category] += sum(durs)
    info = ops.get(name)
    rows.append({'op': name, 'category': category, 'calls': len(durs),
                 'ms_per_step': sum(durs) / steps / 1e6,
                 'op_name': info.op_name if info else None})
  span = max(s + d for _, s, d in events) - min(s for _, s, _ in events) if events else 0
  idle = span - busy_ns(events)
  op_total = sum(by_category.values())
  split = {c: by_category.get(c, 0) / steps / 1e6 for c in trace_categories.CATEGORIES}
  rows.sort(key=lambda r: -r['ms_per_step'])
  return {'ops_ms_per_step': split, 'idle_ms_per_step': idle / steps / 1e6,
          'span_ms_per_step': span / steps / 1e6,
          'op_share': {c: (by_category.get(c, 0) / op_total if op_total else 0.0)
                       for c in trace_categories.CATEGORIES},
          'ops_seen': len(per_op), 'ops_matched_to_hlo': sum(n in ops for n in per_op),
          'top_ops': rows[:top]}


def _read(xplane: pathlib.Path, hlo_text: str, row: gpu_spec.Row, lengths: Lengths,
          steps: int, top: int, step_s: float | None, device: str) -> dict[str, Any]:
  """The result of a trace and its HLO: the breakdown, per token step for a decode
  (whose table is its loop's: the encoder runs once per decode, not per token).
  `step_s` None: taken from the trace's span."""
  decode = row.work == 'decode'
  ops = trace_categories.parse_hlo(hlo_text)
  events = trace_events(str(xplane), ops, module='predict_loop' if decode else None)
  if not events:
    raise SystemExit(f'profile_step: the trace of {row.text!r} holds no XLA ops')
  result = {'row': row.text, 'settings': row.settings(), 'steps': steps,
            'lengths': vars(lengths), 'device': device,
            **breakdown(events, hlo_text, steps, top, ops)}
  result['step_s'] = step_s if step_s is not None else result['span_ms_per_step'] / 1e3
  if decode:
    result['ms_per_token_step'] = 1e3 * result['step_s'] / lengths.new_tokens
  return result


def profile(row: gpu_spec.Row, lengths: Lengths, steps: int, top: int = 15,
            raw_dir: str | None = None) -> dict[str, Any]:
  """The breakdown of `steps` traced steps of the train (or decode) row `row`, with its
  `top` ops; the raw trace and HLO kept under `raw_dir` when given."""
  import jax
  decode = row.work == 'decode'
  with tempfile.TemporaryDirectory(prefix='crosstask_profile_') as logdir:
    hlo_text, step_s = (capture_decode if decode else capture)(row, lengths, steps, logdir)
    (xplane,) = pathlib.Path(logdir).rglob('*.xplane.pb')
    if raw_dir:
      save_raw(raw_dir, xplane, hlo_text, 'decode' if decode else 'train')
    return _read(xplane, hlo_text, row, lengths, steps, top, step_s,
                 jax.devices()[0].device_kind)


def from_raw(directory: str, row: gpu_spec.Row, lengths: Lengths, steps: int,
             top: int = 15) -> dict[str, Any]:
  """The breakdown read again from a `--save_raw` directory (a GPU run's trace and HLO,
  brought back), with the step time taken from the trace's span."""
  import gzip
  stem = pathlib.Path(directory) / ('decode' if row.work == 'decode' else 'train')
  with gzip.open(f'{stem}.hlo.txt.gz', 'rt') as f:
    hlo_text = f.read()
  with tempfile.TemporaryDirectory() as tmp, gzip.open(f'{stem}.xplane.pb.gz', 'rb') as src:
    xplane = pathlib.Path(tmp) / 'trace.xplane.pb'
    xplane.write_bytes(src.read())
    return _read(xplane, hlo_text, row, lengths, steps, top, None, f'(read from {directory})')


def print_report(result: dict[str, Any]) -> None:
  split = [(c, ms, f"{100 * result['op_share'][c]:.1f}%")
           for c, ms in result['ops_ms_per_step'].items()]
  split.append(('idle (span less busy)', result['idle_ms_per_step'], '-'))
  print(f"{result['row']} on {result['device']}: {1e3 * result['step_s']:.1f} ms a step, "
        f"{result['ops_seen']} ops ({result['ops_matched_to_hlo']} matched to the HLO)")
  print(harness.table(split, ['category', 'ms / step', 'share of op time']))
  print(harness.table([(r['op'][:64], r['category'], r['calls'], r['ms_per_step'])
                       for r in result['top_ops']], ['op', 'category', 'calls', 'ms / step']))


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--model', default='longlm_large', choices=list(gpu_spec.MODELS))
  parser.add_argument('--attention', default='cudnn')
  parser.add_argument('--remat', default='dots_attention')
  parser.add_argument('--batch', type=int, default=64)
  parser.add_argument('--scan', action='store_true')
  parser.add_argument('--optimizer', default='adafactor', choices=['adafactor', 'adamw'])
  parser.add_argument('--options', nargs='*', default=[],
                      help="more of the row's option words (gpu_spec), e.g. unroll2 keysfirst")
  parser.add_argument('--lengths', default='512/512')
  parser.add_argument('--steps', type=int, default=3, help='traced steps')
  parser.add_argument('--decode', action='store_true',
                      help="trace whole decodes (gpu.py's decode row) instead of train steps")
  parser.add_argument('--beams', type=int, default=1, help='--decode: 1 is greedy')
  parser.add_argument('--new_tokens', type=int, default=128, help='--decode: tokens decoded')
  parser.add_argument('--save_raw', default=None,
                      help='directory for the gzipped trace and HLO text')
  parser.add_argument('--from_raw', default=None,
                      help='read a --save_raw directory again instead of running (the row '
                      'flags and --steps must be the ones it was traced with)')
  parser.add_argument('--quick', action='store_true',
                      help='tiny model, xla attention, no remat, batch 8, 32/16, 2 steps')
  parser.add_argument('--out', default=None,
                      help='JSON path (default benchmarks/results/profile_step.json)')
  args = parser.parse_args(argv)
  if args.quick:
    args.model, args.attention, args.remat, args.batch = 'tiny', 'xla', 'none', 8
    args.lengths, args.steps = '32/16', 2
    args.new_tokens = min(args.new_tokens, 6)
  if args.decode:
    text = f'decode:{args.model}:{args.beams}:{args.batch}'
  else:
    text = f'train:{args.model}:{args.attention}:{args.remat}:{args.batch}:{args.optimizer}'
  row = gpu_spec.parse(text + (':scan' if args.scan else '') + ''.join(
      f':{word}' for word in args.options))
  if row.xla_flags:  # this process has started XLA already
    raise SystemExit(f'--options: {row.flags!r} is a set of XLA flags; run with '
                     f'XLA_FLAGS={row.xla_flags!r} instead')
  start_load = os.getloadavg()
  lengths = Lengths.parse(args.lengths, args.new_tokens)
  if args.from_raw:
    result = from_raw(args.from_raw, row, lengths, args.steps)
  else:
    result = profile(row, lengths, args.steps, raw_dir=args.save_raw)
  print_report(result)
  default = (pathlib.Path(tempfile.gettempdir()) / 'crosstask_profile_quick.json' if args.quick
             else harness.RESULTS / 'profile_step.json')  # a smoke run is not a result
  harness.write('profile_step', result, harness.default_threads(), start_load,
                args.out or str(default))
  return 0


if __name__ == '__main__':
  sys.path.insert(0, str(harness.ROOT))
  sys.exit(main())
