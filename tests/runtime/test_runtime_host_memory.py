"""The entry points' malloc settings on CPU: XLA:CPU's step temporaries stop costing
page faults.

The tuned cases run in subprocesses: the settings hold for a whole process and must
come before JAX's threads first allocate, so pytest's own process is never tuned.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import xla_test_flags
from crosstask.runtime.config import host_memory
from crosstask.runtime.config import platform

REPO = pathlib.Path(__file__).resolve().parents[2]

# Runs a jitted function with n x n float32 inputs (temporaries: ~200 MB at n=4096,
# ~50 MB at 2048) through the entry points' own `gin_utils.run_main` (argv[1]:
# 'train' or 'infer' as those entry points call it; argv[2]: n), and reports page
# faults per call and glibc's arena count.
_JOB = r"""
import ctypes, json, os, re, resource, sys, tempfile
from crosstask.runtime.config import gin_utils

def arenas():
  libc = ctypes.CDLL(None)
  libc.fdopen.restype = ctypes.c_void_p
  libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
  libc.fclose.argtypes = [ctypes.c_void_p]
  with tempfile.TemporaryFile('w+') as f:
    stream = libc.fdopen(os.dup(f.fileno()), b'w')
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    f.seek(0)
    return len(re.findall('<heap nr=', f.read()))

def job():
  import jax, jax.numpy as jnp
  f = jax.jit(lambda x: (jnp.cumsum(jnp.sin(x), 0) * jnp.cumsum(jnp.cos(x), 1)).sum())
  n = int(sys.argv[2])
  x = jnp.arange(n * n, dtype=jnp.float32).reshape(n, n) * 1e-3
  temps = f.lower(x).compile().memory_analysis().temp_size_in_bytes
  for _ in range(2):
    f(x).block_until_ready()
  faults = []
  for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    f(x).block_until_ready()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
  print(json.dumps({'faults': faults, 'temp_pages': temps / 4096, 'arenas': arenas(),
                    'async_dispatch': jax.config.values['jax_cpu_enable_async_dispatch']}))

gin_utils.run_main(job, ['--gin_search_paths=' + tempfile.gettempdir()], job=sys.argv[1])
"""


def _run_job(entry_point: str, n: int = 4096, **env_vars: str) -> dict:
  env = {k: v for k, v in os.environ.items()
         if k not in ('GLIBC_TUNABLES', 'JAX_PLATFORMS', host_memory.ENV)}
  # XLA's optimised code: the job runs more than it compiles (the 4096 jobs 8 -> 4 s
  # each); the temporaries, hence the pages counted, are the same either way.
  env.update(JAX_PLATFORMS='cpu', XLA_FLAGS=xla_test_flags.flags(1, compile_speed=False),
             **env_vars)
  out = subprocess.run([sys.executable, '-c', _JOB, entry_point, str(n)], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow(seconds=16)
@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='glibc malloc settings')
def test_entry_points_keep_temporaries_in_the_heap_without_page_faults():
  system = {n: _run_job('infer', n, **{host_memory.ENV: 'system'}) for n in (2048, 4096)}
  train, infer = _run_job('train'), _run_job('infer', 2048)
  # glibc's defaults: a fresh mmap per call for blocks over 32 MB, so every call
  # faults its temporaries in anew.
  for n, run in system.items():
    assert run['temp_pages'] > 8192  # over 32 MB of temporaries a call
    assert min(run['faults']) > 0.5 * run['temp_pages'], (n, run)
  # Training (one arena): the heap stops growing once it holds a call's temporaries
  # (the first calls after warm-up may still extend it).
  assert min(train['faults']) < 0.02 * train['temp_pages'], train
  # Inference keeps an arena per thread: a block that fits in a thread's heap (at most
  # 64 MB) stays in the heap of the thread that served it (alone, ~0 faults a call;
  # with the test suite running beside it, up to a third of the pages, as the block
  # moves between threads). Larger blocks depend on which arena the allocating thread
  # has (a thread with its own maps them anew), so they are not asserted here.
  assert min(infer['faults']) < 0.75 * min(system[2048]['faults']), (infer, system)
  assert train['arenas'] == 1 and infer['arenas'] > 1, (train, infer)
  # Training executes on the calling thread, so a step's temporaries are freed before
  # the next step allocates (the one heap kept both otherwise); inference keeps JAX's
  # async dispatch.
  assert train['async_dispatch'] is False and infer['async_dispatch'] is True, (train, infer)
  assert system[2048]['async_dispatch'] is True


@pytest.mark.parametrize('env, said', [
    ({host_memory.ENV: 'system'}, 'glibc defaults ($CROSSTASK_MALLOC=system)'),
    ({'GLIBC_TUNABLES': 'glibc.malloc.arena_max=2'}, 'malloc settings from GLIBC_TUNABLES'),
    ({'JAX_PLATFORMS': 'cuda,cpu'}, 'glibc defaults (JAX will use gpu)'),
    ({'JAX_PLATFORMS': 'tpu'}, 'glibc defaults (JAX will use tpu)'),
])
def test_left_alone_when_told_or_on_an_accelerator(monkeypatch, env, said):
  for k in (host_memory.ENV, 'GLIBC_TUNABLES', 'JAX_PLATFORMS'):
    monkeypatch.delenv(k, raising=False)
  for k, v in env.items():
    monkeypatch.setenv(k, v)
  assert platform.prepare_host('train') == said


def test_unknown_setting_names_the_variable(monkeypatch):
  monkeypatch.setenv(host_memory.ENV, 'tcmalloc')
  with pytest.raises(ValueError, match=r"\$CROSSTASK_MALLOC='tcmalloc'"):
    host_memory.tune_for_xla_cpu()


def test_entry_point_stops_on_an_unknown_setting(monkeypatch):
  from crosstask.runtime.config import gin_utils
  monkeypatch.setenv(host_memory.ENV, 'jemalloc')
  with pytest.raises(SystemExit, match=r"ERROR: \$CROSSTASK_MALLOC='jemalloc'"):
    gin_utils.run_main(lambda: None, ['--gin_search_paths=/tmp'], what='test', job='infer')


def test_an_unknown_job_is_refused():
  from crosstask.runtime.config import gin_utils
  with pytest.raises(SystemExit, match="job='one_arena'"):
    gin_utils.run_main(lambda: None, ['--gin_search_paths=/tmp'], job='one_arena')
