"""glibc malloc settings that keep XLA:CPU's per-step temporaries in the heap.

XLA:CPU allocates a compiled step's temporaries as one large block on every
execution. glibc serves a block that large with a fresh `mmap` and hands it back
with `munmap`, so the kernel zero-fills every page of it again at each step. With
no `mmap` for large blocks and no trimming of the heap's top, the block is reused
from step to step; with one arena (training) it is reused whichever thread asks.

The settings must be made before JAX's threads first allocate (each thread takes
its own arena then), so the entry points make them first thing, through
`platform.prepare_host`, which decides whether JAX will run on the CPU at all. The
costs: one arena slows decoding, whose threads make many small allocations a step,
so inference jobs keep glibc's arenas and take only the other two settings; and
freed memory stays with the process (see `release_freed`).
"""

import ctypes
import logging
import os

# 'system': leave glibc's defaults; 'xla_cpu': tune even with an accelerator installed.
ENV = 'CROSSTASK_MALLOC'

# mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -4, -8
# mallopt(3): -1 turns trimming off. A finite threshold (at most 2 GiB, mallopt takes an
# int) would still hand back, and fault in again, temporaries larger than itself.
TRIM_THRESHOLD = -1


def tune_for_xla_cpu(one_arena: bool = True, accelerator: str | None = None) -> str:
  """Sets no mmap'd blocks, no trimming of the heap and (training) one arena with
  synchronous CPU dispatch; returns what it did. `one_arena=False` is the inference
  entry points' choice (see above).

  Skipped (and said why) without glibc, with malloc settings already in
  GLIBC_TUNABLES, when $CROSSTASK_MALLOC is 'system', or when JAX will run on
  `accelerator` (its step temporaries live on the device there; set
  CROSSTASK_MALLOC=xla_cpu to tune anyway).
  """
  choice = os.environ.get(ENV, '').strip()
  if choice not in ('', 'system', 'xla_cpu'):
    raise ValueError(f"${ENV}={choice!r}: expected 'system', 'xla_cpu' or unset")
  if choice == 'system':
    return f'glibc defaults (${ENV}=system)'
  if 'glibc.malloc.' in os.environ.get('GLIBC_TUNABLES', ''):
    return 'malloc settings from GLIBC_TUNABLES'
  if accelerator and choice != 'xla_cpu':
    return f'glibc defaults (JAX will use {accelerator})'
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

  With async dispatch, the next step's block is sometimes allocated before the
  last one is freed, and the one heap then keeps both from that step on. Set
  before JAX creates its CPU client.
  """
  import jax  # pylint: disable=import-outside-toplevel  # importing starts no backend
  jax.config.update('jax_cpu_enable_async_dispatch', False)


def release_freed() -> None:
  """Returns freed heap pages to the OS (the Trainer's call after compiling its step).

  glibc keeps them mapped otherwise, so the compiler's working memory stays in
  the process's peak; with trimming off (above),
  only this call hands them back. A no-op without glibc.
  """
  try:
    ctypes.CDLL(None).malloc_trim(0)
  except (OSError, AttributeError):
    pass
