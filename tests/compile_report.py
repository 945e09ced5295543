"""Where a test run's time goes to XLA: per test, the seconds JAX spent compiling, the
compiles, and the persistent-cache hits (with the compile seconds they saved).

A pytest plugin, on when CROSSTASK_COMPILE_REPORT names a file: each process (xdist
worker) appends one JSON line per test that compiled anything. Wall-clock durations
on a shared machine move with its load; compile counts and hits do not.
`python tests/compile_report.py FILE` sums them per module, largest first.
"""

import collections
import json
import os
import sys

ENV = 'CROSSTASK_COMPILE_REPORT'
_COMPILE = '/jax/core/compile/backend_compile_duration'
_SAVED = '/jax/compilation_cache/compile_time_saved_sec'
_HIT = '/jax/compilation_cache/cache_hits'


class CompileReport:
  """Listens to jax.monitoring and writes one record per test."""

  def __init__(self, path: str):
    from jax import monitoring  # pylint: disable=import-outside-toplevel
    self.path = path
    self.now: collections.Counter = collections.Counter()
    monitoring.register_event_duration_secs_listener(self._duration)
    monitoring.register_event_listener(self._event)

  def _duration(self, event: str, secs: float, **_) -> None:
    if event == _COMPILE:
      self.now['compile_s'] += secs
      self.now['compiles'] += 1
    elif event == _SAVED:
      self.now['saved_s'] += secs

  def _event(self, event: str, **_) -> None:
    if event == _HIT:
      self.now['cache_hits'] += 1

  def pytest_runtest_logfinish(self, nodeid, location):  # pylint: disable=unused-argument
    if self.now:
      with open(self.path, 'a', encoding='utf-8') as f:
        f.write(json.dumps({'test': nodeid, **{k: round(v, 3) for k, v in self.now.items()}})
                + '\n')
    self.now = collections.Counter()


def register(config) -> None:
  """Called from conftest.py: adds the plugin when the environment asks for it."""
  if os.environ.get(ENV):
    config.pluginmanager.register(CompileReport(os.environ[ENV]), 'crosstask-compile-report')


def summarize(path: str) -> list[tuple[str, dict]]:
  by_module: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
  with open(path, encoding='utf-8') as f:
    for line in f:
      row = json.loads(line)
      module = row.pop('test').split('::')[0]
      by_module[module].update(row)
      by_module[module]['tests'] += 1
  return sorted(by_module.items(), key=lambda kv: -kv[1]['compile_s'])


if __name__ == '__main__':
  print(f'{"module":60s} {"tests":>5s} {"compiles":>8s} {"compile_s":>9s} {"hits":>5s} {"saved_s":>7s}')
  for module, c in summarize(sys.argv[1]):
    print(f'{module:60s} {c["tests"]:5d} {c["compiles"]:8d} {c["compile_s"]:9.1f} '
          f'{c["cache_hits"]:5d} {c["saved_s"]:7.1f}')
