"""Δ_m for cross-benchmark scenarios: CSL's measure, per few-shot task and per scenario.

A few-shot task is scored by its member's two metric keys (`Member.metrics`).
For each k, "few" runs (few-shot training from the pretrained model) and
"+meta" runs (few-shot training from the meta-trained model) are averaged over
seeds first; Δ_m of a task is the mean over its two metrics of (+meta − few),
in points, and the scenario's Δ_m is the mean over its few-shot tasks that have
both settings (as CSL's scenario "Avg. Δ_m").
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping

from crosstask.tasks.common import report as common
from crosstask.tasks.csl.report import delta_m
from crosstask.tasks.xbench import scenarios as S

SETTINGS = ("few", "+meta")


@dataclasses.dataclass(frozen=True)
class Run:
  """One evaluated few-shot run: a scenario's few-shot task, k shots, setting, seed."""
  scenario: str
  task: str  # the source task name (`Member.task`) or its xbench name
  k: int
  setting: str
  seed: int
  metrics: Mapping[str, float]

  def __post_init__(self):
    if self.setting not in SETTINGS:
      raise ValueError(f"setting must be one of {SETTINGS}, got {self.setting!r}")


def _member(scenario: S.Scenario, task: str) -> S.Member:
  for m in scenario.few:
    if task in (m.task, scenario.task_name("few", m.task)):
      return m
  raise ValueError(f"{task!r} is not a few-shot task of xbench scenario {scenario.name!r} "
                   f"(those are {[m.task for m in scenario.few]})")


def summarize(runs: Iterable[Run]) -> dict[str, dict[int, dict]]:
  """{scenario: {k: {"few": {task: (m1, m2)}, "+meta": {...}, "delta_m": {task | "scenario": Δ}}}}."""
  values = collections.defaultdict(list)
  for run in runs:
    scenario = S.scenario(run.scenario)
    member = _member(scenario, run.task)
    missing = [m for m in member.metrics if m not in run.metrics]
    if missing:
      raise ValueError(f"xbench run {scenario.name} {member.task} k={run.k} {run.setting} "
                       f"seed {run.seed} lacks metrics {missing} (has {sorted(run.metrics)})")
    values[(scenario.name, run.k, run.setting, member.task)].append(
        tuple(float(run.metrics[m]) for m in member.metrics))
  out: dict[str, dict[int, dict]] = {}
  for (scenario, k, setting, task), rows in values.items():
    means = tuple(common.mean_std([r[i] for r in rows])[0] for i in range(2))
    cell = out.setdefault(scenario, {}).setdefault(k, {"few": {}, "+meta": {}, "delta_m": {}})
    cell[setting][task] = means
  for cells in out.values():
    for cell in cells.values():
      for task, meta in cell["+meta"].items():
        if task in cell["few"]:
          cell["delta_m"][task] = delta_m(cell["few"][task], meta)
      if cell["delta_m"]:
        cell["delta_m"]["scenario"] = (sum(cell["delta_m"].values()) / len(cell["delta_m"]))
  return out


def table(summary: Mapping[str, Mapping[int, dict]], scenario: str) -> str:
  """Markdown: one row per (k, setting, task) with its two metrics, then the Δ_m rows."""
  name = S.scenario(scenario).name
  rows = []
  for k in sorted(summary.get(name, {})):
    cell = summary[name][k]
    for setting in SETTINGS:
      for task, (m1, m2) in cell[setting].items():
        metrics = "/".join(_member(S.scenario(name), task).metrics)
        rows.append({"k": k, "row": f"{task} {setting} ({metrics})", "m1": m1, "m2": m2})
    for task, value in cell["delta_m"].items():
      rows.append({"k": k, "row": f"{task} Δ_m", "m1": value})
  return common.markdown_table(rows, ["k", "row", "m1", "m2"], title=f"xbench {name}")
