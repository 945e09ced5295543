"""Ahead-of-time compiles of the train step and decoding for a slice one does not have.

The step is the runtime's own: the gin files give the model, the optimizer,
TASK_FEATURE_LENGTHS, BATCH_SIZE and NUM_MICROBATCHES as for `crosstask.train`; the
`Trainer` and `Partitioner` build it on compile-only devices (`runtime.topology`) or
on the local ones. Nothing reads data, so no SeqIO or TensorFlow is needed: the
vocabulary is not built (compiling does not tokenize) and the batch is abstract.

What a compile tells (`Report`), per chip: the memory XLA planned (arguments,
outputs, temporaries; donated state counted once), the bytes of parameters and
optimizer state from their shardings, FLOPs and HBM bytes from XLA's cost model,
the collectives in the optimized program, and a roofline step time.
"""

import dataclasses
import math
import re
import time
from typing import Any, Mapping, Sequence

import gin
import jax
import jax.numpy as jnp
import numpy as np

from crosstask.runtime import gin_utils, optimizers, partitioning
from crosstask.runtime import run as run_lib
from crosstask.runtime import topology as topology_lib
from crosstask.runtime import trainer as trainer_lib

GIB = topology_lib.GIB
DEFAULT_LENGTHS = {'inputs': 512, 'targets': 512}
DEFAULT_BATCH_SIZE = 128
# Macros a run file may require that a compile never uses (no data, no model dir).
_UNUSED_BY_COMPILE = (
    "MODEL_DIR = '/compile-only/no-model-dir'",
    "MIXTURE_OR_TASK_NAME = 'compile_only'",
    'TRAIN_STEPS = 1',
    'VOCABULARY = None',  # Sizes come from the network config; no tokenizer is built.
)
COLLECTIVES = ('all-reduce', 'all-gather', 'reduce-scatter', 'all-to-all',
               'collective-permute')
_DTYPE_BYTES = {'pred': 1, 's8': 1, 'u8': 1, 's16': 2, 'u16': 2, 'f16': 2, 'bf16': 2,
                's32': 4, 'u32': 4, 'f32': 4, 's64': 8, 'u64': 8, 'f64': 8, 'c64': 8,
                'c128': 16, 'f8e4m3fn': 1, 'f8e5m2': 1, 's4': 1, 'u4': 1}


def load_run(gin_files: Sequence[str], bindings: Sequence[str],
             devices: Sequence[jax.Device], *, layout: str | None = None,
             num_partitions: int | None = None, num_slices: int = 1,
             step: str = 'train') -> run_lib.Run:
  """The Run the gin files (a model file, optionally a run file) describe, on `devices`.

  Parsed as the entry points do; TASK_FEATURE_LENGTHS and BATCH_SIZE default to
  512/512 and 128 when no file binds them. A model left at 'auto' takes the
  target's profile (a TPU slice: flash attention, full remat), not this machine's.
  """
  if step not in ('train', 'infer'):
    raise ValueError(f"--step={step!r}: expected 'train' or 'infer'")
  gin.clear_config()
  gin_utils.parse(list(gin_files), list(_UNUSED_BY_COMPILE) + list(bindings),
                  search_paths=[str(gin_utils.PACKAGE_DIR.parent)], lock=False)
  model = gin_utils.query('%MODEL', None)
  if model is None:
    raise gin_utils.GinConfigError(f'No MODEL bound by {list(gin_files)}: pass a model gin '
                                   'file first, e.g. --gin_file=t5_1_1/tiny.gin')
  lengths = dict(gin_utils.query('%TASK_FEATURE_LENGTHS', DEFAULT_LENGTHS))
  if set(lengths) != {'inputs', 'targets'}:
    raise gin_utils.GinConfigError(f"TASK_FEATURE_LENGTHS={lengths}: a compile needs "
                                   "{'inputs': N, 'targets': M}")
  partitioner = make_partitioner(devices, layout, num_partitions, num_slices)
  return run_lib.resolve(
      model, partitioner, batch_size=int(gin_utils.query('%BATCH_SIZE', DEFAULT_BATCH_SIZE)),
      lengths=lengths, pack=bool(gin_utils.query('%PACK', False)),
      num_microbatches=int(gin_utils.query('%NUM_MICROBATCHES', 1)) if step == 'train' else 1)


@dataclasses.dataclass
class Target:
  """What to compile for: devices, their chip's figures (None: local) and slices."""
  devices: list[jax.Device]
  chip: topology_lib.Chip | None
  name: str
  num_slices: int = 1


def target(topology: str, num_slices: int | None = None) -> Target:
  """Compile-only TPU devices for a named slice, or this machine's for 'local'."""
  if topology == 'local':
    devices = jax.devices()
    return Target(devices, None, f'local ({len(devices)} x {devices[0].device_kind})')
  parsed = topology_lib.parse(topology, num_slices)
  return Target(topology_lib.compile_only_devices(parsed), parsed.chip, parsed.name,
                parsed.num_slices)


def make_partitioner(devices: Sequence[jax.Device], layout: str | None = None,
                     num_partitions: int | None = None, num_slices: int = 1
                     ) -> partitioning.Partitioner:
  """The gin-configured Partitioner on `devices`; the flags given replace gin's values."""
  kwargs: dict[str, Any] = {'devices': list(devices)}
  if num_partitions is not None:
    kwargs['num_partitions'] = num_partitions
  if layout is not None:
    kwargs['layout'] = layout
  if num_slices > 1:
    kwargs['num_slices'] = num_slices
  return partitioning.Partitioner(**kwargs)


def abstract_batch(batch_size: int, lengths: Mapping[str, int], pack: bool,
                   sharding: Any) -> dict[str, jax.ShapeDtypeStruct]:
  """The converted features of an encoder-decoder batch (SeqIO's EncDecFeatureConverter)."""
  enc, dec = lengths['inputs'], lengths['targets']
  shapes = {'encoder_input_tokens': enc, 'decoder_input_tokens': dec,
            'decoder_target_tokens': dec, 'decoder_loss_weights': dec}
  if pack:
    shapes.update(encoder_segment_ids=enc, encoder_positions=enc,
                  decoder_segment_ids=dec, decoder_positions=dec)
  return {k: jax.ShapeDtypeStruct((batch_size, n), jnp.int32, sharding=sharding)
          for k, n in shapes.items()}


def per_chip_bytes(abstract_tree: Any) -> int:
  """Bytes one chip holds of a tree of sharded ShapeDtypeStructs (its largest shard)."""
  total = 0
  for leaf in jax.tree.leaves(abstract_tree):
    shape = leaf.sharding.shard_shape(leaf.shape) if leaf.sharding is not None else leaf.shape
    total += math.prod(shape) * np.dtype(leaf.dtype).itemsize
  return total


def _type_bytes(type_text: str) -> int:
  total = 0
  for dtype, dims in re.findall(r'\b([a-z]+\d*(?:e\dm\d(?:fn)?)?)\[([\d,]*)\]', type_text):
    if dtype in _DTYPE_BYTES:
      total += math.prod(int(d) for d in dims.split(',') if d) * _DTYPE_BYTES[dtype]
  return total


_INSTRUCTION = re.compile(r'^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+([a-z][\w\-]*)\((.*)$')


def collective_stats(hlo_text: str) -> dict[str, dict[str, int]]:
  """{kind: {'count', 'bytes'}} of the collectives in an optimized HLO module.

  Bytes are the operands' (what each chip sends into the collective). Measured from
  the program text, as XLA reports no collective volume; an op inside a loop (a
  scanned layer stack, microbatches) is counted once, not once per iteration.
  """
  types: dict[str, str] = {}
  ops: list[tuple[str, str]] = []
  for line in hlo_text.splitlines():
    match = _INSTRUCTION.match(line)
    if not match:
      continue
    name, type_text, opcode, rest = match.groups()
    types[name] = type_text
    kind = opcode[:-len('-start')] if opcode.endswith('-start') else opcode
    if kind in COLLECTIVES:
      ops.append((kind, rest))
  stats = {kind: {'count': 0, 'bytes': 0} for kind in COLLECTIVES}
  for kind, rest in ops:
    depth, args = 0, ''
    for ch in rest:  # The operand list: up to the parenthesis that closes the call.
      if ch == '(':
        depth += 1
      elif ch == ')':
        if depth == 0:
          break
        depth -= 1
      args += ch
    operands = re.findall(r'%([\w.\-]+)', args)
    stats[kind]['count'] += 1
    stats[kind]['bytes'] += sum(_type_bytes(types.get(op, '')) for op in operands)
  return stats


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
  flops_per_chip: float
  hbm_bytes_per_chip: float
  collectives: dict[str, dict[str, int]]
  collective_bytes: int
  roofline_step_s: float | None
  mfu_bound: float | None
  compile_s: float
  programs: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
  error: str | None = None  # XLA's refusal when the program does not fit
  # The network's remat / attention / layer-scan settings, where its config has them.
  model_options: dict[str, Any] = dataclasses.field(default_factory=dict)

  def as_dict(self) -> dict[str, Any]:
    return dataclasses.asdict(self)


def _memory(compiled) -> dict[str, float]:
  stats = compiled.memory_analysis()
  argument, output = stats.argument_size_in_bytes, stats.output_size_in_bytes
  alias, temp = stats.alias_size_in_bytes, stats.temp_size_in_bytes
  return {'argument': argument, 'output': output, 'alias': alias, 'temp': temp,
          # Donated state is both an argument and an output but one buffer.
          'peak': argument + output - alias + temp}


def _cost(compiled) -> dict[str, float]:
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
           opt_state_bytes: int, compile_s: float) -> Report:
  """Sums the programs of one step (the train step; or decoding's encoder and loop).

  Memory is the largest program's (they run one after another); FLOPs, HBM bytes
  and collectives add up. XLA's cost model counts a loop's body once, so for
  decoding they are the encoder plus one decoding step, not the whole decode.
  """
  memories = {name: _memory(c) for name, c in compiled_programs.items()}
  costs = {name: _cost(c) for name, c in compiled_programs.items()}
  biggest = max(memories, key=lambda name: memories[name]['peak'])
  mem = memories[biggest]
  flops = sum(c['flops'] for c in costs.values())
  hbm_bytes = sum(c['bytes'] for c in costs.values())
  collectives = {kind: {'count': 0, 'bytes': 0} for kind in COLLECTIVES}
  for compiled in compiled_programs.values():
    for kind, stat in collective_stats(compiled.as_text()).items():
      collectives[kind]['count'] += stat['count']
      collectives[kind]['bytes'] += stat['bytes']
  hbm_gib = _hbm_gib(chip, devices)
  per_chip_gib = mem['peak'] / GIB
  roofline = mfu = None
  if chip is not None:
    # The step can go no faster than its FLOPs at peak or its HBM traffic at full
    # bandwidth; the MFU bound counts compiled FLOPs (remat recompute included).
    roofline = max(flops / chip.peak_bf16_flops, hbm_bytes / chip.hbm_bytes_per_s)
    mfu = flops / chip.peak_bf16_flops / roofline if roofline > 0 else None
  return Report(
      topology=topology, chips=len(devices), step=step, layout=layout,
      global_batch=batch_size, lengths=dict(lengths),
      argument_gib=mem['argument'] / GIB, output_gib=mem['output'] / GIB,
      alias_gib=mem['alias'] / GIB, temp_gib=mem['temp'] / GIB, per_chip_gib=per_chip_gib,
      params_gib=params_bytes / GIB, opt_state_gib=opt_state_bytes / GIB, hbm_gib=hbm_gib,
      fits=None if hbm_gib is None else per_chip_gib <= hbm_gib,
      flops_per_chip=flops, hbm_bytes_per_chip=hbm_bytes, collectives=collectives,
      collective_bytes=sum(s['bytes'] for s in collectives.values()),
      roofline_step_s=roofline, mfu_bound=mfu, compile_s=compile_s,
      programs={name: {k: v / GIB for k, v in m.items()} for name, m in memories.items()})


def build_trainer(run: run_lib.Run) -> trainer_lib.Trainer:
  """The run's Trainer with the gin-configured optimizer (the run file's)."""
  return trainer_lib.Trainer.for_run(run, *optimizers.create_optimizer())


def compile_step(run: run_lib.Run, *, chip: topology_lib.Chip | None, topology: str,
                 step: str = 'train') -> Report:
  """Compiles `step` ('train' or 'infer') of `run` for its devices and reports on it."""
  return compile_trainer(build_trainer(run), run, chip=chip, topology=topology, step=step)


def compile_trainer(trainer: trainer_lib.Trainer, job: run_lib.Run, *,
                    chip: topology_lib.Chip | None, topology: str, step: str = 'train'
                    ) -> Report:
  """`compile_step` for a Trainer already built on the target's devices."""
  partitioner = trainer.partitioner
  devices = list(partitioner.mesh.devices.flat)
  layout_name = partitioner.layout
  state = trainer.abstract_state()
  params_bytes = per_chip_bytes(state['params'])
  opt_bytes = per_chip_bytes(state['opt_state'])
  batch = abstract_batch(job.batch_size, job.lengths, job.pack and step == 'train',
                         partitioner.data_sharding)
  start = time.perf_counter()
  try:
    if step == 'train':
      key = run_lib.abstract_key()
      programs = {'train_step': trainer.compile_train_step(state, batch, key)}
    else:
      programs = _compile_decoding(job, partitioner, state['params'], batch)
  except jax.errors.JaxRuntimeError as e:
    # The TPU compiler refuses a program that does not fit the chip's HBM.
    overflow = _out_of_memory(str(e))
    if overflow is None:
      raise
    return dataclasses.replace(
        _empty_report(devices, topology, step, layout_name, job),
        model_options=model_options(job),
        per_chip_gib=overflow[0], fits=False,
        hbm_gib=float(chip.hbm_gib) if chip is not None else overflow[1],
        params_gib=params_bytes / GIB, opt_state_gib=opt_bytes / GIB,
        compile_s=time.perf_counter() - start, error=str(e).strip().splitlines()[0][:500])
  compile_s = time.perf_counter() - start
  result = report(programs, chip=chip, devices=devices, topology=topology, step=step,
                  layout=layout_name, batch_size=job.batch_size, lengths=job.lengths,
                  params_bytes=params_bytes,
                  opt_state_bytes=opt_bytes if step == 'train' else 0, compile_s=compile_s)
  result.model_options = model_options(job)
  return result


_UNITS = {'': 1, 'B': 1, 'K': 2 ** 10, 'M': 2 ** 20, 'G': 2 ** 30, 'T': 2 ** 40}


def _out_of_memory(message: str) -> tuple[float, float] | None:
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


def _empty_report(devices, topology: str, step: str, layout: str, job: run_lib.Run) -> Report:
  nothing = {kind: {'count': 0, 'bytes': 0} for kind in COLLECTIVES}
  return Report(topology=topology, chips=len(devices), step=step, layout=layout,
                global_batch=job.batch_size, lengths=dict(job.lengths), argument_gib=0.0,
                output_gib=0.0, alias_gib=0.0, temp_gib=0.0, per_chip_gib=0.0,
                params_gib=0.0, opt_state_gib=0.0, hbm_gib=None, fits=None,
                flops_per_chip=0.0, hbm_bytes_per_chip=0.0, collectives=nothing,
                collective_bytes=0, roofline_step_s=None, mfu_bound=None, compile_s=0.0)


MODEL_OPTIONS = ('remat_policy', 'attention', 'scan_layers')


def model_options(job: run_lib.Run) -> dict[str, Any]:
  config = getattr(job.model.module, 'config', None)
  return {name: getattr(config, name) for name in MODEL_OPTIONS if hasattr(config, name)}


def _compile_decoding(job: run_lib.Run, partitioner: partitioning.Partitioner, params: Any,
                      batch: Mapping[str, jax.ShapeDtypeStruct]) -> dict[str, Any]:
  """The decode as `Inference` runs it: the encoder, then the decoding loop."""
  encode, loop = job.model.decoding_programs()
  inputs = {k: batch[k] for k in ('encoder_input_tokens', 'decoder_input_tokens')}
  param_shardings = jax.tree.map(lambda p: p.sharding, params)
  with partitioner.context():
    encoder = jax.jit(encode, in_shardings=(param_shardings, partitioner.data_sharding)
                      ).lower(params, inputs).compile()
    encoded, cache = jax.tree.map(
        lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh),
        jax.eval_shape(encode, params, inputs), encoder.output_shardings)
    decoder = jax.jit(loop, out_shardings=(partitioner.data_sharding,) * 2).lower(
        params, inputs, encoded, cache, run_lib.abstract_key()).compile()
  return {'encoder': encoder, 'loop': decoder}


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
  lines += [
      f'  arguments      {r.argument_gib:9.3f} GiB  (parameters {r.params_gib:.3f}, '
      f'optimizer state {r.opt_state_gib:.3f})',
      f'  outputs        {r.output_gib:9.3f} GiB  ({r.alias_gib:.3f} of them donated '
      f'arguments)',
      f'  temporaries    {r.temp_gib:9.3f} GiB',
      f'  total          {r.per_chip_gib:9.3f} GiB  of {hbm} HBM: {verdict}',
      f'  FLOPs / step   {r.flops_per_chip:9.3e}',
      f'  HBM bytes      {r.hbm_bytes_per_chip:9.3e}']
  for kind, stat in r.collectives.items():
    if stat['count']:
      lines.append(f'  {kind:<15}{stat["count"]:5d} ops, {stat["bytes"] / GIB:.3f} GiB')
  if not any(s['count'] for s in r.collectives.values()):
    lines.append('  collectives    none')
  if r.roofline_step_s is not None and chip is not None:
    lines.append(f'  roofline step  {r.roofline_step_s * 1e3:9.2f} ms  (bf16 peak '
                 f'{chip.peak_bf16_flops / 1e12:.0f} TFLOP/s, HBM '
                 f'{chip.hbm_bytes_per_s / 1e9:.0f} GB/s); MFU bound {r.mfu_bound:.0%}')
  return '\n'.join(lines)
