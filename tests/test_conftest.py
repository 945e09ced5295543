"""conftest.py's scheduling of the test processes: a worker pinned to one core starts
its children (the entry points the end-to-end tests run) on every core."""

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
