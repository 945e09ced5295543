"""Shared test set-up: 8 virtual CPU devices, one persistent compile cache, and the
official-data fixture."""

import os
import tempfile

import xla_test_flags

# Must be set before JAX initialises its backend, so here, before any test imports jax.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Virtual devices and the compile-speed flags: see xla_test_flags.py.
os.environ["XLA_FLAGS"] = xla_test_flags.flags(8, os.environ.get("XLA_FLAGS", ""))
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
