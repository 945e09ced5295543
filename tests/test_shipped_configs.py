"""Every shipped experiment and run gin file parses with a model, as its header says.

T5X's discipline: an experiment gin includes its run gin (runs/*.gin), and also its
model gin when it names a specific model (csl/demo_tiny.gin); otherwise the model gin
comes first on the command line. Run gins include the device mesh block once
(runs/_partitioning.gin).
"""

import pathlib
import re

import gin
import pytest

from crosstask.runtime.config import gin_utils

CONFIGS = gin_utils.PACKAGE_DIR / "t5x_configs"
MODELS = gin_utils.PACKAGE_DIR / "gin"
# Parsed only through the files including them (they leave STAGE to those).
INCLUDED_ONLY = {"csl/xtask_common.gin", "xbench/xbench_common.gin"}
# Files that are parsed only through the files including them.
PARTS = sorted(p for p in CONFIGS.rglob("_*.gin"))
SHIPPED = sorted(p for p in CONFIGS.rglob("*.gin") if not p.name.startswith("_")
                 and p.relative_to(CONFIGS).as_posix() not in INCLUDED_ONLY)
# Model gins kept beside their benchmark's configs (put first, before a run gin).
CONFIG_MODELS = {"lot/demo_tiny.gin": "runs/pretrain_longlm.gin"}
_INCLUDE = re.compile(r"^include '([^']+)'", re.M)
_MACRO = re.compile(r"^([A-Z][A-Z0-9_]*)\s*=\s*(\S+)", re.M)


def _resolve(name: str) -> pathlib.Path:
  return pathlib.Path(gin_utils.resolve(name, [str(p) for p in gin_utils.DEFAULT_SEARCH_PATHS]))


def _chain(path: pathlib.Path) -> list[pathlib.Path]:
  """The file and everything it includes, in parse order."""
  out = []
  for name in _INCLUDE.findall(path.read_text()):
    out += _chain(_resolve(name))
  return out + [path]


def _unset_required(files: list[pathlib.Path]) -> list[str]:
  """Macros whose last assignment in parse order is %gin.REQUIRED."""
  last = {}
  for f in files:
    last.update(_MACRO.findall(f.read_text()))
  return sorted(name for name, value in last.items() if value == "%gin.REQUIRED")


def _files_for(config: pathlib.Path) -> list[str]:
  rel = config.relative_to(CONFIGS).as_posix()
  if rel in CONFIG_MODELS:
    return [rel, CONFIG_MODELS[rel]]
  chain = _chain(config)
  if MODELS / "t5_1_1" / "base.gin" in chain:  # names its model itself (every model includes base)
    return [rel]
  return ["lot/demo_tiny.gin" if rel.startswith("lot/") else "t5_1_1/tiny.gin", rel]


@pytest.fixture
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.mark.parametrize("config", SHIPPED, ids=lambda p: p.relative_to(CONFIGS).as_posix())
def test_shipped_config_parses_with_its_model(clean_gin, config):
  import crosstask.embed, crosstask.relevance  # pylint: disable=g-import-not-at-top,multiple-imports,unused-import  # their jobs' configurables
  files = _files_for(config)
  chain = [f for name in files for f in _chain(_resolve(name))]
  bindings = [f"{name}='/tmp/unused/{name.lower()}'" for name in _unset_required(chain)]
  gin_utils.parse(files, bindings)
  assert gin.query_parameter("%MODEL") is not None
  assert gin.query_parameter("%NUM_PARTITIONS") == 1 and gin.query_parameter("%MULTIHOST") is False
  names = [f.relative_to(gin_utils.PACKAGE_DIR).as_posix() for f in chain]
  assert names.count("t5x_configs/runs/_partitioning.gin") == 1, names
  experiment = not config.relative_to(CONFIGS).as_posix().startswith("runs/")
  if experiment and config.relative_to(CONFIGS).as_posix() not in CONFIG_MODELS:
    # An experiment includes its run gin itself.
    assert any(n.startswith("t5x_configs/runs/") for n in names[:-1]) or config.name in (
        "embed.gin", "relevance.gin"), names


def test_partial_files_are_included_somewhere():
  included = {f for config in SHIPPED for f in _chain(config)}
  assert not [p for p in PARTS + [CONFIGS / n for n in INCLUDED_ONLY] if p not in included]
