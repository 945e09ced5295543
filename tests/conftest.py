"""Shared test set-up: 8 virtual CPU devices and the official-data fixture."""

import os

# Must be set before JAX initialises its backend, so here, before any test imports jax.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
  os.environ["XLA_FLAGS"] = (_flags + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pathlib

import pytest

from crosstask import paths


@pytest.fixture
def official_data() -> pathlib.Path:
  """The official data root; skips the test with the reason when it is absent."""
  root = paths.data_dir()
  if root is None or not root.is_dir():
    pytest.skip(f"official data not available: set {paths.DATA_DIR_ENV} to a folder "
                "laid out like shared/data (CI sets it to ../shared/data)")
  return root
