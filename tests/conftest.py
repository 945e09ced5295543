"""Shared test set-up: 8 virtual CPU devices, one persistent compile cache, and the
official-data fixture."""

import os
import tempfile

# Must be set before JAX initialises its backend, so here, before any test imports jax.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
  _flags = (_flags + " --xla_force_host_platform_device_count=8").strip()
# Compile time is most of a cold run's time (an empty persistent cache, as on CI): without
# LLVM's optimisations XLA:CPU compiles the tests' programs in about half the CPU time
# (four compile-heavy modules cold: 206 -> 97 CPU s). The HLO passes (fusion, scheduling,
# memory plans, the decoding options' rewrites the tests look for) are unchanged, and so
# are the numbers: no fast-math either way, so LLVM may not reorder floating point.
# Subprocesses started through runtime_subprocess.env() set their own XLA_FLAGS.
if "xla_backend_optimization_level" not in _flags:
  _flags += " --xla_backend_optimization_level=0"
os.environ["XLA_FLAGS"] = _flags
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# One JAX persistent compilation cache for both xdist workers and every subprocess a
# test starts (they inherit the environment): the tests compile the same small
# programs many times, so a cold run warms it as it goes. Every compile counts, however
# short (the default keeps only those over 1 s).
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(
    tempfile.gettempdir(), f"crosstask-runtime-jax-cache-{os.getuid()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

import pathlib

import pytest

import compile_report
from crosstask import paths


def pytest_configure(config):
  compile_report.register(config)  # CROSSTASK_COMPILE_REPORT=FILE: compile time per test


@pytest.fixture
def official_data() -> pathlib.Path:
  """The official data root; skips the test with the reason when it is absent."""
  root = paths.data_dir()
  if root is None or not root.is_dir():
    pytest.skip(f"official data not available: set {paths.DATA_DIR_ENV} to a folder "
                "laid out like shared/data (CI sets it to ../shared/data)")
  return root
