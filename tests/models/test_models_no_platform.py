"""crosstask/models holds pure functions only: no jit and no platform decisions.

Compiling, partitioning and per-platform choices belong to the runtime
(runtime/config/platform.py); a model that jits or reads the machine compiles with
settings no caller can see or change.
"""

import ast
import pathlib

import crosstask.models

MODELS = pathlib.Path(crosstask.models.__file__).parent
PLATFORM_NAMES = {"cpu", "gpu", "tpu", "cuda", "rocm"}
# Names whose use means compiling or asking which machine this is.
FORBIDDEN_ATTRIBUTES = {"jit", "pjit", "pmap", "default_backend", "devices", "local_devices",
                        "mallopt"}
FORBIDDEN_TEXT = ("/proc/cpuinfo", "xla_cpu_", "xla_gpu_", "xla_tpu_", "xla_disable_hlo_passes")


def _violations(path: pathlib.Path) -> list[str]:
  tree = ast.parse(path.read_text(), str(path))
  found = []
  for node in ast.walk(tree):
    where = f"{path.name}:{getattr(node, 'lineno', '?')}"
    if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
      found.append(f"{where}: .{node.attr}")
    elif isinstance(node, (ast.ImportFrom, ast.Import)):
      names = [a.name for a in node.names]
      if any(n in FORBIDDEN_ATTRIBUTES for n in names):
        found.append(f"{where}: imports {names}")
    elif isinstance(node, ast.Compare):
      # A branch on a platform name: `backend == "cpu"`, `platform in ("gpu", "tpu")`.
      for operand in [node.left, *node.comparators]:
        values = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
        if any(isinstance(v, ast.Constant) and v.value in PLATFORM_NAMES for v in values):
          found.append(f"{where}: compares with a platform name")
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
      hits = [t for t in FORBIDDEN_TEXT if t in node.value]
      if hits:
        found.append(f"{where}: {hits}")
  return found


def test_models_hold_no_jit_and_no_platform_decisions():
  files = sorted(MODELS.rglob("*.py"))
  assert len(files) > 5, files  # the package was found
  found = [v for f in files for v in _violations(f)]
  assert not found, found


def test_the_check_catches_what_model_py_held_before(tmp_path):
  # The shapes of code this test exists to keep out of models/.
  bad = tmp_path / "bad.py"
  bad.write_text(
      "import jax\n"
      "f = jax.jit(lambda x: x)\n"
      "cpu = jax.default_backend() == 'cpu'\n"
      "flags = open('/proc/cpuinfo').read()\n"
      "OPTIONS = {'xla_cpu_experimental_ynn_fusion_type': ''}\n")
  found = _violations(bad)
  assert sorted(int(v.split(":")[1]) for v in found) == [2, 3, 3, 4, 5], found
