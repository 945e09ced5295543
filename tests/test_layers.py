"""Imports run one way: models <- runtime <- entry points; tasks and metrics beside, below none.

Read from the source (AST), function-level imports included, so an import hidden
in a function body to dodge a cycle still counts. Imports named by a string the
user passes (`importlib.import_module(MIXTURE_OR_TASK_MODULE)`) are not imports
of the code and are not seen.
"""

from __future__ import annotations

import ast
import pathlib
import textwrap

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "crosstask"

# What each layer may import (besides itself). Vocabularies (and the other leaves) every layer
# may import; entry points (crosstask/*.py, crosstask/data) may import anything.
VOCABULARIES = ("crosstask.vocabularies", "crosstask.plain_vocabularies")
LEAVES = ("paths", "records", "startup", "task_modules", "text", "tracing", "vocabularies")
ALLOWED = {
    "models": set(),
    "runtime": {"models", "metrics", *LEAVES},
    "tasks": {"metrics", *LEAVES},
    "metrics": set(),
    "vocabularies": set(),
    "paths": set(),
    "records": set(),
    "startup": set(),
    "task_modules": set(),
    "text": set(),
    "tracing": set(),
}

# Known exceptions as (importer, imported) pairs; none are left.
PENDING: set[tuple[str, str]] = set()


def module_names(root: pathlib.Path) -> dict[str, pathlib.Path]:
  """Dotted module name -> file, for every .py under `root` (a package folder)."""
  names = {}
  for path in sorted(root.rglob("*.py")):
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
      parts.pop()
    names[".".join(parts)] = path
  return names


def imports(root: pathlib.Path) -> dict[str, set[str]]:
  """Module -> the modules of the package it imports (anywhere in its body).

  `from pkg import sub` counts as importing `pkg.sub` when that is a module, else
  `pkg`; relative imports are resolved.
  """
  modules = module_names(root)
  top = root.name

  def owner(name: str) -> str | None:
    while name and name not in modules:
      name = name.rpartition(".")[0]
    return name or None

  edges: dict[str, set[str]] = {}
  for module, path in modules.items():
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
      if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
      elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
          anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
          base = ".".join(anchor + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                 for a in node.names]
      else:
        continue
      for name in names:
        if name == top or name.startswith(top + "."):
          target = owner(name)
          if target and target != module:
            found.add(target)
    edges[module] = found
  return edges


def layer(module: str) -> str:
  """The layer a module belongs to: models, runtime, tasks, metrics, a leaf, or entry."""
  if module in VOCABULARIES:
    return "vocabularies"
  parts = module.split(".")
  if len(parts) >= 2 and parts[1] in ALLOWED:
    return parts[1]
  return "entry"  # crosstask/*.py, crosstask/data: commands that compose the layers


def upward_imports(root: pathlib.Path, pending=frozenset()) -> list[str]:
  out = []
  for module, targets in sorted(imports(root).items()):
    source = layer(module)
    if source == "entry":
      continue
    for target in sorted(targets):
      dest = layer(target)
      if dest not in ALLOWED[source] | {source} and (module, target) not in pending:
        out.append(f"{module} ({source}) imports {target} ({dest})")
  for path in sorted((root / "metrics").rglob("__main__.py")):
    out.append(f"{path.relative_to(root.parent)}: a job inside the metrics package")
  return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
  """Strongly connected components of more than one node (Tarjan), each sorted."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in graph.get(v, ()):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return sorted(found)


def package_graph(root: pathlib.Path, pending=frozenset()) -> dict[str, set[str]]:
  """Package (folder) -> the packages its modules import, at every depth."""
  modules = module_names(root)

  def package(module: str) -> str:
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]

  graph: dict[str, set[str]] = {}
  for module, targets in imports(root).items():
    for target in targets:
      a, b = package(module), package(target)
      if (module, target) in pending or a == b:
        continue
      # A package importing its own subpackage (or the reverse, for its __init__) is
      # the package's own business; a cycle between siblings or layers is not.
      if b.startswith(a + ".") or a.startswith(b + "."):
        continue
      graph.setdefault(a, set()).add(b)
  return graph


def layer_graph(root: pathlib.Path, pending=frozenset()) -> dict[str, set[str]]:
  """Layer -> the layers it imports (entry points left out: nothing imports them)."""
  graph: dict[str, set[str]] = {}
  for module, targets in imports(root).items():
    for target in targets:
      a, b = layer(module), layer(target)
      if a != b and "entry" not in (a, b) and (module, target) not in pending:
        graph.setdefault(a, set()).add(b)
  return graph


def module_cycles(root: pathlib.Path, pending=frozenset()) -> list[list[str]]:
  graph = {m: {t for t in ts if (m, t) not in pending} for m, ts in imports(root).items()}
  return cycles(graph)


def config_reads(root: pathlib.Path) -> list[str]:
  """Task modules that import gin or name a run's operative config.

  A run's configuration is the runtime's to read: it hands the task layer what it
  needs (the leakage guard gets the trained-on task names), so nothing under tasks
  reads gin or a run directory's config at data time. Docstrings may mention both.
  """
  out = []
  for module, path in module_names(root).items():
    if layer(module) != "tasks":
      continue
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    for node in ast.walk(tree):
      if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
      elif isinstance(node, ast.ImportFrom):
        names = [node.module or ""] if not node.level else []
      else:
        names = []
      out += [f"{module} imports {n}" for n in names if n == "gin" or n.startswith("gin.")]
      if (isinstance(node, ast.Constant) and isinstance(node.value, str)
          and "operative_config" in node.value and id(node) not in docstrings):
        out.append(f"{module} reads {node.value!r}")
  return out


def test_no_module_imports_upward():
  assert upward_imports(PACKAGE, PENDING) == []


def test_no_package_cycles():
  assert cycles(package_graph(PACKAGE, PENDING)) == []
  assert cycles(layer_graph(PACKAGE, PENDING)) == []


def test_no_module_cycles():
  assert module_cycles(PACKAGE, PENDING) == []


def _tree(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
  root = tmp_path / "crosstask"
  for name, text in files.items():
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
  for folder in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
    (folder / "__init__.py").touch()
  return root


def test_finds_upward_imports_and_jobs_in_a_synthetic_tree(tmp_path):
  root = _tree(tmp_path, {
      "models/net.py": """
          def build():
            from crosstask.runtime import trainer  # hidden in a function: still counts
            return trainer
          """,
      "runtime/trainer.py": ("from crosstask.models import net\n"
                             "from crosstask import vocabularies\n"),
      "tasks/csl/tasks.py": "from ...runtime import trainer\nfrom crosstask.metrics import f1\n",
      "metrics/f1.py": "import crosstask.tasks.csl.tasks\n",
      "metrics/__main__.py": "",
      "vocabularies.py": "",
      "train.py": "from crosstask.runtime import trainer\nfrom crosstask.tasks.csl import tasks\n",
  })
  assert upward_imports(root) == [
      "crosstask.metrics.f1 (metrics) imports crosstask.tasks.csl.tasks (tasks)",
      "crosstask.models.net (models) imports crosstask.runtime.trainer (runtime)",
      "crosstask.tasks.csl.tasks (tasks) imports crosstask.runtime.trainer (runtime)",
      "crosstask/metrics/__main__.py: a job inside the metrics package"]
  assert cycles(package_graph(root)) == [
      ["crosstask.metrics", "crosstask.tasks.csl"],
      ["crosstask.models", "crosstask.runtime"]]
  assert cycles(layer_graph(root)) == [["metrics", "tasks"], ["models", "runtime"]]


def test_tasks_read_no_run_configuration():
  assert config_reads(PACKAGE) == []


def test_finds_gin_and_operative_config_reads_under_tasks_only(tmp_path):
  root = _tree(tmp_path, {
      "tasks/clue/leakage.py": '''
          """Mentions operative_config.gin in its docstring: fine."""
          def trained_on(folder):
            import gin.config  # hidden in a function: still counts
            return folder / "operative_config.gin"
          ''',
      "tasks/xbench/names.py": "from gin import config\n",
      "tasks/csl/tasks.py": "import gin\nimport ginkgo\n",
      "runtime/gin_utils.py": "import gin\nCONFIG = 'operative_config.gin'\n",
      "train.py": "import gin\n",
  })
  assert config_reads(root) == [
      "crosstask.tasks.clue.leakage imports gin.config",
      "crosstask.tasks.clue.leakage reads 'operative_config.gin'",
      "crosstask.tasks.csl.tasks imports gin",
      "crosstask.tasks.xbench.names imports gin"]


def test_finds_cycles_between_sibling_modules_and_packages(tmp_path):
  root = _tree(tmp_path, {
      "tasks/bench/schema.py": "def f():\n  from crosstask.tasks.bench import text\n",
      "tasks/bench/text.py": "from crosstask.tasks.bench import schema\n",
      "tasks/common/factory.py": "from crosstask.tasks.other import registry\n",
      "tasks/other/registry.py": "from crosstask.tasks.common import factory\n",
  })
  assert upward_imports(root) == []
  assert module_cycles(root) == [
      ["crosstask.tasks.bench.schema", "crosstask.tasks.bench.text"],
      ["crosstask.tasks.common.factory", "crosstask.tasks.other.registry"]]
  assert cycles(package_graph(root)) == [["crosstask.tasks.common", "crosstask.tasks.other"]]
  assert upward_imports(root) == [] and module_cycles(
      root, {("crosstask.tasks.bench.text", "crosstask.tasks.bench.schema"),
             ("crosstask.tasks.other.registry", "crosstask.tasks.common.factory")}) == []


@pytest.mark.parametrize("module,want", [
    ("crosstask.models.network", "models"), ("crosstask.runtime.data", "runtime"),
    ("crosstask.tasks.csl.tasks", "tasks"), ("crosstask.metrics.rouge", "metrics"),
    ("crosstask.vocabularies", "vocabularies"),
    ("crosstask.train", "entry"), ("crosstask.data.fetch", "entry"), ("crosstask", "entry")])
def test_layer_of_a_module(module, want):
  assert layer(module) == want
