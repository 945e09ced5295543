"""The entry points' malloc settings: XLA:CPU's step temporaries stop costing page faults.

The tuned cases run in subprocesses: the settings hold for a whole process and must
come before JAX's threads first allocate, so pytest's own process is never tuned.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from crosstask.runtime import host_memory

REPO = pathlib.Path(__file__).resolve().parents[2]

# Runs a jitted function with ~200 MB of temporaries through the entry points' own
# `gin_utils.run_main` (argv[1]: 'train' as the train entry point calls it, else as
# infer and eval do), and reports page faults per call and glibc's arena count.
_JOB = r"""
import ctypes, json, os, re, resource, sys, tempfile
from crosstask.runtime import gin_utils

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
  x = jnp.arange(4096 * 4096, dtype=jnp.float32).reshape(4096, 4096) * 1e-3
  temps = f.lower(x).compile().memory_analysis().temp_size_in_bytes
  for _ in range(2):
    f(x).block_until_ready()
  faults = []
  for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    f(x).block_until_ready()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
  print(json.dumps({'faults': faults, 'temp_pages': temps / 4096, 'arenas': arenas()}))

gin_utils.run_main(job, ['--gin_search_paths=' + tempfile.gettempdir()],
                   tune_host_malloc=sys.argv[1] == 'train')
"""


def _run_job(entry_point: str) -> dict:
  env = {k: v for k, v in os.environ.items()
         if k not in ('GLIBC_TUNABLES', 'JAX_PLATFORMS', host_memory.ENV)}
  env['JAX_PLATFORMS'] = 'cpu'
  out = subprocess.run([sys.executable, '-c', _JOB, entry_point], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='glibc malloc settings')
def test_train_entry_point_keeps_step_temporaries_in_one_arena_without_page_faults():
  tuned, system = _run_job('train'), _run_job('infer')
  pages = tuned['temp_pages']
  assert pages > 40_000  # ~200 MB of temporaries a call
  # glibc's defaults (infer, eval): a fresh mmap per call, so every call faults its
  # temporaries in anew.
  assert min(system['faults']) > 0.5 * pages, system
  # Tuned, the heap stops growing once it holds a call's temporaries (the first calls
  # after warm-up may still extend it, depending on how the threads' blocks interleave).
  assert min(tuned['faults']) < 0.02 * pages, tuned
  assert tuned['arenas'] == 1 and system['arenas'] > 1, (tuned, system)


@pytest.mark.parametrize('env, said', [
    ({host_memory.ENV: 'system'}, 'glibc defaults ($CROSSTASK_MALLOC=system)'),
    ({'GLIBC_TUNABLES': 'glibc.malloc.arena_max=2'}, 'malloc settings from GLIBC_TUNABLES'),
    ({'JAX_PLATFORMS': 'cuda,cpu'}, 'glibc defaults (JAX may use cuda)'),
])
def test_left_alone_when_told_or_on_an_accelerator(monkeypatch, env, said):
  for k in (host_memory.ENV, 'GLIBC_TUNABLES', 'JAX_PLATFORMS'):
    monkeypatch.delenv(k, raising=False)
  for k, v in env.items():
    monkeypatch.setenv(k, v)
  assert host_memory.tune_for_xla_cpu() == said


def test_unknown_setting_names_the_variable(monkeypatch):
  monkeypatch.setenv(host_memory.ENV, 'tcmalloc')
  with pytest.raises(ValueError, match=r"\$CROSSTASK_MALLOC='tcmalloc'"):
    host_memory.tune_for_xla_cpu()


def test_entry_point_stops_on_an_unknown_setting(monkeypatch):
  from crosstask.runtime import gin_utils
  monkeypatch.setenv(host_memory.ENV, 'jemalloc')
  with pytest.raises(SystemExit, match=r"ERROR: \$CROSSTASK_MALLOC='jemalloc'"):
    gin_utils.run_main(lambda: None, ['--gin_search_paths=/tmp'], what='test',
                       tune_host_malloc=True)
