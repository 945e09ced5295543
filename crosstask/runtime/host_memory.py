"""glibc malloc settings that keep XLA:CPU's per-step temporaries in the heap.

XLA:CPU allocates a compiled step's temporaries (about 1.3 GB for a T5 1.1 small
training step at 8 x 256/64) as one block on every execution, from one of its
worker threads. glibc serves a block that large with a fresh `mmap` and hands it
back with `munmap`, so the kernel zero-fills over 300,000 new pages each step:
12% of the step's CPU samples in `perf`. With one arena, no `mmap` for large
blocks and no trimming of the heap's top, the block is reused from step to step.
In alternating runs the small step ran 1.26x and 1.48x faster at 8 x 256/64 (same
peak RSS) and 1.37x at 8 x 512/64 (see benchmarks/README.md).

The settings must be made before JAX's threads first allocate (each thread takes
its own arena then), so the entry points (and the demo) call `tune_for_xla_cpu`
first thing; a program that uses the runtime as a library can do the same before
its first JAX computation. The costs:
- one arena slows decoding, whose threads make many small allocations a step (tiny
  greedy b8 took 0.184 s against 0.137 s). So infer, eval and the embedding jobs
  (`one_arena=False`) keep glibc's arenas and take only the other two settings.
  A block that fits in a thread's heap (at most 64 MB) then stays in the heap of the
  thread that served it; a larger one is still mapped anew when the thread that
  allocates it has an arena of its own (the small encoder's 114 MB at 32 x 256:
  29,000 faults a call). The tiny encoder's 53 MB of temporaries at 32 x 256 stopped
  faulting (200 pages a call against 14,000) and it ran 1.24x faster; tiny greedy
  b32 1.08x, small beam-4 b8 1.05x, tiny greedy b8 the same (benchmarks/README.md);
- freed memory stays with the process, and one heap fragments (peak RSS at
  8 x 512/64: 6.6 GB against 4.3 GB untuned, HF PyTorch's 7.9 GB). Training also
  executes on the calling thread: with async dispatch the heap at 8 x 256/64 took
  one more block of step temporaries at some step of 20 and held it (4.0 GB against
  2.85 GB; see _dispatch_on_the_calling_thread).
"""

import ctypes
import importlib.metadata
import importlib.util
import logging
import os

# 'system': leave glibc's defaults; 'xla_cpu': tune even with an accelerator installed.
ENV = 'CROSSTASK_MALLOC'

# mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -4, -8
# mallopt(3): -1 turns trimming off. A finite threshold (at most 2 GiB, mallopt takes an
# int) would still hand back, and fault in again, temporaries larger than itself: at
# 8 x 512/64 the small step ran 1.37x faster without trimming than with glibc's defaults,
# but 0.90x with a 2 GiB threshold.
TRIM_THRESHOLD = -1


def _accelerator_platform() -> str | None:
  """The first non-CPU JAX platform this process may use, found without starting JAX."""
  requested = [p.strip() for p in os.environ.get('JAX_PLATFORMS', '').split(',') if p.strip()]
  if requested:
    return next((p for p in requested if p != 'cpu'), None)
  plugins = importlib.metadata.entry_points(group='jax_plugins')  # e.g. jax-cuda12-plugin
  if plugins:
    return next(iter(plugins)).name
  if importlib.util.find_spec('jax_plugins'):  # the older namespace-package plugins
    return 'jax_plugins'
  return 'tpu' if importlib.util.find_spec('libtpu') else None


def tune_for_xla_cpu(one_arena: bool = True) -> str:
  """Sets no mmap'd blocks, no trimming of the heap and (training) one arena with
  synchronous CPU dispatch; returns what it did. `one_arena=False` is the inference
  entry points' choice (see above).

  Skipped (and said why) without glibc, with malloc settings already in
  GLIBC_TUNABLES, when $CROSSTASK_MALLOC is 'system', or when JAX may run on an
  accelerator (its step temporaries live on the device there; set
  CROSSTASK_MALLOC=xla_cpu to tune anyway).
  """
  choice = os.environ.get(ENV, '').strip()
  if choice not in ('', 'system', 'xla_cpu'):
    raise ValueError(f"${ENV}={choice!r}: expected 'system', 'xla_cpu' or unset")
  if choice == 'system':
    return f'glibc defaults (${ENV}=system)'
  if 'glibc.malloc.' in os.environ.get('GLIBC_TUNABLES', ''):
    return 'malloc settings from GLIBC_TUNABLES'
  platform = _accelerator_platform()
  if platform and choice != 'xla_cpu':
    return f'glibc defaults (JAX may use {platform})'
  try:
    libc = ctypes.CDLL(None)
    libc.gnu_get_libc_version  # pylint: disable=pointless-statement  # glibc only
  except (OSError, AttributeError):
    return 'system malloc (not glibc)'
  settings = ((_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
  if one_arena:
    settings = ((_M_ARENA_MAX, 1),) + settings
  failed = [param for param, value in settings if libc.mallopt(param, value) != 1]
  if failed:
    logging.warning('mallopt refused parameters %s; malloc left partly tuned', failed)
    return f'partly tuned (mallopt refused {failed})'
  if one_arena:
    _dispatch_on_the_calling_thread()
    return 'one arena, no mmap for large blocks, no trimming, synchronous CPU dispatch'
  return 'no mmap for large blocks, no trimming'


def _dispatch_on_the_calling_thread() -> None:
  """Each step's temporaries are freed before the next step allocates its own.

  With async dispatch, the next step's block was sometimes allocated before the
  last one was freed, and the one heap then kept both: the T5 small step at
  8 x 256/64 held 4.0 GB instead of 2.85 GB from some step on. Executed on the
  calling thread it stayed at 2.86-2.87 GB over 25 steps, and the step took about
  as long (benchmarks/README.md). Set before JAX creates its CPU client.
  """
  import jax  # pylint: disable=import-outside-toplevel  # importing starts no backend
  jax.config.update('jax_cpu_enable_async_dispatch', False)


def release_freed() -> None:
  """Returns freed heap pages to the OS (the Trainer's call after compiling its step).

  glibc keeps them mapped otherwise, so the compiler's working memory (hundreds of
  MB for a T5 small step) stays in the process's peak; with trimming off (above),
  only this call hands them back. A no-op without glibc.
  """
  try:
    ctypes.CDLL(None).malloc_trim(0)
  except (OSError, AttributeError):
    pass
