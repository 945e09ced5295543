"""Shared test set-up: 8 virtual CPU devices, the compile-speed XLA flags, one persistent
compile cache, the slow tests shared between the workers and run first, xdist workers
pinned to their cores, Python's GC kept off the libraries, workers that exit without
tearing down, and the official-data fixture."""

import atexit
import gc
import os
import subprocess
import sys
import tempfile

import xla_test_flags


def _pin_xdist_worker() -> None:
  """Runs xdist worker i on core i alone, where there are as many workers as cores, and
  gives the processes its tests start every core back.

  XLA, TensorFlow and torch size their thread pools from the cores a process may use,
  so unpinned each worker starts a pool per core and the two workers' threads contend.
  A child inherits its parent's one core, though, and the end-to-end tests'
  subprocesses (the entry points, the GPU session script) are the suite's longest
  computations: pinned with their worker they took the full suite from 15:49 to 17:12.
  So each child is widened to every core as soon as it exists (`_children_on`): cold,
  2 cores, the full suite went from 13:41 (only the fast set pinned) to 13:17, its
  in-process tests from 392 to 362 test-seconds and the LOT end-to-end test from 122 to
  72 s. Called from `pytest_configure`, before any test module imports JAX, TensorFlow
  or torch.
  """
  worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
  if not worker or not count or not hasattr(os, "sched_setaffinity"):
    return
  cores = sorted(os.sched_getaffinity(0))
  if int(count) >= len(cores) > 1:
    os.sched_setaffinity(0, {cores[int(worker.removeprefix("gw")) % len(cores)]})
    _children_on(set(cores))


def _children_on(cores: set[int]) -> None:
  """Every process this one starts (`subprocess` underlies them all) runs on `cores`.

  Set from here once `Popen` returns: the child has just exec'd and is still starting
  Python, with one thread; the threads and processes it starts later inherit the mask,
  so its thread pools are sized from every core."""
  start = subprocess.Popen.__init__

  def start_on_cores(self, *args, **kwargs):
    start(self, *args, **kwargs)
    try:
      os.sched_setaffinity(self.pid, cores)
    except ProcessLookupError:  # it has already exited
      pass
  subprocess.Popen.__init__ = start_on_cores


# Must be set before JAX initialises its backend, so here, before any test imports jax.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Virtual devices and the compile-speed flags: see xla_test_flags.py.
os.environ["XLA_FLAGS"] = xla_test_flags.flags(8, os.environ.get("XLA_FLAGS", ""))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# One JAX persistent compilation cache for both xdist workers and every subprocess a
# test starts (they inherit the environment): the entry points compile the same train
# and decode steps in many processes, so a cold run warms it as it goes. Only compiles
# over 0.5 s are kept (the default: 1 s). Keeping every one cost more than it saved:
# in a cold `make test-fast` its 1,184 hits saved 4.9 s of compiling, while writing
# the 4,300 entries took more than 6 s; at 0.5 s, 18 hits saved 6.2 s.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(
    tempfile.gettempdir(), f"crosstask-runtime-jax-cache-{os.getuid()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")

import pathlib

import pytest

import compile_report
from crosstask import paths


def pytest_configure(config):
  compile_report.register(config)  # CROSSTASK_COMPILE_REPORT=FILE: compile time per test
  _pin_xdist_worker()
  if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
    # This process collects (an xdist worker, or pytest without workers): the collector
    # waits for `pytest_collection_finish`. Importing the test modules (TensorFlow, JAX,
    # torch, transformers) ran 3,766 collections over a growing heap, 4.1-4.5 s of the
    # 14.6-16.7 s a collection took; without them, 12.1-12.2 s.
    gc.disable()


SLOW_SECONDS = 10  # a slow test's time when its marker gives none (`slow(seconds=N)`)


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` have deselected
def pytest_collection_modifyitems(session, config, items):
  """Orders the tests as two halves, one per xdist worker, each the slow tests it runs
  first, longest first, then short tests in collected order; the slow tests are dealt
  to the half with fewer seconds so far (the seconds their marker gives, cold, on 2
  cores).

  xdist's work stealing (`--dist worksteal` in pyproject.toml) gives each worker a
  contiguous half of this order and lets an idle worker take the other's last pending
  tests. Started first, the slow tests run while the short ones wait; dealt to both
  halves, each worker's queue ends with short tests, so whichever finishes first
  steals short tests and both end within seconds. With every slow test in the first
  half the other worker ended up stealing them, and the last it drew ran on alone: in
  the cold full suite one worker finished 26.6 s before the other. Both workers sort
  alike, as xdist requires."""
  del session, config
  slow = sorted((item for item in items if item.get_closest_marker("slow")),
                key=lambda item: -_seconds(item))
  fast = [item for item in items if not item.get_closest_marker("slow")]
  halves, seconds = ([], []), [0.0, 0.0]
  for item in slow:
    lighter = 0 if seconds[0] <= seconds[1] else 1
    halves[lighter].append(item)
    seconds[lighter] += _seconds(item)
  cut = max(0, len(items) // 2 - len(halves[0]))
  items[:] = halves[0] + fast[:cut] + halves[1] + fast[cut:]


def _seconds(item) -> float:
  return item.get_closest_marker("slow").kwargs.get("seconds", SLOW_SECONDS)


def pytest_collection_finish(session):
  """Keeps Python's cyclic garbage collector off the imported libraries.

  After collection a worker holds ~1.5M objects (TensorFlow, JAX, torch, the test
  modules) that live to the end, and every full collection walked them all: in a cold
  `make test-fast` the collector took 26 s and 11 s of the two workers, one pause 16 s
  inside a test. Frozen, they are never scanned again; with the thresholds raised the
  collector still frees the tests' cycles, in ~5 s a worker (fast set cold: 3:10 ->
  2:48 on 2 cores). The entry points' subprocesses freeze TensorFlow's import
  themselves (`crosstask.startup`).
  """
  del session
  gc.collect()
  gc.freeze()
  gc.set_threshold(20_000, 20, 50)
  gc.enable()  # off since pytest_configure


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
  """An xdist worker ends its process without tearing down its interpreter.

  Its results are with the controller by now, which waits for the process to exit
  before it reports. Freeing the ~1.5M objects a worker holds (TensorFlow, JAX, torch,
  a thousand compiled programs) and running the libraries' exit hooks took 4.4 s
  between the last worker's end and the report in a cold `make test-fast`, 0.8 s
  without (the run: 3:04.6 -> 2:59.4). Registered last, this exit hook runs first."""
  if hasattr(config, "workerinput"):
    atexit.register(_exit_now)


def _exit_now() -> None:
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(0)


@pytest.fixture
def official_data() -> pathlib.Path:
  """The official data root; skips the test with the reason when it is absent."""
  root = paths.data_dir()
  if root is None or not root.is_dir():
    pytest.skip(f"official data not available: set {paths.DATA_DIR_ENV} to a folder "
                "laid out like shared/data (CI sets it to ../shared/data)")
  return root
