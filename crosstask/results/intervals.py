"""Each run's 95% intervals, from the predictions it saved beside its metrics.

An eval job and training-time evaluation keep seqio's inference log beside
`metrics.jsonl`: `<task>-<step:06d>.jsonl`, a line per example with its
postprocessed `target` and `prediction` (and `score`, the target's likelihood,
for rank classification). A record without `ci95` (those `crosstask.score`
writes carry theirs, unless told `--bootstrap 0`: then the infer file beside
the record is read) gets it from that file, resampled with the task's own
metric functions (`rescoring.metrics`). The resamples themselves are kept on
the run (`Run.replicates`): a benchmark aggregate's interval is drawn from its
member tasks' resamples. The tasks are looked up by their plain name: a
vocabulary's copy of a task has the same metric functions.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Sequence

import numpy as np

from crosstask import records as R
from crosstask import vocabularies
from crosstask.results import bootstrap
from crosstask.results import rescoring
from crosstask.results.runs import Run
from crosstask.runtime.config import saved_run


def log_file(record: R.Record) -> pathlib.Path | None:
  """The inference log of a record, if it exists: beside the metrics file it was read
  from, or for an eval of NUM_EXAMPLES=N in that folder's `first_N/`. A record labelled
  `validation[:N]` reads `first_N/`; one labelled whole reads the folder's own log, else
  the largest `first_N/` (a run from before whole counts logged beside their records: an
  N at least the split's size, or it would be labelled a subset)."""
  if not record.where:
    return None
  folder = pathlib.Path(record.where.rsplit(":", 1)[0]).parent
  name = f"{record.task}-{record.step:06d}.jsonl"
  count = R.subset_count(record.split)
  if count is not None:
    folders = [folder / R.subset_log_dir(count)]
  else:
    subsets = [p for p in folder.glob("first_*") if R.subset_of_log_dir(p.name) is not None]
    folders = [folder, *sorted(subsets, key=lambda p: -R.subset_of_log_dir(p.name))]
  return next((f / name for f in folders if (f / name).is_file()), None)


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


def scored_file(record: R.Record) -> pathlib.Path | None:
  """The infer output a `crosstask.score` record was scored from (`source` 'score:<name>'),
  where it lies beside the record's metrics file (score's default place for it)."""
  if not record.where or not (record.source or "").startswith("score:"):
    return None
  path = pathlib.Path(record.where.rsplit(":", 1)[0]).parent / record.source[len("score:"):]
  return path if path.is_file() and R.inference_file(path) is not None else None


def inferred_outputs(task, path: pathlib.Path, record: R.Record) -> rescoring.ModelOutputs:
  """An infer output's lines postprocessed as the Evaluator would, from its examples."""
  inferences = rescoring.read_inferences(path, record.task, record.split)
  indices = [int(line["index"]) for line in inferences.lines]
  exs, _ = rescoring.examples(task, R.base_split(record.split or inferences.split), indices)
  return rescoring.outputs(task, inferences.lines, exs)


def _task(name: str):
  import seqio  # pylint: disable=g-import-not-at-top
  for candidate in (name, vocabularies.base_task_name(name)):
    if candidate in seqio.TaskRegistry.names():
      return seqio.TaskRegistry.get(candidate)
  return None


def with_intervals(run: Run, resamples: int = bootstrap.RESAMPLES) -> Run:
  """`run` with the bootstrap replicates of each record whose inference log is found beside
  it, and `ci95` from them where the record carries none."""
  if resamples <= 0:
    return run
  _, failed = rescoring.import_run_modules(saved_run.task_modules(run.macros))
  filled, replicates, no_ci95 = {}, {}, {}
  for key, record in run.records.items():
    path = log_file(record)
    # A score's record written without its interval (--bootstrap 0): from its infer file.
    inferred = None if path or record.ci95 else scored_file(record)
    task = _task(record.task) if path or inferred else None
    if (path or inferred) and task is None and failed:
      no_ci95[key] = f"its task module {failed!r} {rescoring.UNIMPORTABLE}"
    out = None
    if task is not None and path:
      out = logged_outputs(path)
    elif task is not None:
      try:
        out = inferred_outputs(task, inferred, record)
      except (OSError, ValueError) as e:  # the data root moved, or the file was edited
        no_ci95[key] = f"its infer file could not be read again ({e})"
    if out is not None:
      draws = {k: v for k, v in rescoring.replicates(task, out, resamples).items()
               if k in record.metrics}
      replicates[key] = draws
      if not record.ci95:
        record = dataclasses.replace(record, ci95={k: bootstrap.percentiles(v)
                                                   for k, v in draws.items()})
    filled[key] = record
  return dataclasses.replace(run, records=filled, replicates=replicates, no_ci95=no_ci95)


def write_log(folder: str | pathlib.Path, task: str, step: int, targets: Sequence,
              outputs: Sequence[str], predictions: Sequence) -> pathlib.Path:
  """Writes predictions made outside the runtime (a baseline's) as the inference log an eval
  keeps, `<task>-<step:06d>.jsonl` beside metrics.jsonl, so its cells get intervals too.

  `targets` and `predictions` are postprocessed (what the metric functions take),
  `outputs` the raw text each prediction was postprocessed from.
  """
  if not len(targets) == len(outputs) == len(predictions):
    raise ValueError(f"{task}: {len(targets)} targets, {len(outputs)} outputs and "
                     f"{len(predictions)} predictions")
  path = pathlib.Path(folder) / f"{task}-{int(step):06d}.jsonl"
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    for target, output, prediction in zip(targets, outputs, predictions):
      f.write(json.dumps({"input": {}, "target": target, "output": output,
                          "prediction": prediction}, ensure_ascii=False) + "\n")
  return path
