"""Per-platform settings (CPU, GPU, TPU) in one place: the runtime's, never the model's.

A `Profile` holds what differs between the backends JAX runs on: the XLA options the
train step and the two decoding programs compile with, whether glibc's allocator is
tuned for XLA:CPU's per-step temporaries, the PRNG implementation, and the defaults the
model takes for its attention kernel and rematerialisation. `profile()` picks one from
the backend (the mesh's devices, else `jax.default_backend()`) unless gin names it:

    platform.profile.name = 'gpu'
    platform.profile.compilation_cache_dir = '/tmp/jax_cache'

The entry points call `prepare_host(job)` before anything starts threads (the allocator
settings must precede the first allocations, so that step reads only the
environment), then `apply(profile())` once gin is parsed (PRNG and compilation cache).

The console's start-up settings (TensorFlow's lines and unactionable library warnings
off the console, TensorFlow off the GPUs) are `crosstask.startup`'s: the task layer's
command lines call them too, and it imports nothing of the runtime.

This module imports JAX only inside its functions: `prepare_host` runs before it starts.
"""

import copy
import dataclasses
import gc
import glob
import importlib.metadata
import importlib.util
import logging
import os
import sys
import types
from typing import Any, Mapping

import gin

from crosstask.runtime.config import host_memory

PLATFORMS = ('cpu', 'gpu', 'tpu')
JOBS = ('train', 'infer')
# The programs a decode compiles as (see EncoderDecoderModel.decoding_programs).
DECODING_PROGRAMS = ('encoder', 'loop')
# JAX's names for a backend -> the profile that serves it.
_BACKEND_ALIASES = {'cpu': 'cpu', 'gpu': 'gpu', 'cuda': 'gpu', 'rocm': 'gpu', 'tpu': 'tpu'}
# TransformerConfig fields a model may leave at 'auto', and the Profile field that fills
# each in.
_AUTO_FIELDS = {'attention': 'attention', 'remat_policy': 'remat', 'scan_unroll': 'scan_unroll'}
# Compute dtypes cuDNN's fused attention accepts.
_HALF = ('bfloat16', 'float16')


@dataclasses.dataclass(frozen=True)
class Profile:
  """What the runtime sets differently per platform.

  train_compiler_options / encoder_compiler_options / loop_compiler_options: XLA
    options the train step and the decoding programs compile with ({}: XLA's own).
  tune_host_malloc: whether the entry points set glibc's allocator for XLA:CPU's
    per-step temporaries (see `host_memory`); on an accelerator they live on the device.
  prng_impl: `jax_default_prng_impl`. On accelerators the hardware generator ('rbg'
    family, as T5X sets it) is far cheaper than threefry for dropout masks over every
    attention score; CPU keeps threefry, JAX's default, so its results do not change.
  attention: the attention kernel a model set to 'auto' uses: 'xla' (plain einsums),
    'cudnn' (jax.nn.dot_product_attention's fused kernel) or 'flash' (Pallas, TPU).
  remat: the remat policy a model set to 'auto' trains with. Device memory is what
    limits the batch on an accelerator; on CPU host memory is plentiful and
    recomputation only costs time.
  scan_unroll: layers per iteration of a scanned stack (a model's scan_unroll 'auto'),
    or 'full' (no loop): each iteration copies the stacked residuals it saves for the
    backward pass.
  compilation_cache_dir: JAX's persistent compilation cache, None for none.
  """
  name: str
  train_compiler_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  encoder_compiler_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  loop_compiler_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  tune_host_malloc: bool = False
  prng_impl: str = 'threefry2x32'
  attention: str = 'xla'
  remat: str = 'none'
  scan_unroll: int | str = 1
  compilation_cache_dir: str | None = None

  def __post_init__(self):
    if self.name not in PLATFORMS:
      raise ValueError(f'Profile.name={self.name!r}: expected one of {PLATFORMS}')
    for field in ('train_compiler_options', 'encoder_compiler_options',
                  'loop_compiler_options'):
      object.__setattr__(self, field, types.MappingProxyType(dict(getattr(self, field))))

  def decoding_compiler_options(self, program: str) -> dict[str, Any]:
    """The XLA options decoding's 'encoder' or 'loop' program compiles with."""
    if program not in DECODING_PROGRAMS:
      raise ValueError(f'program={program!r}: expected one of {DECODING_PROGRAMS}')
    return dict(self.encoder_compiler_options if program == 'encoder'
                else self.loop_compiler_options)


# Only plain XLA options that hold on any x86 CPU. Training: the memory-optimized
# scheduler orders the step for a lower peak of temporaries. Decoding: XLA:CPU's
# tree-reduction rewrite splits each reduction (the RMS norms' d_model, the softmaxes'
# keys) into a reduce-window and a reduce that no fusion takes, so each norm and each
# score tensor gets passes of its own; kept whole, they fuse with their neighbours.
_CPU_DECODING = {'xla_disable_hlo_passes': 'tree_reduction_rewriter'}
PROFILES = {
    'cpu': Profile(
        name='cpu',
        train_compiler_options={'xla_cpu_scheduler_type': 'CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED'},
        encoder_compiler_options=_CPU_DECODING, loop_compiler_options=_CPU_DECODING,
        tune_host_malloc=True, prng_impl='threefry2x32', attention='xla', remat='none'),
    # XLA's defaults are the tuned ones on accelerators; gin can still add options.
    # Chosen by measurement on an H100 (benchmarks/README.md, GPU): cuDNN attention is
    # faster and smaller than the XLA path at equal batch; 'dots' remat fits a larger
    # batch at a higher MFU than none, and 'dots_attention' (also keeping the attention
    # kernel's outputs) is 2.6% faster than 'dots' at batch 64 for 4.3 GiB more; two
    # layers per scan iteration 1.9% faster again (LongLM-large, batch 64; T5 1.1 base
    # 2.3%) for ~1.9 GiB more. XLA's defaults stay: no flag tried there paid.
    'gpu': Profile(name='gpu', prng_impl='unsafe_rbg', attention='cudnn',
                   remat='dots_attention', scan_unroll=2),
    'tpu': Profile(name='tpu', prng_impl='unsafe_rbg', attention='flash', remat='full'),
}


@gin.configurable(module='platform')
def profile(name: str | None = None, *, backend: str | None = None,
            train_compiler_options: Mapping[str, Any] | None = None,
            decode_compiler_options: Mapping[str, Any] | None = None,
            compilation_cache_dir: str | None = None) -> Profile:
  """The profile in force: gin's `platform.profile.name`, else the one for `backend`
  (a device's `.platform` or `jax.default_backend()`, which is asked when neither is
  given).

  train_compiler_options / decode_compiler_options (both decoding programs) replace the
  platform's XLA options ({} keeps XLA's defaults), e.g. to try an option on one run.
  """
  if name is not None:
    if name not in PLATFORMS:
      raise ValueError(f'platform.profile.name={name!r}: expected one of {PLATFORMS}')
    chosen = PROFILES[name]
  else:
    if backend is None:
      import jax  # pylint: disable=import-outside-toplevel
      backend = jax.default_backend()
    if backend not in _BACKEND_ALIASES:
      raise ValueError(f'No platform profile for backend {backend!r}; name one with '
                       f'platform.profile.name (one of {PLATFORMS})')
    chosen = PROFILES[_BACKEND_ALIASES[backend]]
  changes: dict[str, Any] = {}
  if train_compiler_options is not None:
    changes['train_compiler_options'] = train_compiler_options
  if decode_compiler_options is not None:
    changes.update(encoder_compiler_options=decode_compiler_options,
                   loop_compiler_options=decode_compiler_options)
  if compilation_cache_dir is not None:
    changes['compilation_cache_dir'] = compilation_cache_dir
  return dataclasses.replace(chosen, **changes) if changes else chosen


def for_mesh(mesh: Any) -> Profile:
  """The profile for the devices of `mesh` (gin's `platform.profile.name` wins)."""
  return profile(backend=mesh.devices.flat[0].platform)


def backend_from_environment() -> str:
  """'cpu', 'gpu' or 'tpu': the backend JAX will use, told without starting JAX.

  JAX_PLATFORMS decides where set. Otherwise an accelerator counts only when both its
  JAX plugin and its devices are present: the `libtpu` wheel installed on a machine
  without TPU chips (to compile for a TPU slice ahead of time) leaves JAX on the CPU,
  and so does a CUDA plugin without a GPU.
  """
  requested = [p.strip() for p in os.environ.get('JAX_PLATFORMS', '').split(',') if p.strip()]
  if requested:
    return _BACKEND_ALIASES.get(requested[0], 'cpu')
  if _has_tpu_chips() and importlib.util.find_spec('libtpu'):
    return 'tpu'
  gpu_plugins = [p for p in importlib.metadata.entry_points(group='jax_plugins')
                 if 'cuda' in p.name or 'rocm' in p.name]
  if gpu_plugins and any(os.path.exists(d) for d in ('/dev/nvidiactl', '/dev/nvidia0', '/dev/kfd')):
    return 'gpu'
  return 'cpu'


def _has_tpu_chips() -> bool:
  """Whether a Google TPU is attached over PCI (vendor 0x1ae0), read from sysfs."""
  for vendor in glob.glob('/sys/bus/pci/devices/*/vendor'):
    try:
      with open(vendor, encoding='ascii') as f:
        if f.read().strip() == '0x1ae0':
          return True
    except OSError:
      continue
  return False


def keep_jax_off_absent_tpus(backend: str) -> None:
  """Pins JAX to the CPU where the libtpu wheel is installed but no TPU is attached.

  JAX would otherwise try to start libtpu first, which prints warnings about the
  missing TPU and delays start-up, on every CPU run of a `crosstask[tpu]` install.
  JAX_PLATFORMS, where set, is left alone.
  """
  if backend != 'cpu' or os.environ.get('JAX_PLATFORMS') or not importlib.util.find_spec('libtpu'):
    return
  os.environ['JAX_PLATFORMS'] = 'cpu'
  if 'jax' in sys.modules:  # JAX reads the variable at import; tell a loaded one too.
    sys.modules['jax'].config.update('jax_platforms', 'cpu')


# Python's cyclic collector, for a process that imports TensorFlow, JAX and SeqIO (about
# 1.5M long-lived objects). At Python's defaults (700, 10, 10) every tenth collection of
# the middle generation is a full one, which walks them all: ten full passes, 1.9 s of a
# 12 s tiny training run on CPU. A first threshold of 50,000 still frees young cycles,
# in fewer passes, and start-up never reaches a full one (that run: 13.0 -> 11.8 s, the
# same peak memory). Over a long run full passes are as rare, each a host pause of ~0.2 s.
GC_THRESHOLDS = (50_000, 20, 20)


def prepare_host(job: str) -> str:
  """The allocator settings of `job` ('train' or 'infer') for the environment's
  platform, and the collector's (GC_THRESHOLDS); returns what was done to the
  allocator. Call first thing, before JAX or TensorFlow start threads (gin is not
  parsed yet, so the environment decides, not gin's profile name).
  """
  if job not in JOBS:
    raise ValueError(f'job={job!r}: expected one of {JOBS}')
  backend = backend_from_environment()
  keep_jax_off_absent_tpus(backend)
  malloc = host_memory.tune_for_xla_cpu(one_arena=job == 'train',
                                        accelerator=None if PROFILES[backend].tune_host_malloc
                                        else backend)
  gc.set_threshold(*GC_THRESHOLDS)
  return malloc


def apply(chosen: Profile) -> None:
  """Sets the profile's process-wide JAX settings: the PRNG implementation and the
  persistent compilation cache. Call before the first key is made."""
  import jax  # pylint: disable=import-outside-toplevel
  jax.config.update('jax_default_prng_impl', chosen.prng_impl)
  if chosen.compilation_cache_dir:
    jax.config.update('jax_compilation_cache_dir', chosen.compilation_cache_dir)
  logging.info('platform profile: %s', chosen)


def resolve_model(model: Any, chosen: Profile) -> Any:
  """`model` with its config's 'auto' attention / remat / scan unroll replaced by the
  profile's, and the Pallas decoding kernel interpreted off a GPU.

  Returns a shallow copy (the caller's model is unchanged), or `model` itself when
  nothing is 'auto' (or the config has no such field).
  """
  config = getattr(getattr(model, 'module', None), 'config', None)
  if config is None or not dataclasses.is_dataclass(config):
    return model
  changes = {field: getattr(chosen, source) for field, source in _AUTO_FIELDS.items()
             if getattr(config, field, None) == 'auto'}
  if changes.get('attention') == 'cudnn' and getattr(config, 'dtype', None) not in _HALF:
    # cuDNN's fused kernel takes half precision only; a float32 model gets XLA's
    # version of the same call.
    changes['attention'] = 'dot_product'
  kernel = getattr(config, 'decode_cross_attention', None)
  if kernel is not None and decoding_kernel(kernel, chosen) != kernel:
    changes['decode_cross_attention'] = decoding_kernel(kernel, chosen)
  if not changes:
    return model
  resolved = copy.copy(model)
  resolved.module = model.module.clone(config=dataclasses.replace(config, **changes))
  return resolved


def decoding_kernel(decode_cross_attention: str, chosen: Profile) -> str:
  """A config's `decode_cross_attention` as `chosen`'s platform runs it: the Pallas
  decoding kernel is written for GPUs; elsewhere its interpreter runs it."""
  if decode_cross_attention == 'pallas' and chosen.name != 'gpu':
    return 'pallas_interpret'
  return decode_cross_attention


def raise_if_options_refused(error: Exception, binding: str,
                             options: Mapping[str, Any] | None) -> None:
  """Raises a ValueError naming `binding` if `error` is XLA refusing one of `options`."""
  if options and any(name in str(error) for name in options):
    raise ValueError(f'{binding}={dict(options)!r} (set it to {{}} for XLA\'s defaults): '
                     f'{error}') from error
