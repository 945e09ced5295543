"""conftest.py's scheduling of the test processes: the slow tests shared between the
workers, a worker pinned to one core starting its children (the entry points the
end-to-end tests run) on every core, the garbage collector kept out of the collected
modules, and a worker leaving without tearing down."""

import gc
import json
import os
import pathlib
import subprocess
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent

# In a process of its own: this test's process may be an xdist worker, pinned already.
SCRIPT = f"""
import json, os, subprocess, sys
sys.path.insert(0, {str(TESTS)!r})
import conftest
cores = sorted(os.sched_getaffinity(0))
child = [sys.executable, '-c', 'import os; print(sorted(os.sched_getaffinity(0)))']
run = lambda: json.loads(subprocess.run(child, capture_output=True, text=True).stdout)
os.sched_setaffinity(0, {{cores[0]}})
before = run()
conftest._children_on(set(cores))
after = run()
print(json.dumps([cores, sorted(os.sched_getaffinity(0)), before, after]))
"""


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores to pin one")
def test_a_pinned_worker_starts_its_children_on_every_core():
  out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
  cores, own, before, after = json.loads(out.stdout.strip().splitlines()[-1])
  assert len(cores) >= 2, cores
  assert own == before == cores[:1]  # a child inherits its parent's core...
  assert after == cores  # ...unless conftest gives it every core back



class _Item:
  """What the ordering reads of a collected test: its name and its `slow` marker."""

  def __init__(self, name, mark=None):
    self.name, self.mark = name, mark

  def get_closest_marker(self, name):
    return self.mark if name == "slow" else None


def test_each_half_runs_its_share_of_slow_tests_longest_first_then_short_ones(pytestconfig):
  # The suite's conftest as pytest loaded it (`import conftest` may give a subfolder's).
  [conftest] = [p for p in pytestconfig.pluginmanager.get_plugins()
                if getattr(p, "__file__", None) == str(TESTS / "conftest.py")]
  slow = pytest.mark.slow
  items = [_Item("fast_a"), _Item("slow_default", slow.mark),
           _Item("slow_long", slow(seconds=80).mark), _Item("fast_b"), _Item("fast_c"),
           _Item("slow_short", slow(seconds=5).mark), _Item("slow_mid", slow(seconds=60).mark),
           _Item("fast_d"), _Item("slow_short_too", slow(seconds=5).mark), _Item("fast_e")]
  conftest.pytest_collection_modifyitems(None, None, items)
  # Each slow test goes to the half with fewer seconds so far: 80 | 60, 10, 5, 5 (xdist
  # gives the first worker the first 5 of these 10, the second the rest).
  assert [item.name for item in items] == [
      "slow_long", "fast_a", "fast_b", "fast_c", "fast_d",
      "slow_mid", "slow_default", "slow_short", "slow_short_too", "fast_e"]
  only_short = [_Item(f"fast_{i}") for i in range(5)]
  conftest.pytest_collection_modifyitems(None, None, only_short)
  assert [item.name for item in only_short] == [f"fast_{i}" for i in range(5)]


def test_the_tests_run_with_the_collector_on_and_the_collected_modules_frozen():
  # Off while the modules were collected (pytest_configure), back on since, with what
  # collection imported frozen and the raised thresholds (pytest_collection_finish).
  assert gc.isenabled()
  assert gc.get_threshold() == (20_000, 20, 50)
  assert gc.get_freeze_count() > 0


# A suite of two tests, one failing, run by one xdist worker under the suite's exit
# hook. Its test module registers an exit hook of its own, as the libraries do: the
# worker's teardown would run it.
_SUITE_CONFTEST = f"""
import importlib.util
spec = importlib.util.spec_from_file_location('suite_conftest', {str(TESTS / 'conftest.py')!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_unconfigure = suite.pytest_unconfigure
"""
_SUITE_TESTS = """
import atexit, os, pathlib
atexit.register(lambda: pathlib.Path(os.environ['TORN_DOWN']).write_text(
    os.environ.get('PYTEST_XDIST_WORKER', 'controller')))
def test_passes(): assert 1 + 1 == 2
def test_fails(): assert 1 + 1 == 3
"""


def test_a_worker_reports_every_result_then_exits_without_tearing_down(tmp_path):
  (tmp_path / "conftest.py").write_text(_SUITE_CONFTEST)
  (tmp_path / "test_two.py").write_text(_SUITE_TESTS)
  torn_down = tmp_path / "torn_down"
  out = subprocess.run(
      [sys.executable, "-m", "pytest", "-n", "1", "-q", "-p", "no:cacheprovider",
       str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
      env={**os.environ, "TORN_DOWN": str(torn_down), "PYTHONPATH": str(TESTS)}, timeout=120)
  assert out.returncode == 1, out.stdout + out.stderr  # the failure still counts
  assert "1 failed, 1 passed" in out.stdout, out.stdout
  assert not torn_down.exists(), torn_down.read_text()  # the worker skipped its exit hooks
