"""conftest.py's scheduling of the test processes: a worker pinned to one core starts
its children (the entry points the end-to-end tests run) on every core."""

import os
import pathlib
import subprocess
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to pin one")
def test_a_pinned_worker_starts_its_children_on_every_core():
  cores = sorted(os.sched_getaffinity(0))
  child = "import os; print(sorted(os.sched_getaffinity(0)))"
  script = (f"import os, subprocess, sys; sys.path.insert(0, {str(TESTS)!r}); import conftest\n"
            f"os.sched_setaffinity(0, {{{cores[0]}}})\n"
            f"before = subprocess.run([sys.executable, '-c', {child!r}], capture_output=True,"
            " text=True).stdout.strip()\n"
            f"conftest._children_on({set(cores)!r})\n"
            f"after = subprocess.run([sys.executable, '-c', {child!r}], capture_output=True,"
            " text=True).stdout.strip()\n"
            "print(sorted(os.sched_getaffinity(0)), before, after, sep='|')")
  out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
  own, before, after = out.stdout.strip().splitlines()[-1].split("|")
  assert own == before == str(cores[:1])  # a child inherits its parent's core...
  assert after == str(cores)  # ...unless conftest gives it every core back
