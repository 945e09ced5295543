"""What a compiled step tells, per chip, what it predicts, and how `crosstask.compile` prints it.

Reads a compiled program (memory plan, XLA's cost model, the optimized HLO text for
the collectives and loops) into a `Report`, predicts the step's time on a chip from
it (`predict`), matches XLA:TPU's refusal of a program too big for HBM, and formats
the report as text; `Report.as_dict` is the --json line. Nothing here compiles:
`runtime.aot` does, and hands its programs over.
"""

import dataclasses
import re
from typing import Any, Mapping, Sequence

import jax

from crosstask.runtime.sharding import hlo
from crosstask.runtime.sharding import topology as topology_lib

GIB = topology_lib.GIB


@dataclasses.dataclass
class Report:
  """One compiled program's per-chip plan and cost; `as_dict` is the --json line."""
  topology: str
  chips: int
  step: str
  layout: str
  global_batch: int
  lengths: dict[str, int]
  argument_gib: float
  output_gib: float
  alias_gib: float
  temp_gib: float
  per_chip_gib: float
  params_gib: float
  opt_state_gib: float
  hbm_gib: float | None
  fits: bool | None
  flops_per_chip: float  # XLA's cost model: a loop's body counted once
  hbm_bytes_per_chip: float  # XLA's cost model: a loop's body counted once
  collectives: dict[str, dict[str, int]]  # per step: every loop iteration counted
  collective_bytes: int
  compile_s: float
  # The roofline prediction (`predict`): FLOPs from the model count, HBM bytes from
  # the program with every loop iteration counted; None for decoding or without a chip.
  model_flops_per_chip: float | None = None  # MFU's numerator: no remat recompute
  predicted_flops_per_chip: float | None = None  # the model count + remat recompute
  predicted_hbm_bytes_per_chip: float | None = None
  predicted_terms_s: dict[str, float] | None = None  # flops / hbm / collectives alone
  predicted_bound: str | None = None  # the largest term
  predicted_step_s: float | None = None  # the terms one after another (see `predict`)
  predicted_floor_s: float | None = None  # the largest term alone: the roofline
  predicted_mfu: float | None = None
  # Whether the chip's prediction was checked against measured steps (`Chip.calibrated`).
  predicted_calibrated: bool | None = None
  train_steps: int | None = None
  predicted_hours: float | None = None  # for train_steps
  programs: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
  error: str | None = None  # XLA's refusal when the program does not fit
  # The network's remat / attention / layer-scan settings, where its config has them.
  model_options: dict[str, Any] = dataclasses.field(default_factory=dict)
  # The PRNG implementation the program draws dropout (and sampling) with: the target
  # platform profile's, as the run itself will.
  prng_impl: str | None = None

  def as_dict(self) -> dict[str, Any]:
    return dataclasses.asdict(self)


def _memory(compiled) -> dict[str, float]:
  stats = compiled.memory_analysis()
  argument, output = stats.argument_size_in_bytes, stats.output_size_in_bytes
  alias, temp = stats.alias_size_in_bytes, stats.temp_size_in_bytes
  return {'argument': argument, 'output': output, 'alias': alias, 'temp': temp,
          # Donated state is both an argument and an output but one buffer.
          'peak': argument + output - alias + temp}


def cost(compiled) -> dict[str, float]:
  cost = compiled.cost_analysis()
  if isinstance(cost, (list, tuple)):  # Older jax: one dict per program.
    cost = cost[0] if cost else {}
  return {'flops': float(cost.get('flops', 0.0)),
          'bytes': float(cost.get('bytes accessed', 0.0))}


def _hbm_gib(chip: topology_lib.Chip | None, devices: Sequence[jax.Device]) -> float | None:
  if chip is not None:
    return float(chip.hbm_gib)
  try:
    limit = (devices[0].memory_stats() or {}).get('bytes_limit')
  except Exception:  # pylint: disable=broad-except  # CPU devices keep no stats.
    limit = None
  return limit / GIB if limit else None


def report(compiled_programs: Mapping[str, Any], *, chip: topology_lib.Chip | None,
           devices: Sequence[jax.Device], topology: str, step: str, layout: str,
           batch_size: int, lengths: Mapping[str, int], params_bytes: int,
           opt_state_bytes: int, compile_s: float, model_flops: float | None = None,
           executed_flops: float | None = None) -> Report:
  """Sums the programs of one step (the train step; or decoding's encoder and loop).

  Memory is the largest program's (they run one after another); FLOPs, HBM bytes
  and collectives add up. XLA's cost model counts a loop's body once, so its FLOPs
  and bytes are one iteration of a scanned stack (and of decoding, one step);
  collectives and the predicted bytes count every iteration. `model_flops` and
  `executed_flops` (the model count without and with remat's recompute, whole
  step) make the prediction, made here when `chip` is known.
  """
  memories = {name: _memory(c) for name, c in compiled_programs.items()}
  costs = {name: cost(c) for name, c in compiled_programs.items()}
  biggest = max(memories, key=lambda name: memories[name]['peak'])
  mem = memories[biggest]
  collectives = {kind: {'count': 0, 'bytes': 0} for kind in hlo.COLLECTIVES}
  predicted_bytes = 0.0
  for name, compiled in compiled_programs.items():
    module = hlo.HloModule.parse(compiled.as_text())
    predicted_bytes += module.traffic()
    for kind, stat in module.collectives().items():
      collectives[kind]['count'] += stat['count']
      collectives[kind]['bytes'] += stat['bytes']
  hbm_gib = _hbm_gib(chip, devices)
  per_chip_gib = mem['peak'] / GIB
  chips = len(devices)
  result = Report(
      topology=topology, chips=chips, step=step, layout=layout,
      global_batch=batch_size, lengths=dict(lengths),
      argument_gib=mem['argument'] / GIB, output_gib=mem['output'] / GIB,
      alias_gib=mem['alias'] / GIB, temp_gib=mem['temp'] / GIB, per_chip_gib=per_chip_gib,
      params_gib=params_bytes / GIB, opt_state_gib=opt_state_bytes / GIB, hbm_gib=hbm_gib,
      fits=None if hbm_gib is None else per_chip_gib <= hbm_gib,
      flops_per_chip=sum(c['flops'] for c in costs.values()),
      hbm_bytes_per_chip=sum(c['bytes'] for c in costs.values()), collectives=collectives,
      collective_bytes=sum(s['bytes'] for s in collectives.values()), compile_s=compile_s,
      programs={name: {k: v / GIB for k, v in m.items()} for name, m in memories.items()})
  if model_flops is not None and executed_flops is not None:
    result = dataclasses.replace(
        result, model_flops_per_chip=model_flops / chips,
        predicted_flops_per_chip=executed_flops / chips,
        predicted_hbm_bytes_per_chip=predicted_bytes)
  return predict(result, chip)


def predict(r: Report, chip: topology_lib.Chip | None,
            train_steps: int | None = None) -> Report:
  """The step time of `r` on `chip`, its MFU, and the hours of `train_steps`.

  A chip can go no faster than its FLOPs at bf16 peak, its HBM traffic at full
  bandwidth, or its collectives' bytes at its interconnect's bandwidth: the longest
  of the three is the roofline (`predicted_floor_s`). The prediction is their sum,
  as if no term overlapped another: most of a step's kernels are bound by one of
  them, and on an H100 the sum came within 7% of five measured train steps
  (LongLM-large and T5 1.1 base; the roofline alone was 1.45-1.73x too fast;
  benchmarks/README.md, GPU). HBM bytes count at the bandwidth the chip's steps were
  measured to reach (`Chip.hbm_efficiency`: the H200's memory-bound kernels reach 68%
  of its published figure). FLOPs are the model's own count
  (`model_flops.executed_train_step`: every layer, attention included, plus the
  forward work remat recomputes) rather than XLA's cost model, which counts a
  scanned stack's loop body once and a fused attention kernel not at all; HBM and
  collective bytes are read from the optimized program with every loop iteration
  counted (`hlo.HloModule`), where XLA's cost model counts the body once.
  MFU divides the model FLOPs without the recompute, as the training console does.
  Unchanged where the report has no model count (decoding) or there is no chip.
  """
  if chip is None or r.predicted_flops_per_chip is None:
    return r
  link = chip.interconnect_bytes_per_s
  terms = {'flops': r.predicted_flops_per_chip / chip.peak_bf16_flops,
           'hbm': (r.predicted_hbm_bytes_per_chip or 0.0) / chip.effective_hbm_bytes_per_s,
           'collectives': r.collective_bytes / link if link else 0.0}
  bound = max(terms, key=terms.get)
  step_s = sum(terms.values())
  if step_s <= 0:
    return r
  return dataclasses.replace(
      r, predicted_terms_s=terms, predicted_bound=bound, predicted_step_s=step_s,
      predicted_floor_s=terms[bound],
      predicted_mfu=r.model_flops_per_chip / chip.peak_bf16_flops / step_s,
      predicted_calibrated=chip.calibrated, train_steps=train_steps,
      predicted_hours=step_s * train_steps / 3600 if train_steps else None)


_UNITS = {'': 1, 'B': 1, 'K': 2 ** 10, 'M': 2 ** 20, 'G': 2 ** 30, 'T': 2 ** 40}


def out_of_memory(message: str) -> tuple[float, float] | None:
  """(needed, capacity) GiB from XLA:TPU's refusal of a program too big for HBM.

  'the total memory required for HLO temporaries (37.38G) exceeds available HBM
  (15.75G)', or 'Used 20.5G of 15.75G hbm'.
  """
  if 'RESOURCE_EXHAUSTED' not in message and 'Ran out of memory' not in message:
    return None
  match = (re.search(r'\(([\d.]+)([KMGT]?)\) exceeds available HBM \(([\d.]+)([KMGT]?)\)',
                     message)
           or re.search(r'Used ([\d.]+)([KMGT]?) of ([\d.]+)([KMGT]?) hbm', message))
  if not match:
    return (float('nan'), float('nan'))
  used, used_unit, cap, cap_unit = match.groups()
  return (float(used) * _UNITS[used_unit] / GIB, float(cap) * _UNITS[cap_unit] / GIB)


def refused_report(devices: Sequence[jax.Device], topology: str, step: str, layout: str,
                   batch_size: int, lengths: Mapping[str, int]) -> Report:
  """A report with nothing compiled: the caller fills in what XLA's refusal tells."""
  nothing = {kind: {'count': 0, 'bytes': 0} for kind in hlo.COLLECTIVES}
  return Report(topology=topology, chips=len(devices), step=step, layout=layout,
                global_batch=batch_size, lengths=dict(lengths), argument_gib=0.0,
                output_gib=0.0, alias_gib=0.0, temp_gib=0.0, per_chip_gib=0.0,
                params_gib=0.0, opt_state_gib=0.0, hbm_gib=None, fits=None,
                flops_per_chip=0.0, hbm_bytes_per_chip=0.0, collectives=nothing,
                collective_bytes=0, compile_s=0.0)


def format_report(r: Report, chip: topology_lib.Chip | None) -> str:
  """The human-readable table `python -m crosstask.compile` prints."""
  if r.error:
    return (f'{r.step} step of global batch {r.global_batch} on {r.topology} '
            f'(layout {r.layout!r}) DOES NOT FIT: {r.per_chip_gib:.2f} GiB per chip of '
            f'{r.hbm_gib:.2f} GiB (parameters {r.params_gib:.3f}, optimizer state '
            f'{r.opt_state_gib:.3f}); XLA: {r.error}')
  lines = [f'{r.step} step of global batch {r.global_batch} x '
           f'{r.lengths["inputs"]}/{r.lengths["targets"]} on {r.topology} '
           f'({r.chips} chips, layout {r.layout!r}), compiled in {r.compile_s:.1f} s',
           'per chip:']
  hbm = f'{r.hbm_gib:.1f} GiB' if r.hbm_gib is not None else 'unknown'
  verdict = {True: 'fits', False: 'DOES NOT FIT', None: 'capacity unknown'}[r.fits]
  held = (f'parameters {r.params_gib:.3f}, optimizer state {r.opt_state_gib:.3f}'
          if r.step == 'train' else
          # jit drops the arguments a program never reads: the loop, the encoder's weights.
          f'of the model\'s {r.params_gib:.3f} of parameters, those the program reads')
  lines += [
      f'  arguments      {r.argument_gib:9.3f} GiB  ({held})',
      f'  outputs        {r.output_gib:9.3f} GiB  ({r.alias_gib:.3f} of them donated '
      f'arguments)',
      f'  temporaries    {r.temp_gib:9.3f} GiB',
      f'  total          {r.per_chip_gib:9.3f} GiB  of {hbm} HBM: {verdict}',
      f'  XLA FLOPs      {r.flops_per_chip:9.3e}  (cost model: a loop body counted once)',
      f'  XLA HBM bytes  {r.hbm_bytes_per_chip:9.3e}']
  for kind, stat in r.collectives.items():
    if stat['count']:
      lines.append(f'  {kind:<18} {stat["count"]:6d} ops, {stat["bytes"] / GIB:.3f} GiB a step')
  if not any(s['count'] for s in r.collectives.values()):
    lines.append('  collectives    none')
  return '\n'.join(lines + _prediction_lines(r, chip))


def _prediction_lines(r: Report, chip: topology_lib.Chip | None) -> list[str]:
  if r.predicted_flops_per_chip is None:
    return []
  lines = [f'  model FLOPs    {r.model_flops_per_chip:9.3e}  ({r.predicted_flops_per_chip:.3e} '
           'run, with remat recompute)',
           f'  HBM bytes      {r.predicted_hbm_bytes_per_chip:9.3e}  (every loop iteration)']
  if r.predicted_step_s is None or chip is None:
    return lines + ['  predicted step unknown: no chip figures for this device']
  terms = r.predicted_terms_s or {}
  lines += [
      f'  predicted step {r.predicted_step_s * 1e3:9.2f} ms  (FLOPs '
      f'{terms.get("flops", 0) * 1e3:.2f} ms at {chip.peak_bf16_flops / 1e12:.0f} '
      f'TFLOP/s + HBM {terms.get("hbm", 0) * 1e3:.2f} ms at '
      f'{chip.effective_hbm_bytes_per_s / 1e9:.0f} GB/s + collectives '
      f'{terms.get("collectives", 0) * 1e3:.2f} ms at '
      f'{chip.interconnect_bytes_per_s / 1e9:.0f} GB/s; none overlapping)',
      f'  roofline       {r.predicted_floor_s * 1e3:9.2f} ms  ({r.predicted_bound}-bound: '
      'the largest term alone)',
      f'  predicted MFU  {r.predicted_mfu:9.1%}']
  if r.predicted_hours is None:
    lines.append('  predicted time unknown: bind TRAIN_STEPS (--gin.TRAIN_STEPS=N)')
  else:
    lines.append(f'  predicted time {r.predicted_hours:9.2f} h  for TRAIN_STEPS={r.train_steps}')
  if not chip.calibrated:
    lines.append(f'  (not calibrated on a {chip.name}: the prediction was checked against steps '
                 'measured on H100 and H200 GPUs only; the HBM term is XLA\'s bytes at the '
                 'published bandwidth, probably pessimistic on a TPU, whose fusions differ)')
  return lines
