"""Benchmark aggregates from a run's records: CLUE/FewCLUE scores, LOT overall, SciRepEval
averages, and CSL's Δ_m between few-shot rows with and without meta-training.

Each reuses its benchmark's own scoring code; imports that register a benchmark's
tasks happen only when a table holds that benchmark. An aggregate's 95% interval
is a joint bootstrap: the same official function recomputed on each draw of its
member tasks' resampled scores (`bootstrap.joint`), so it exists where every
member's predictions were saved.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np

from crosstask import records as R
from crosstask.results import bootstrap
from crosstask.results.columns import R_SCIREPEVAL, Column, Row, Value
from crosstask.results.runs import Run
from crosstask.runtime.config import saved_run
from crosstask.tasks.common import report as common_report

# task -> metric -> its values on the bootstrap resamples of the task's examples
Replicates = Mapping[str, Mapping[str, np.ndarray]]
NO_MEMBER_PREDICTIONS = "a member task has no saved predictions to resample"


def _by_split(run: Run) -> dict[str, tuple[dict[str, R.Record], Replicates]]:
  out: dict[str, tuple[dict[str, R.Record], dict]] = {}
  for (task, split), record in run.records.items():
    records, replicates = out.setdefault(split, ({}, {}))
    records[task] = record
    if (task, split) in run.replicates:
      replicates[task] = run.replicates[(task, split)]
  return out


def _value(combine: Callable[[Mapping], float], scores: Mapping,
           draws: Mapping[Hashable, np.ndarray | None], **kwargs) -> Value:
  """The aggregate `combine(scores)` with its joint bootstrap interval over `draws`."""
  return Value(combine(scores), ci95=bootstrap.joint(combine, draws),
               no_ci95=NO_MEMBER_PREDICTIONS, **kwargs)


def _clue(tasks: Mapping[str, R.Record], split: str, reps: Replicates) -> dict[Column, Value]:
  from crosstask.metrics import clue_scores  # pylint: disable=g-import-not-at-top
  scores, draws = {}, {}
  for name in ("clue_{}", "clue_{}_rank"):
    for t in set(clue_scores.CLUE_TASKS) | set(clue_scores.CLASSIFICATION_TASKS):
      record = tasks.get(name.format(t))
      metric = "em" if t == "cmrc2018" else "accuracy"
      if record is not None and metric in record.metrics and t not in scores:
        scores[t] = record.metrics[metric]
        draws[t] = reps.get(name.format(t), {}).get(metric)
  out = {}
  for label, fn, needed in (("CLUE score", clue_scores.clue_score, clue_scores.CLUE_TASKS),
                            ("CLUE classification", clue_scores.classification_score,
                             clue_scores.CLASSIFICATION_TASKS),
                            ("CLUE MRC", clue_scores.mrc_score, clue_scores.MRC_TASKS)):
    if all(t in scores for t in needed):
      out[Column(label, "", split, "")] = _value(fn, scores, {t: draws[t] for t in needed})
  return out


FEWCLUE_NAME = re.compile(r"^fewclue_(?P<task>[a-z0-9]+)_k(?P<k>[0-4]|all)(?:_rank)?$")


def _fewclue(tasks: Mapping[str, R.Record], split: str, reps: Replicates
             ) -> dict[Column, Value]:
  from crosstask.metrics import clue_scores  # pylint: disable=g-import-not-at-top
  per_task: dict[str, dict[str, float]] = {}
  draws: dict[tuple[str, str], np.ndarray | None] = {}
  for name, record in tasks.items():
    match = FEWCLUE_NAME.match(name)
    if match and "accuracy" in record.metrics:
      per_task.setdefault(match["task"], {})[match["k"]] = record.metrics["accuracy"]
      draws[(match["task"], match["k"])] = reps.get(name, {}).get("accuracy")
  ks = [str(k) for k in range(clue_scores.FEWCLUE_SPLITS)]

  def split_mean(scores: Mapping[tuple[str, str], float], task: str) -> float:
    return common_report.mean_std([scores[(task, k)] for k in ks])[0]

  def score(scores: Mapping[tuple[str, str], float]) -> float:
    return clue_scores.fewclue_score({t: split_mean(scores, t) for t in clue_scores.FEWCLUE_TASKS})

  scores = {(task, k): v for task, per_k in per_task.items() for k, v in per_k.items()}
  out = {}
  complete = {task for task, per_k in per_task.items() if all(k in per_k for k in ks)}
  for task in complete:
    std = common_report.mean_std([per_task[task][k] for k in ks])[1]
    out[Column(f"fewclue {task} k=0..4", "accuracy", split, "")] = _value(
        lambda s, task=task: split_mean(s, task), scores, {(task, k): draws[(task, k)] for k in ks},
        step=None, prompts=5, prompt_std=std, spread_of="splits")
  if complete >= set(clue_scores.FEWCLUE_TASKS):
    out[Column("FewCLUE score", "", split, "")] = _value(
        score, scores, {(t, k): draws[(t, k)] for t in clue_scores.FEWCLUE_TASKS for k in ks})
  return out


LOT_TASKS = {"lot_zh_clozet_rank": "clozet", "lot_zh_clozet": "clozet", "lot_zh_senpos": "senpos",
             "lot_zh_plotcom": "plotcom", "lot_zh_outgen": "outgen"}


def _lot(tasks: Mapping[str, R.Record], split: str, reps: Replicates) -> dict[Column, Value]:
  from crosstask.metrics import lot  # pylint: disable=g-import-not-at-top
  flat, draws = {}, {}
  for name, prefix in LOT_TASKS.items():
    if name in tasks:
      for key, value in tasks[name].metrics.items():
        if f"{prefix}/{key}" not in flat:
          flat[f"{prefix}/{key}"] = value
          draws[f"{prefix}/{key}"] = reps.get(name, {}).get(key)
  out = {}
  for kind, names in (("understanding", lot.LOT_UNDERSTANDING),
                      ("generation", lot.LOT_GENERATION)):
    try:
      lot.lot_overall(flat, kind, split)
    except (KeyError, ValueError):  # a member task missing, or a split LOT gives no weights
      continue
    out[Column(f"LOT overall {kind}", "", split, "")] = _value(
        lambda s, kind=kind: lot.lot_overall(s, kind, split), flat, {n: draws[n] for n in names})
  return out


# The official scorer of SciRepEval's embeddings keeps no per-example values to resample.
NO_SCIREPEVAL_EXAMPLES = "scored from embeddings: no per-example values kept to resample"


def _scirepeval(tasks: Mapping[str, R.Record], split: str, reps: Replicates
                ) -> dict[Column, Value]:
  del reps  # the records come from embeddings, never from an inference log
  from crosstask.tasks.scirepeval import averages  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.scirepeval import benchmark  # pylint: disable=g-import-not-at-top
  from crosstask.results import rescoring  # pylint: disable=g-import-not-at-top
  results = {name[len(R_SCIREPEVAL):]: rescoring.unflatten(r.metrics)
             for name, r in tasks.items() if name.startswith(R_SCIREPEVAL)}
  if not results:
    return {}
  out = {}
  for name, result in results.items():
    spec = benchmark.get(name)
    for label, value in averages.task_numbers(spec, result).items():
      out[Column(f"SciRepEval {label}", "", split, tasks[R_SCIREPEVAL + name].fingerprint or "")
          ] = Value(value, tasks[R_SCIREPEVAL + name].step, no_ci95=NO_SCIREPEVAL_EXAMPLES)
  summary = averages.aggregate(results)
  for part in ("in_train", "out_of_train", "average"):
    count = (summary[f"{part}_count"] if part != "average"
             else summary["in_train_count"] + summary["out_of_train_count"])
    total = {"in_train": averages.IN_TRAIN_COUNT, "out_of_train": averages.OUT_OF_TRAIN_COUNT,
             "average": averages.IN_TRAIN_COUNT + averages.OUT_OF_TRAIN_COUNT}[part]
    if count:
      suffix = "" if count == total else f" ({count}/{total} numbers)"
      out[Column(f"SciRepEval {part.replace('_', '-')}{suffix}", "", split, "")] = Value(
          summary[part], no_ci95=NO_SCIREPEVAL_EXAMPLES)
  return out


AGGREGATES = (_clue, _fewclue, _lot, _scirepeval)


def aggregate_values(run: Run) -> dict[Column, Value]:
  out = {}
  for split, (tasks, reps) in _by_split(run).items():
    for fn in AGGREGATES:
      out.update(fn(tasks, split, reps))
  return out


def _csl_setting(run: Run) -> str | None:
  """'few' or '+meta' for a CSL few-shot run (by the stage of the run it starts from)."""
  if run.macros.get("STAGE") != "few" or "PARTITION" not in run.macros:
    return None
  start = run.macros.get("INITIAL_CHECKPOINT_PATH", "None")
  if start in ("None", ""):
    return "few"
  ckpt = pathlib.Path(start)
  model_dir = ckpt.parent if ckpt.name.startswith("checkpoint_") else ckpt
  stage = saved_run.bound(saved_run.saved_macros(model_dir), "STAGE")
  return "+meta" if stage == "meta" else "few"


def _csl_episodes(row: Row):
  from crosstask.tasks.csl import report as csl_report  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.csl import scenarios  # pylint: disable=g-import-not-at-top
  out = []
  for run in row.runs:
    setting = _csl_setting(run)
    if setting is None:
      continue
    partition = run.macros["PARTITION"]
    (task,) = scenarios.partition_tasks(partition, run.macros.get("LANG", "zh"))[1]
    for (name, split), record in run.records.items():
      if name == task:
        out.append((re.sub(r"^s\d+_", "", split), csl_report.Episode(
            partition, int(run.macros.get("SHOTS", 0)), setting,
            int(run.macros.get("EPISODE_SEED", 0)), record.metrics)))
  return out


def add_csl_delta_m(rows: Sequence[Row]) -> None:
  """Δ_m (CSL's +meta − few, in points) as a column of each +meta row, per partition and k.

  A +meta row is compared with the few rows of the same architecture (from the config);
  scenario 3's partitions with the few runs of the partitions they break.
  """
  if not any(_csl_setting(run) for row in rows for run in row.runs):
    return
  from crosstask.tasks.csl import report as csl_report  # pylint: disable=g-import-not-at-top
  episodes = {id(row): _csl_episodes(row) for row in rows}
  for row in rows:
    meta = [(split, e) for split, e in episodes[id(row)] if e.setting == "+meta"]
    if not meta:
      continue
    arch = row.model.split(" from ")[0]
    few = [(split, e) for other in rows if other.model.split(" from ")[0] == arch
           for split, e in episodes[id(other)] if e.setting == "few"]
    for split in sorted({split for split, _ in meta}):
      summary = csl_report.summarize([e for s_, e in meta + few if s_ == split])
      for k, cell in summary.items():
        for partition, value in cell["delta_m"].items():
          row.cells[Column(f"CSL Δ_m {partition} k={k}", "", split, "")] = {
              "mean": value, "std": None, "ci95": None, "n": len({e.seed for _, e in meta}),
              "step": None, "prompts": 0, "prompt_std": None, "spread_of": "",
              "no_ci95": "a difference of means over episodes: no interval computed"}
