"""Ahead-of-time compiles of the train step and decoding for a slice one does not have.

The step is the runtime's own: the gin files give the model, the optimizer,
TASK_FEATURE_LENGTHS, BATCH_SIZE and NUM_MICROBATCHES as for `crosstask.train`; the
`Trainer` and `Partitioner` build it on compile-only devices (`runtime.topology`) or
on the local ones. Nothing reads data, so no SeqIO or TensorFlow is needed: the
vocabulary is not built (compiling does not tokenize) and the batch is abstract.

What a compile tells, per chip (`compile_report.Report`): the memory XLA planned,
the bytes of parameters and optimizer state from their shardings (computed here),
XLA's cost model, the collectives in the optimized program, a roofline step time.
"""

import dataclasses
import inspect
import math
import time
from typing import Any, Mapping, Sequence

import gin
import jax
import jax.numpy as jnp
import numpy as np

from crosstask.runtime import compile_report, model_flops
from crosstask.runtime import gin_utils, optimizers, partitioning, platform
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
class BatchError(ValueError):
  """A global batch that the data axis (or the microbatches) does not divide."""


@dataclasses.dataclass
class Job:
  """What the gin files say a train step is."""
  model: Any
  optimizer: Any
  schedule: Any
  batch_size: int
  lengths: dict[str, int]
  num_microbatches: int
  pack: bool
  config: Any  # the network's TransformerConfig


def _macro(name: str, default: Any) -> Any:
  try:
    value = gin.query_parameter(f'%{name}')
  except ValueError:
    return default
  if isinstance(value, gin.config.ConfigurableReference):
    return value.scoped_configurable_fn()
  return value


def load_job(gin_files: Sequence[str], bindings: Sequence[str] = ()) -> Job:
  """Parses the gin files (a model file, optionally a run file) as the entry points do.

  TASK_FEATURE_LENGTHS and BATCH_SIZE default to 512/512 and 128 when no file binds
  them; the run file's optimizer (`optimizers.create_optimizer`) is the one compiled.
  """
  gin.clear_config()
  gin_utils.parse(list(gin_files), list(_UNUSED_BY_COMPILE) + list(bindings),
                  search_paths=[str(gin_utils.PACKAGE_DIR.parent)], lock=False)
  model = _macro('MODEL', None)
  if model is None:
    raise gin_utils.GinConfigError(f'No MODEL bound by {list(gin_files)}: pass a model gin '
                                   'file first, e.g. --gin_file=t5_1_1/tiny.gin')
  lengths = dict(_macro('TASK_FEATURE_LENGTHS', DEFAULT_LENGTHS))
  if set(lengths) != {'inputs', 'targets'}:
    raise gin_utils.GinConfigError(f"TASK_FEATURE_LENGTHS={lengths}: a compile needs "
                                   "{'inputs': N, 'targets': M}")
  batch_size = int(_macro('BATCH_SIZE', DEFAULT_BATCH_SIZE))
  optimizer, schedule = optimizers.create_optimizer(param_axes=trainer_lib.param_logical_axes(
      model, _input_shapes(batch_size, lengths)))
  return Job(model=model, optimizer=optimizer, schedule=schedule,
             batch_size=batch_size, lengths=lengths,
             num_microbatches=int(_macro('NUM_MICROBATCHES', 1)),
             pack=bool(_macro('PACK', False)), config=getattr(model.module, 'config', None))


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
  """The gin-configured Partitioner on `devices`, with what it supports of the rest.

  `layout` and `num_slices` reach a Partitioner that has layout presets; without
  them only the data-parallel layout (with NUM_PARTITIONS) exists.
  """
  supports = inspect.signature(partitioning.Partitioner.__init__).parameters
  kwargs: dict[str, Any] = {'devices': list(devices)}
  if num_partitions is not None:
    kwargs['num_partitions'] = num_partitions
  if layout is not None:
    if 'layout' in supports:
      kwargs['layout'] = layout
    elif layout != 'data':
      raise ValueError(f'--layout={layout!r}: this Partitioner has no layout presets '
                       "(only the data-parallel 'data' layout with NUM_PARTITIONS).")
  if num_slices > 1 and 'num_slices' in supports:
    kwargs['num_slices'] = num_slices
  return partitioning.Partitioner(**kwargs)


def batch_shards(partitioner: partitioning.Partitioner) -> int:
  """How many ways the batch dimension is split (the data axes of the layout)."""
  spec = partitioner.data_sharding.spec
  axes = spec[0] if len(spec) else None
  if axes is None:
    return 1
  axes = (axes,) if isinstance(axes, str) else tuple(axes)
  return math.prod(partitioner.mesh.shape[a] for a in axes)


def check_batch(batch_size: int, num_microbatches: int, shards: int, where: str) -> None:
  if batch_size % shards:
    raise BatchError(f'BATCH_SIZE={batch_size} does not divide over the {shards}-way data '
                     f'axis of {where}; use a multiple of {shards}.')
  if num_microbatches > 1 and (batch_size % num_microbatches
                               or (batch_size // num_microbatches) % shards):
    raise BatchError(f'BATCH_SIZE={batch_size} in NUM_MICROBATCHES={num_microbatches} '
                     f'microbatches does not give each microbatch a multiple of the '
                     f'{shards}-way data axis of {where}.')


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


def _input_shapes(batch_size: int, lengths: dict[str, int]) -> dict[str, tuple[int, int]]:
  return {'encoder_input_tokens': (batch_size, lengths['inputs']),
          'decoder_input_tokens': (batch_size, lengths['targets'])}


def build_trainer(job: Job, partitioner: partitioning.Partitioner) -> trainer_lib.Trainer:
  return trainer_lib.Trainer(job.model, partitioner, job.optimizer, job.schedule,
                             _input_shapes(job.batch_size, job.lengths),
                             num_microbatches=job.num_microbatches)


def abstract_key() -> jax.ShapeDtypeStruct:
  """A PRNG key's shape and dtype: lowering on an eager key would place it on a device."""
  return jax.eval_shape(lambda: jax.random.key(0))


def compile_step(job: Job, devices: Sequence[jax.Device], *, chip: topology_lib.Chip | None,
                 topology: str, layout: str | None = None, step: str = 'train',
                 num_partitions: int | None = None, num_slices: int = 1) -> compile_report.Report:
  """Compiles `step` ('train' or 'infer') of `job` for `devices` and reports on it."""
  if step not in ('train', 'infer'):
    raise ValueError(f"--step={step!r}: expected 'train' or 'infer'")
  partitioner = make_partitioner(devices, layout, num_partitions, num_slices)
  # As the entry points do: a model left at 'auto' takes the target's profile (a TPU
  # slice: flash attention, full remat), not this machine's.
  model = platform.resolve_model(job.model, platform.for_mesh(partitioner.mesh))
  job = dataclasses.replace(job, model=model, config=getattr(model.module, 'config', None))
  layout_name = getattr(partitioner, 'layout', None) or layout or 'data'
  check_batch(job.batch_size, job.num_microbatches if step == 'train' else 1,
              batch_shards(partitioner), f'{topology} (layout {layout_name!r})')
  return compile_trainer(build_trainer(job, partitioner), job, chip=chip, topology=topology,
                         step=step)


def compile_trainer(trainer: trainer_lib.Trainer, job: Job, *,
                    chip: topology_lib.Chip | None, topology: str, step: str = 'train'
                    ) -> compile_report.Report:
  """`compile_step` for a Trainer already built on the target's devices."""
  partitioner = trainer.partitioner
  devices = list(partitioner.mesh.devices.flat)
  layout_name = getattr(partitioner, 'layout', None) or 'data'
  state = trainer.abstract_state()
  params_bytes = per_chip_bytes(state['params'])
  opt_bytes = per_chip_bytes(state['opt_state'])
  batch = abstract_batch(job.batch_size, job.lengths, job.pack and step == 'train',
                         partitioner.data_sharding)
  start = time.perf_counter()
  try:
    if step == 'train':
      programs = {'train_step': trainer.compile_train_step(state, batch, abstract_key())}
    else:
      programs = _compile_decoding(job, partitioner, state['params'], batch)
  except jax.errors.JaxRuntimeError as e:
    # The TPU compiler refuses a program that does not fit the chip's HBM.
    overflow = compile_report.out_of_memory(str(e))
    if overflow is None:
      raise
    return dataclasses.replace(
        compile_report.refused_report(devices, topology, step, layout_name, job.batch_size,
                                      job.lengths),
        model_options=model_options(job),
        per_chip_gib=overflow[0], fits=False,
        hbm_gib=float(chip.hbm_gib) if chip is not None else overflow[1],
        params_gib=params_bytes / GIB, opt_state_gib=opt_bytes / GIB,
        compile_s=time.perf_counter() - start, error=str(e).strip().splitlines()[0][:500])
  compile_s = time.perf_counter() - start
  result = compile_report.report(
      programs, chip=chip, devices=devices, topology=topology, step=step,
      layout=layout_name, batch_size=job.batch_size, lengths=job.lengths,
      params_bytes=params_bytes, opt_state_bytes=opt_bytes if step == 'train' else 0,
      compile_s=compile_s, **_step_flops(job, step))
  result.model_options = model_options(job)
  return result


def _step_flops(job: Job, step: str) -> dict[str, float]:
  """The train step's model FLOPs, without and with remat's recompute, for the prediction.

  Counted from the config (every layer) because XLA's cost model counts a scanned
  stack's body once; none for decoding, whose length the compile does not fix.
  """
  if step != 'train' or job.config is None:
    return {}
  shape = (job.config, job.batch_size, job.lengths['inputs'], job.lengths['targets'])
  return {'model_flops': model_flops.train_step(*shape),
          'executed_flops': model_flops.executed_train_step(*shape)}


MODEL_OPTIONS = ('remat_policy', 'attention', 'scan_layers')


def model_options(job: Job) -> dict[str, Any]:
  return {name: getattr(job.config, name) for name in MODEL_OPTIONS
          if hasattr(job.config, name)}


def _compile_decoding(job: Job, partitioner: partitioning.Partitioner, params: Any,
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
        params, inputs, encoded, cache, abstract_key()).compile()
  return {'encoder': encoder, 'loop': decoder}
