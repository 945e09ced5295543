"""The install extras: every jax build they bring is the jax range crosstask supports,
and the GPU build never enters `make test` (CI has no GPU)."""

import re
import runpy

import jax
import pytest
import setuptools
from packaging.requirements import Requirement

from crosstask import paths

REPO = paths.SAMPLE_DIR.parents[2]


@pytest.fixture(scope="module")
def setup_kwargs() -> dict:
  """What setup.py hands setuptools, without building anything."""
  captured = {}
  patch = pytest.MonkeyPatch()
  patch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
  try:
    runpy.run_path(str(REPO / "setup.py"))
  finally:
    patch.undo()
  return captured


def _jax_requirements(reqs: list[str]) -> list[Requirement]:
  return [r for r in map(Requirement, reqs) if r.name == "jax"]


def test_every_jax_build_names_the_core_jax_range(setup_kwargs):
  (core,) = _jax_requirements(setup_kwargs["install_requires"])
  assert not core.extras
  builds = {name: _jax_requirements(reqs) for name, reqs in setup_kwargs["extras_require"].items()}
  assert {r.extras.pop() for name in ("gpu", "gpu-cuda12", "tpu") for r in builds[name]} == {
      "cuda13", "cuda12", "tpu"}
  for name, reqs in builds.items():
    for r in reqs:
      assert r.specifier == core.specifier, (name, str(r), str(core))
  # The suite itself runs on a jax inside the range it promises.
  assert core.specifier.contains(jax.__version__), (jax.__version__, str(core.specifier))


def test_make_test_never_installs_the_gpu_extra():
  makefile = (REPO / "Makefile").read_text()
  stamp_recipe = re.search(r"^\$\(STAMP\):.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
  assert "pip install" in stamp_recipe and "gpu" not in stamp_recipe
  test_rule = re.search(r"^test:(.*)\n((?:\t.*\n)+)", makefile, re.M)
  assert "install-gpu" not in test_rule.group(1) and "gpu" not in test_rule.group(2)
  assert re.search(r"^install-gpu:.*\n\t.*pip install .*\[[^]]*gpu", makefile, re.M)
