"""compile_report (CROSSTASK_COMPILE_REPORT) records a test's compiles, one line per test
that compiled, and sums them per module."""

import json

import jax
import jax.numpy as jnp

import compile_report


def test_a_tests_compiles_are_recorded_and_summed_per_module(tmp_path):
  out = tmp_path / 'compiles.jsonl'
  report = compile_report.CompileReport(str(out))
  jax.jit(lambda x: x * 3 + 1)(jnp.arange(7.0)).block_until_ready()
  report.pytest_runtest_logfinish('tests/a.py::compiles', None)
  report.pytest_runtest_logfinish('tests/a.py::compiles_nothing', None)
  rows = [json.loads(line) for line in out.read_text().splitlines()]
  assert [r['test'] for r in rows] == ['tests/a.py::compiles']
  assert rows[0]['compiles'] >= 1 and rows[0]['compile_s'] > 0
  ((module, totals),) = compile_report.summarize(str(out))
  assert module == 'tests/a.py' and totals['tests'] == 1
  assert totals['compiles'] == rows[0]['compiles']
