"""The XLA flags every test process runs under: in-process (conftest.py) and in the
subprocesses the tests start (runtime_subprocess.env()), so both compile alike.

Why: compiling is most of a cold run's time (an empty persistent cache, as on CI), and
the tests compile many small programs. Three XLA:CPU options halve that cost. None
turns on fast math; the elemental emitter may round a fused reduction differently in
the last bits (a gradient element of test_models_scan moved 1.2e-6 on a sum of terms
near 2), which the tests' float32 tolerances allow for:
- `--xla_backend_optimization_level=0`: no LLVM optimisation of the generated code
  (four compile-heavy modules cold: 206 -> 97 CPU s);
- `--xla_cpu_use_fusion_emitters=false`: fusions go through XLA's elemental emitter
  instead of the MLIR fusion emitters, whose pass pipeline costs more than the fusions'
  run time at the tests' sizes (network, attention and decoding modules cold: 44 -> 23 s
  of compiling, 78 -> 55 s wall, one process);
- `--xla_cpu_parallel_codegen_split_count=1`: the generated LLVM module is compiled as
  one, not split into up to 32 parts to compile on as many threads: each xdist worker
  has one core, where the parts only cost (decoding, network and model modules, one
  process on one core: 22.4 -> 17.6 s of compiling, 49 -> 44 s wall).
The HLO passes (fusion decisions, scheduling, memory plans, the decoding options'
rewrites some tests look for) are the same either way. The entry points the users run
keep XLA's defaults: this is for the tests' compile time only.

A test whose subprocess trains for tens of steps over a large vocabulary runs longer
than it compiles; it asks for `compile_speed=False` (XLA's optimised code).
"""

import functools
import importlib.util
import mmap
import os

_COMPILE_SPEED = ('--xla_backend_optimization_level=0', '--xla_cpu_use_fusion_emitters=false',
                  '--xla_cpu_parallel_codegen_split_count=1')


@functools.lru_cache(maxsize=None)
def _jaxlib_knows(flag: str) -> bool:
  """Whether the installed jaxlib's XLA defines `flag`: XLA aborts on an unknown flag,
  and a later jaxlib may drop an emitter option. Cached: the tests call `flags()` for
  every subprocess they start."""
  spec = importlib.util.find_spec('jaxlib')
  if spec is None or spec.origin is None:
    return False
  library = os.path.join(os.path.dirname(spec.origin), 'libjax_common.so')
  if not os.path.isfile(library):
    return False
  name = flag.lstrip('-').split('=')[0].encode()
  with open(library, 'rb') as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
    return m.find(name) >= 0


def flags(device_count: int = 8, existing: str = '', compile_speed: bool = True) -> str:
  """`existing` XLA_FLAGS plus `device_count` virtual CPU devices and (unless
  `compile_speed` is False) the compile-speed flags this jaxlib knows; a flag
  `existing` sets already is left as it is."""
  out = existing.split()
  wanted = [f'--xla_force_host_platform_device_count={device_count}',
            *(_COMPILE_SPEED if compile_speed else ())]
  for flag in wanted:
    name = flag.split('=')[0]
    if not any(f.split('=')[0] == name for f in out) and (
        'force_host_platform' in name or _jaxlib_knows(flag)):
      out.append(flag)
  return ' '.join(out)
