"""Registration of the `xbench_*` tasks and mixtures (and the source benchmarks they wrap)."""

from __future__ import annotations

import importlib

from crosstask.tasks.common import factory
from crosstask.tasks.xbench import episodes
from crosstask.tasks.xbench import scenarios as S


def register_scenario(scenario: S.Scenario) -> tuple[list[str], list[str]]:
  """Registers one scenario's member tasks and its meta / few mixtures (a user's too)."""
  known = S.SCENARIOS.setdefault(scenario.name, scenario)
  if known != scenario:
    raise ValueError(f"xbench scenario {scenario.name!r} is already registered differently")
  tasks, mixtures = [], []
  for stage in ("meta", "few"):
    names = [episodes.register_member(scenario, stage, i)
             for i in range(len(scenario.members(stage)))]
    tasks += names
    mixtures.append(factory.register_mixture(scenario.mixture_name(stage), names))
  return tasks, mixtures


def register_all() -> tuple[list[str], list[str]]:
  for benchmark in S.SOURCE_BENCHMARKS:  # registers the member source tasks
    importlib.import_module(f"crosstask.tasks.{benchmark}")
  tasks, mixtures = [], []
  for scenario in S.SCENARIOS.values():
    t, m = register_scenario(scenario)
    tasks += t
    mixtures += m
  return tasks, mixtures
