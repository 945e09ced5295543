"""Each run's 95% intervals, from the predictions it saved beside its metrics.

An eval job and training-time evaluation keep seqio's inference log beside
`metrics.jsonl`: `<task>-<step:06d>.jsonl`, a line per example with its
postprocessed `target` and `prediction` (and `score`, the target's likelihood,
for rank classification). A record without `ci95` (those `crosstask.score`
writes carry theirs) gets it from that file, resampled with the task's own
metric functions (`rescoring.metrics`). The tasks are looked up by their plain
name: a vocabulary's copy of a task has the same metric functions.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import pathlib

import numpy as np

from crosstask import records as R
from crosstask import vocabularies
from crosstask.results import bootstrap
from crosstask.results import rescoring
from crosstask.results.runs import Run

DEFAULT_MODULE = "crosstask.tasks.all"


def log_file(record: R.Record) -> pathlib.Path | None:
  """The inference log beside the metrics file a record was read from, if it exists."""
  if not record.where:
    return None
  folder = pathlib.Path(record.where.rsplit(":", 1)[0]).parent
  path = folder / f"{record.task}-{record.step:06d}.jsonl"
  return path if path.is_file() else None


def logged_outputs(path: pathlib.Path) -> rescoring.ModelOutputs:
  """The postprocessed targets, predictions and scores of a seqio inference log."""
  lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()
           if text.strip()]
  if not lines or any("target" not in line for line in lines):
    raise ValueError(f"{path}: not a seqio inference log (a 'target' per line)")
  column = lambda key: (np.array([float(line[key]) for line in lines])  # noqa: E731
                        if all(key in line for line in lines) else None)
  predictions = ([line["prediction"] for line in lines]
                 if all("prediction" in line for line in lines) else None)
  return rescoring.ModelOutputs([line["target"] for line in lines], predictions,
                                column("score"), column("aux_scores"))


def _task(name: str, module: str):
  import seqio  # pylint: disable=g-import-not-at-top
  importlib.import_module(module)
  for candidate in (name, vocabularies.base_task_name(name)):
    if candidate in seqio.TaskRegistry.names():
      return seqio.TaskRegistry.get(candidate)
  return None


def with_intervals(run: Run, resamples: int = bootstrap.RESAMPLES) -> Run:
  """`run` with `ci95` filled in each record whose inference log is found beside it."""
  if resamples <= 0:
    return run
  module = run.macros.get("MIXTURE_OR_TASK_MODULE", DEFAULT_MODULE)
  filled = {}
  for key, record in run.records.items():
    path = None if record.ci95 else log_file(record)
    task = _task(record.task, module) if path else None
    if task is not None:
      ci95 = rescoring.intervals(task, logged_outputs(path), resamples)
      record = dataclasses.replace(record, ci95={k: v for k, v in ci95.items()
                                                 if k in record.metrics})
    filled[key] = record
  return dataclasses.replace(run, records=filled)
