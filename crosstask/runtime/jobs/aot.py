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

import contextlib
import dataclasses
import math
import time
from typing import Any, Mapping, Sequence

import gin
import jax
import jax.numpy as jnp
import numpy as np

from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.sharding import compile_report
from crosstask.runtime.sharding import model_flops
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.sharding import topology as topology_lib
from crosstask.runtime.state import optimizers
from crosstask.runtime.state import trainer as trainer_lib

GIB = topology_lib.GIB
DEFAULT_LENGTHS = {'inputs': 512, 'targets': 512}
DEFAULT_BATCH_SIZE = 128
# Sizes come from the network config: no tokenizer is built, whatever the files bind.
_NO_VOCABULARY = 'VOCABULARY = None'
# Macros a run file may require that a compile never uses (no data, no model dir), bound
# only where the files leave them unset: a run file's TRAIN_STEPS gives the hours.
_UNUSED_BY_COMPILE = {
    'MODEL_DIR': "'/compile-only/no-model-dir'",
    'MIXTURE_OR_TASK_NAME': "'compile_only'",
    'TRAIN_STEPS': '1',
}


# The macros load_run reads itself, whether or not a gin file refers to them.
_READ_BY_COMPILE = ('MODEL', 'TASK_FEATURE_LENGTHS', 'BATCH_SIZE', 'PACK', 'NUM_MICROBATCHES',
                    'TRAIN_STEPS')


def load_run(gin_files: Sequence[str], bindings: Sequence[str],
             devices: Sequence[jax.Device], *, layout: str | None = None,
             num_partitions: int | None = None, num_slices: int = 1,
             step: str = 'train') -> run_lib.Run:
  """The Run the gin files (a model file, optionally a run file) describe, on `devices`.

  Parsed as the entry points do; TASK_FEATURE_LENGTHS and BATCH_SIZE default to
  512/512 and 128 when no file binds them. A model left at 'auto' takes the
  target's profile (a TPU slice: flash attention, full remat), not this machine's.
  The Run's `train_steps` are the files' and bindings' TRAIN_STEPS where that is a
  number, for the predicted hours.
  """
  if step not in ('train', 'infer'):
    raise ValueError(f"--step={step!r}: expected 'train' or 'infer'")
  gin.clear_config()
  placed = gin_utils.parse(list(gin_files), [_NO_VOCABULARY, *bindings],
                           search_paths=[str(gin_utils.PACKAGE_DIR.parent)], lock=False,
                           placeholders=_UNUSED_BY_COMPILE)
  gin_utils.check_macros_read(bindings, read_by_code=_READ_BY_COMPILE, files=gin_files,
                              search_paths=[str(gin_utils.PACKAGE_DIR.parent)])
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
      num_microbatches=int(gin_utils.query('%NUM_MICROBATCHES', 1)) if step == 'train' else 1,
      train_steps=None if 'TRAIN_STEPS' in placed else _train_steps())


def _train_steps() -> int | None:
  """The parsed TRAIN_STEPS where it is a positive number; None where it is computed
  (an epoch count from data, say), which a compile does not evaluate."""
  steps = gin.query_parameter('%TRAIN_STEPS')
  return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 else None


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


def build_trainer(run: run_lib.Run) -> trainer_lib.Trainer:
  """The run's Trainer with the gin-configured optimizer (the run file's), which
  factors each parameter by its logical axes."""
  optimizer, schedule = optimizers.create_optimizer(param_axes=run.param_axes)
  return trainer_lib.Trainer(run, optimizer, schedule)


def compile_step(run: run_lib.Run, *, chip: topology_lib.Chip | None, topology: str,
                 step: str = 'train') -> compile_report.Report:
  """Compiles `step` ('train' or 'infer') of `run` for its devices and reports on it."""
  return compile_trainer(build_trainer(run), run, chip=chip, topology=topology, step=step)


def compile_trainer(trainer: trainer_lib.Trainer, job: run_lib.Run, *,
                    chip: topology_lib.Chip | None, topology: str, step: str = 'train'
                    ) -> compile_report.Report:
  """`compile_step` for a Trainer already built on the target's devices."""
  partitioner = trainer.partitioner
  devices = list(partitioner.mesh.devices.flat)
  layout_name = partitioner.layout
  state = trainer.abstract_state()
  batch = abstract_batch(job.batch_size, job.lengths, job.pack and step == 'train',
                         partitioner.data_sharding)
  # The target's generator, not this process's: a TPU or GPU run draws its dropout
  # masks with the hardware generator (the profile's), a different program from the
  # threefry a CPU process defaults to. LongLM large fine-tuning (dropout 0.1, OutGen
  # 128/512, batch 128, v5e-8) plans 6.95 GiB a chip and a 2.33 s step with it; with
  # threefry the plan said 6.47 GiB and 1.92 s.
  key = run_lib.abstract_key(job.profile.prng_impl)
  start = time.perf_counter()
  try:
    with _no_persistent_cache_entries(devices):
      if step == 'train':
        programs = {'train_step': trainer.compile_train_step(state, batch, key)}
      else:
        programs = _compile_decoding(job, partitioner, state['params'], batch, key)
  except jax.errors.JaxRuntimeError as e:
    # The TPU compiler refuses a program that does not fit the chip's HBM.
    overflow = compile_report.out_of_memory(str(e))
    if overflow is None:
      raise
    return dataclasses.replace(
        compile_report.refused_report(devices, topology, step, layout_name, job.batch_size,
                                      job.lengths),
        model_options=model_options(job), prng_impl=job.profile.prng_impl,
        per_chip_gib=overflow[0], fits=False,
        hbm_gib=float(chip.hbm_gib) if chip is not None else overflow[1],
        params_gib=per_chip_bytes(state['params']) / GIB,
        opt_state_gib=per_chip_bytes(state['opt_state']) / GIB,
        compile_s=time.perf_counter() - start, error=str(e).strip().splitlines()[0][:500])
  result = report_programs(trainer, job, programs, chip=chip, topology=topology, step=step,
                           compile_s=time.perf_counter() - start)
  result.prng_impl = job.profile.prng_impl
  return result


@contextlib.contextmanager
def _no_persistent_cache_entries(devices: Sequence[jax.Device]):
  """Compiles for compile-only devices (a TPU slice described by libtpu) write nothing
  to JAX's persistent compilation cache, where one is set: no client can load such an
  entry back, so writing it cost time (0.4 s a tiny-model step on 2 cores, 2.3 MB) and
  the next compile of the same program warned that the entry could not be read. JAX
  checks the minimum compile time for each entry it writes; it is restored after."""
  if type(getattr(devices[0], 'client', None)).__name__ != 'CompileOnlyPyClient':
    yield
    return
  before = jax.config.jax_persistent_cache_min_compile_time_secs
  jax.config.update('jax_persistent_cache_min_compile_time_secs', float('inf'))
  try:
    yield
  finally:
    jax.config.update('jax_persistent_cache_min_compile_time_secs', before)


def report_programs(trainer: trainer_lib.Trainer, job: run_lib.Run,
                    programs: Mapping[str, Any], *, chip: topology_lib.Chip | None,
                    topology: str, step: str = 'train', compile_s: float = 0.0
                    ) -> compile_report.Report:
  """The report on programs already compiled for `job` (e.g. the train step a run has
  just compiled, `Trainer.compiled_train_step`), with the roofline prediction for `chip`:
  how a measured step is set beside what `crosstask.compile` predicts for it."""
  state = trainer.abstract_state()
  result = compile_report.report(
      programs, chip=chip, devices=list(trainer.partitioner.mesh.devices.flat),
      topology=topology, step=step, layout=trainer.partitioner.layout,
      batch_size=job.batch_size, lengths=job.lengths,
      params_bytes=per_chip_bytes(state['params']),
      opt_state_bytes=per_chip_bytes(state['opt_state']) if step == 'train' else 0,
      compile_s=compile_s, **_step_flops(job, step))
  result.model_options = model_options(job)
  return result


def _step_flops(job: run_lib.Run, step: str) -> dict[str, float]:
  """The train step's model FLOPs, without and with remat's recompute, for the prediction.

  Counted from the config (every layer) because XLA's cost model counts a scanned
  stack's body once; none for decoding, whose length the compile does not fix.
  """
  shape = model_flops.train_shape(job.model, job.input_shapes) if step == 'train' else None
  if shape is None:
    return {}
  return {'model_flops': model_flops.train_step(*shape),
          'executed_flops': model_flops.executed_train_step(*shape)}


MODEL_OPTIONS = ('remat_policy', 'attention', 'scan_layers')


def model_options(job: run_lib.Run) -> dict[str, Any]:
  config = getattr(job.model.module, 'config', None)
  return {name: getattr(config, name) for name in MODEL_OPTIONS if hasattr(config, name)}


def _compile_decoding(job: run_lib.Run, partitioner: partitioning.Partitioner, params: Any,
                      batch: Mapping[str, jax.ShapeDtypeStruct], key: jax.ShapeDtypeStruct
                      ) -> dict[str, Any]:
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
        params, inputs, encoded, cache, key).compile()
  return {'encoder': encoder, 'loop': decoder}
