"""Table columns and cells: a task's headline metric, prompt variants pooled, rows.

A column is keyed by task (or prompt group, or aggregate), metric, split, task
fingerprint and the hash of the examples scored (`data`), so numbers of two task
definitions, or of two data sets (the bundled sample's and the data root's), land in
two columns. A task
registered as `<base>.p<k>` (prompt k of `<base>`) is a prompt variant: the
column `<base>` shows the mean over prompts with their spread.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from crosstask import records as R
from crosstask.results import bootstrap
from crosstask.results.runs import Run
from crosstask.tasks.common import report as common_report

PROMPT_SUFFIX = re.compile(r"^(?P<base>.+)\.p(?P<k>\d+)$")
# The headline metric of a task: the first of these it reports (a key or a key's last part).
# CLUE/FewCLUE/CSL classes and LOT's understanding tasks are scored by accuracy, CMRC
# 2018 by EM, generation by the paper's first metric.
HEADLINE = ("em", "accuracy", "overall", "rougeL", "bpref", "bleu-2", "bleu-4", "bleu",
            "perplexity", "map", "ndcg", "f1", "macro_f1")


def prompt_base(task: str) -> tuple[str, int | None]:
  """('clue_afqmc', 2) for a prompt variant `clue_afqmc.p2`; (task, None) otherwise."""
  match = PROMPT_SUFFIX.match(task)
  return (match["base"], int(match["k"])) if match else (task, None)


def headline_metric(task: str, metrics: Mapping[str, float],
                    prefer: Sequence[str] = ()) -> str | None:
  """The metric a task's column shows (see HEADLINE); `prefer` goes first."""
  if task.startswith(R_SCIREPEVAL):
    return None  # SciRepEval embedding tasks show their official number (see _scirepeval)
  for name in (*prefer, *HEADLINE):
    for key in metrics:
      if R.matches(key, name):
        return key
  return next(iter(metrics), None)


R_SCIREPEVAL = "scirepeval:"
# Why a cell of ours has no interval (the table's JSON says it as `no_ci95`).
NO_PREDICTIONS = "no saved predictions to resample"


@dataclasses.dataclass(frozen=True)
class Column:
  """A table column: a task (or prompt group, or aggregate) on one split and definition."""
  name: str
  metric: str
  split: str
  fingerprint: str
  data: str = ""  # the examples' hash; "" for records older than it, aggregates and papers

  def header(self, step: int | None, with_data: bool = False) -> str:
    """`with_data`: name the examples' hash too (another column differs only in it)."""
    parts = [f"{self.name} {self.metric}".strip()]
    if self.split not in ("", "?"):
      parts.append(f"({self.split})")
    if step is not None:
      parts.append(f"@{step}")
    if self.fingerprint or (with_data and self.data):
      data = f" data {self.data or '?'}" if with_data else ""
      parts.append(f"[{self.fingerprint}{data}]")
    return " ".join(parts)


@dataclasses.dataclass
class Value:
  """A run's number in a column: the value, its checkpoint step, its spread over prompts."""
  value: float
  step: int | None = None
  prompts: int = 0
  prompt_std: float | None = None
  spread_of: str = "prompts"  # what `prompt_std` is a spread over (FewCLUE: its k splits)
  ci95: tuple[float, float] | None = None  # over the examples (bootstrap), when known
  no_ci95: str = NO_PREDICTIONS  # why `ci95` is None, when it is


def _group_fingerprint(fingerprints: Iterable[str | None]) -> str:
  fps = sorted({fp or "-" for fp in fingerprints})
  if len(fps) == 1:
    return fps[0] if fps[0] != "-" else ""
  return hashlib.sha256(",".join(fps).encode()).hexdigest()[:8]


def task_values(run: Run, prefer: Sequence[str] = (), all_metrics: bool = False
                ) -> dict[Column, Value]:
  """A run's numbers per task column; prompt variants pooled into their base task."""
  groups: dict[tuple[str, str, str], list[tuple[R.Record, str]]] = {}
  for (task, split), record in run.records.items():
    if task.startswith(R_SCIREPEVAL):
      continue
    base, _ = prompt_base(task)
    keys = (list(record.metrics) if all_metrics
            else [k for k in [headline_metric(task, record.metrics, prefer)] if k])
    for key in keys:
      groups.setdefault((base, split, key), []).append((record, task))
  out = {}
  for (base, split, key), members in groups.items():
    fingerprint = _group_fingerprint(r.fingerprint for r, _ in members)
    data = _group_fingerprint(r.data for r, _ in members)
    values = [r.metrics[key] for r, _ in members]
    steps = {r.step for r, _ in members}
    prompted = [t for _, t in members if prompt_base(t)[1] is not None]
    mean, std = common_report.mean_std(values)
    why = [run.no_ci95[(t, split)] for _, t in members if (t, split) in run.no_ci95]
    out[Column(base, key, split, fingerprint, data)] = Value(
        mean, steps.pop() if len(steps) == 1 else None, len(prompted),
        std if prompted else None,
        ci95=_mean_interval(run, [(t, split) for _, t in members], key),
        no_ci95=why[0] if why else NO_PREDICTIONS)
  return out


def _mean_interval(run: Run, members: Sequence[tuple[str, str]], key: str
                   ) -> tuple[float, float] | None:
  """A record's own interval; a prompt group's, the mean over prompts recomputed on each
  bootstrap draw (the prompts' logs hold the same examples, so they are drawn paired)."""
  if len(members) == 1:
    ci95 = run.records[members[0]].ci95
    return ci95.get(key) if ci95 else None
  return bootstrap.joint(lambda values: common_report.mean_std(list(values.values()))[0],
                         {m: run.replicates.get(m, {}).get(key) for m in members})


@dataclasses.dataclass
class Row:
  label: str
  model: str
  seeds: list[str | None]
  cells: dict[Column, dict]  # column -> {"mean", "std", "ci95", "no_ci95", "n", "step", ...}
  paper: bool = False
  runs: list[Run] = dataclasses.field(default_factory=list)
