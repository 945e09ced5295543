"""One table across runs and benchmarks: a row per model (seeds pooled), a column per task.

Each RUN_DIR is searched for `metrics.jsonl` files (an eval output, a training
run's `inference_eval/`, a `crosstask.score` output). A run's number for a task
is its latest step's (or `step`'s). Columns are keyed by task, split and task
fingerprint, so numbers of two task definitions land in two columns, never in
one; a column's header names its checkpoint step when every row agrees, else
each cell does. Runs whose configs differ only in the seed (and in their paths)
form one row: mean ± std over seeds (population std, as papers report). Each
cell carries a 95% interval (`ci95`, shown as [low, high]): the t interval of the
seeds' mean where there are several, else a bootstrap over the run's examples
(`intervals`) where its predictions were saved; a cell without one names why
(`no_ci95`: a quoted number, no saved predictions), noted under the Markdown. Task
variants `<base>.p<k>` (prompt k of a task) form one column for `<base>`: the
mean over prompts, with their spread. Benchmark aggregates (CLUE and FewCLUE
scores, LOT overall, SciRepEval averages) are computed per run from the same
records, their intervals by a joint bootstrap over the member tasks' examples,
then pooled over seeds; paper rows fill the columns they have numbers
for.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
from collections.abc import Iterable, Sequence

from crosstask import records as R
from crosstask.results import aggregates
from crosstask.results import bootstrap
from crosstask.results import intervals
from crosstask.results import paper as paper_numbers
from crosstask.results.columns import Column, Row, Value, prompt_base, task_values
from crosstask.results.runs import Run, label_of, load_run, merge_runs, run_folders
from crosstask.tasks.common import report as common_report

__all__ = ["Column", "Row", "Table", "build", "load_run", "merge_runs", "prompt_base"]

def _pool(values: Sequence[Value]) -> dict:
  mean, std = common_report.mean_std([v.value for v in values])
  steps = {v.step for v in values}
  prompt_stds = [v.prompt_std for v in values if v.prompt_std is not None]
  ci95 = (bootstrap.over_seeds([v.value for v in values]) if len(values) > 1
          else values[0].ci95)
  return {"mean": mean, "std": std if len(values) > 1 else None,
          "ci95": None if ci95 is None else [ci95[0], ci95[1]],
          "no_ci95": values[0].no_ci95 if ci95 is None else None, "n": len(values),
          "step": steps.pop() if len(steps) == 1 else None,
          "prompts": max(v.prompts for v in values),
          "prompt_std": sum(prompt_stds) / len(prompt_stds) if prompt_stds else None,
          "spread_of": values[0].spread_of}


def build_rows(runs: Sequence[Run], prefer: Sequence[str] = (), all_metrics: bool = False,
               pool_seeds: bool = True) -> list[Row]:
  """A row per model: runs with equal configs but for the seed are pooled."""
  groups: dict[str, list[Run]] = {}
  for run in runs:
    key = run.config_key if pool_seeds else str(run.path.resolve())
    groups.setdefault(key, []).append(run)
  rows = []
  for members in groups.values():
    seeds = [r.seed for r in members]
    if len(members) > 1 and len(set(seeds)) != len(seeds):
      # Same config and seed: not seeds of one model but repeated runs; keep them apart.
      for run in members:
        rows.extend(build_rows([run], prefer, all_metrics, pool_seeds=False))
      continue
    per_column: dict[Column, list[Value]] = {}
    for run in members:
      for column, value in {**task_values(run, prefer, all_metrics),
                            **aggregates.aggregate_values(run)}.items():
        per_column.setdefault(column, []).append(value)
    cells = {column: _pool(values) for column, values in per_column.items()}
    rows.append(Row(label_of([r.path for r in members]), members[0].model, seeds, cells,
                    runs=list(members)))
  return rows


def _order(columns: Iterable[Column]) -> list[Column]:
  def key(c: Column):
    aggregate = c.name[:1].isupper() or c.name.startswith("fewclue ") and "k=0..4" in c.name
    return (c.split, aggregate, c.name, c.metric, c.fingerprint)
  return sorted(set(columns), key=key)


def _column_step(rows: Sequence[Row], column: Column) -> int | None:
  steps = {row.cells[column]["step"] for row in rows if not row.paper and column in row.cells}
  return steps.pop() if len(steps) == 1 else None


def format_cell(cell: dict | None, column_step: int | None, floatfmt: str = ".2f") -> str:
  if cell is None or cell["mean"] is None or math.isnan(cell["mean"]):
    return "-"
  text = format(cell["mean"], floatfmt)
  if cell["std"] is not None:
    text += f" ± {format(cell['std'], floatfmt)}"
  if cell.get("ci95") is not None:
    low, high = cell["ci95"]
    text += f" [{format(low, floatfmt)}, {format(high, floatfmt)}]"
  if cell["prompt_std"] is not None and cell["prompts"]:
    text += (f" (σ {format(cell['prompt_std'], floatfmt)} over {cell['prompts']} "
             f"{cell['spread_of']})")
  if column_step is None and cell["step"] is not None:
    text += f" @{cell['step']}"
  return text


def _shared(columns: Sequence[Column], fields: Sequence[str]) -> dict[tuple, list[Column]]:
  """The columns grouped by `fields`, where a group holds more than one."""
  groups: dict[tuple, list[Column]] = {}
  for c in columns:
    groups.setdefault(tuple(getattr(c, f) for f in fields), []).append(c)
  return {k: group for k, group in groups.items() if len(group) > 1}


def _same_definition(columns: Sequence[Column]) -> set[Column]:
  """Columns that share task, metric, split and fingerprint: their examples differ."""
  return {c for group in _shared(columns, ("name", "metric", "split", "fingerprint")).values()
          for c in group}


def _duplicate_names(columns: Sequence[Column]) -> set[tuple[str, str, str]]:
  return set(_shared(columns, ("name", "metric", "split")))


@dataclasses.dataclass
class Table:
  rows: list[Row]
  columns: list[Column]
  # Runs with no record at the `--step` asked for, each with the steps it has: their
  # cells are empty ("-"), and the table says why.
  without_step: list[str] = dataclasses.field(default_factory=list)
  step: int | None = None

  def headers(self) -> list[str]:
    same_definition = _same_definition(self.columns)
    return [c.header(_column_step(self.rows, c), with_data=c in same_definition)
            for c in self.columns]

  def conflicts(self) -> list[str]:
    """Tasks shown in more than one column because their definitions or examples differ."""
    return [f"{name} {metric} ({split})".replace("  ", " ")
            for name, metric, split in sorted(_duplicate_names(self.columns))]

  def disagreements(self) -> list[str]:
    """Measurements of one step that differ within a run (`runs.Run.disagreements`)."""
    return [f"{row.label}: {d}" for row in self.rows for run in row.runs
            for d in run.disagreements]

  def markdown(self, floatfmt: str = ".2f") -> str:
    headers = self.headers()
    lines = ["| run | model | seeds | " + " | ".join(h.replace("|", "\\|") for h in headers) + " |",
             "|" + "---|" * (len(headers) + 3)]
    for row in self.rows:
      cells = [format_cell(row.cells.get(c), _column_step(self.rows, c), floatfmt)
               for c in self.columns]
      # No seed applies to a paper's row or a run with no saved config (a baseline); "?"
      # is a trained run whose config does not name its seed.
      no_seed = row.paper or not any(run.has_config for run in row.runs)
      seeds = "-" if no_seed else ",".join("?" if s is None else str(s) for s in row.seeds)
      lines.append(f"| {row.label} | {row.model} | {seeds} | " + " | ".join(cells) + " |")
    notes = [f"Different task definitions or examples, kept apart: "
             f"{', '.join(self.conflicts())}."] if self.conflicts() else []
    notes += [f"Two measurements of one step differ in {d}." for d in self.disagreements()]
    if self.without_step:
      notes.append(f"No record at step {self.step} in {'; '.join(self.without_step)}.")
    notes += [f"No 95% interval in {', '.join(rows)}: {reason}."
              for reason, rows in self.without_interval().items()]
    return "\n".join(lines + ([""] + notes if notes else []))

  def without_interval(self) -> dict[str, list[str]]:
    """Why cells carry no interval (a quoted number, no saved predictions) -> their rows."""
    out: dict[str, list[str]] = {}
    for row in self.rows:
      for c in self.columns:
        cell = row.cells.get(c)
        if cell and cell["ci95"] is None and row.label not in out.get(cell["no_ci95"], []):
          out.setdefault(cell["no_ci95"], []).append(row.label)
    return out

  def csv(self) -> str:
    import csv  # pylint: disable=g-import-not-at-top
    import io  # pylint: disable=g-import-not-at-top
    buf = io.StringIO()
    writer = csv.writer(buf)
    headers = self.headers()
    writer.writerow(["run", "model", "seeds", *[x for h in headers for x in (
        h, f"{h} std", f"{h} ci95 low", f"{h} ci95 high")]])
    for row in self.rows:
      values = []
      for c in self.columns:
        cell = row.cells.get(c)
        ci95 = (cell or {}).get("ci95") or ("", "")
        values += ["" if cell is None else cell["mean"],
                   "" if cell is None or cell["std"] is None else cell["std"], *ci95]
      writer.writerow([row.label, row.model, " ".join(str(s) for s in row.seeds), *values])
    return buf.getvalue()

  def json(self) -> dict:
    columns = [{"header": h, **dataclasses.asdict(c), "step": _column_step(self.rows, c)}
               for h, c in zip(self.headers(), self.columns)]
    rows = [{"run": r.label, "model": r.model, "seeds": r.seeds, "paper": r.paper,
             "cells": {h: r.cells[c] for h, c in zip(self.headers(), self.columns)
                       if c in r.cells}} for r in self.rows]
    return {"columns": columns, "rows": rows, "conflicts": self.conflicts(),
            "disagreements": self.disagreements(), "without_step": self.without_step}


def _check_metrics(prefer: Sequence[str], runs: Sequence[Run]) -> None:
  """A `--metric` no record reports is a ValueError naming the close ones, not a silent
  fall back to each task's headline metric (a typo would read as the metric asked for)."""
  keys = {key for run in runs for record in run.records.values() for key in record.metrics}
  names = sorted(keys | {key.rsplit("/", 1)[-1] for key in keys})
  for metric in prefer:
    if not any(R.matches(key, metric) for key in keys):
      close = difflib.get_close_matches(metric, names, n=3, cutoff=0.5)
      hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
      raise ValueError(f"--metric {metric!r} is reported by no record of these runs{hint}; "
                       f"their metrics: {', '.join(names) or 'none'}")


def build(run_dirs: Sequence[str | os.PathLike], *, step: int | None = None,
          prefer: Sequence[str] = (), all_metrics: bool = False, paper: str = "default",
          tasks: str | None = None, merge: bool = False,
          resamples: int = bootstrap.RESAMPLES) -> Table:
  """The table for `run_dirs` (each a folder holding metrics.jsonl files, or one file;
  a folder of several runs is each of them: `runs.run_folders`).

  `merge` makes all of them one run (one row): the parts of one model's results.
  `resamples` bootstrap draws give each run's intervals (0: none but over seeds).
  A `step` or `tasks` that matches nothing is a ValueError naming what there is, not an
  empty table (a mistyped filter would otherwise read as runs without results).
  """
  runs = [load_run(folder, step) for d in run_dirs for folder in run_folders(d)]
  if step is not None and not any(run.records for run in runs):
    steps = ", ".join(map(str, sorted({s for run in runs for s in run.steps}))) or "none"
    raise ValueError(f"--step {step} matches no record in "
                     f"{', '.join(str(run.path) for run in runs)}; their steps: {steps}")
  without_step = [f"{run.path} (its steps: {', '.join(map(str, sorted(run.steps)))})"
                  for run in runs if step is not None and not run.records]
  _check_metrics(prefer, runs)
  runs = [intervals.with_intervals(run, resamples) for run in runs]
  if merge:
    runs = [merge_runs(runs)]
  rows = build_rows(runs, prefer, all_metrics)
  aggregates.add_csl_delta_m(rows)
  columns = [c for row in rows for c in row.cells]
  if tasks:
    try:
      pattern = re.compile(tasks)
    except re.error as e:
      raise ValueError(f"--tasks {tasks!r} is not a regular expression: {e}") from None
    names = sorted({c.name for c in columns})
    columns = [c for c in columns if pattern.search(c.name)]
    if not columns:
      raise ValueError(f"--tasks {tasks!r} matches no column; the runs' columns: "
                       f"{', '.join(names) or 'none'}")
  columns = _order(columns)
  rows += paper_numbers.paper_rows(columns, paper)
  return Table(rows, columns, without_step, step)
