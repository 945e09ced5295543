"""Scores an embeddings file for one task, returning the official results shape.

Official local layout of a task's test data (one directory per task):
`train.csv` + `test.csv` (probe splits, `paper_id,label`; `.jsonl` also read),
`test_qrel.jsonl` (IR tasks), and for Paper-Reviewer Matching
`test_hard_qrel.jsonl` + `test_soft_qrel.jsonl` (or `test_qrel.jsonl`) +
`reviewer_metadata.jsonl`. `data_dir` is that directory or a root holding
`<test config>/` or `test/<test config>/` (the S3 layout).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from crosstask.tasks.scirepeval import benchmark as B
from crosstask.metrics.scirepeval import few_shot, probes, ranking
from crosstask.tasks.scirepeval import readers

_MARKERS = ("train.csv", "train.jsonl", "test_qrel.jsonl", "test_hard_qrel.jsonl")


def task_dir(spec: B.TaskSpec, data_dir: str | os.PathLike) -> pathlib.Path:
  root = pathlib.Path(data_dir)
  for candidate in (root, root / spec.test, root / "test" / spec.test,
                    root / "scirepeval" / "test" / spec.test):
    if any((candidate / m).is_file() for m in _MARKERS):
      return candidate
  raise FileNotFoundError(f"no test data for {spec.name!r} under {root}: looked for "
                          f"{' or '.join(_MARKERS)} in {root}, {root / spec.test} and "
                          f"{root / 'test' / spec.test}")


def _split_file(directory: pathlib.Path, split: str) -> pathlib.Path:
  for suffix in (".csv", ".jsonl"):
    if (directory / f"{split}{suffix}").is_file():
      return directory / f"{split}{suffix}"
  raise FileNotFoundError(f"probe split {split!r} not found: {directory}/{split}.csv "
                          f"(or .jsonl)")


def probe_arrays(rows, embeddings: Mapping[str, np.ndarray], where: str
                 ) -> tuple[np.ndarray, np.ndarray, int]:
  """(X, y, dropped): rows whose paper has no embedding are dropped, as officially."""
  kept = [(pid, label) for pid, label in rows if pid in embeddings]
  if not kept:
    return np.zeros((0, 0)), np.zeros((0,)), len(rows)
  x = np.array([embeddings[pid] for pid, _ in kept])
  labels = [label for _, label in kept]
  if any(isinstance(l, list) for l in labels):
    lengths = {len(l) if isinstance(l, list) else -1 for l in labels}
    if len(lengths) != 1:
      raise readers.DataError(f"{where}: multi-label rows need multi-hot lists of one "
                                     f"length; got lengths {sorted(lengths)}")
  return x, np.array(labels), len(rows) - len(kept)


def score_supervised(spec: B.TaskSpec, embeddings: Mapping[str, np.ndarray],
                     directory: pathlib.Path, *, backend: str = "sklearn",
                     n_jobs: int = 1, few_shot_runs: bool = True,
                     info: dict | None = None) -> dict[str, Any]:
  train_path, test_path = _split_file(directory, "train"), _split_file(directory, "test")
  x_train, y_train, drop_train = probe_arrays(readers.read_probe_split(train_path), embeddings,
                                              str(train_path))
  x_test, y_test, drop_test = probe_arrays(readers.read_probe_split(test_path), embeddings,
                                           str(test_path))
  if spec.type == B.REGRESSION:
    preds = probes.regress(x_train, y_train.astype(float), x_test, backend=backend,
                           n_jobs=n_jobs)
    complete = probes.regression_metrics(y_test.astype(float), preds, spec.metrics)
  else:
    if spec.multi_label and y_train.ndim != 2:
      raise readers.DataError(f"{train_path}: {spec.name} is multi-label; labels must "
                                     "be multi-hot lists")
    preds = probes.classify(x_train, y_train, x_test, multi_label=spec.multi_label,
                            backend=backend, n_jobs=n_jobs)
    complete = probes.classification_metrics(y_test, preds, spec.metrics)
  if info is not None:
    info.update({"train_rows": int(len(x_train)), "test_rows": int(len(x_test)),
                 "rows_without_embedding": int(drop_train + drop_test)})
  if not spec.few_shot or not few_shot_runs:
    return complete
  runs = [{"sample_size": k, "results": few_shot.few_shot_scores(
              x_train, y_train, x_test, y_test, sample_size=k, iterations=n,
              metrics=spec.metrics, multi_label=spec.multi_label, backend=backend,
              n_jobs=n_jobs)}
          for k, n in spec.few_shot]
  return {"complete": complete, "few_shot": runs}


def score_ranking(spec: B.TaskSpec, embeddings: Mapping[str, np.ndarray],
                  directory: pathlib.Path, info: dict | None = None) -> dict[str, Any]:
  if spec.name == "Paper-Reviewer Matching":
    reviewers = readers.read_reviewer_metadata(directory / "reviewer_metadata.jsonl")
    splits = [(f"{s}_", directory / f"test_{s}_qrel.jsonl") for s in ("hard", "soft")]
    if not all(p.is_file() for _, p in splits):
      splits = [("", directory / "test_qrel.jsonl")]
    # One ranking, of the reviewers the hard split judges, scored against both splits'
    # judgements, as the official ReviewerMatchingEvaluator.evaluate does.
    qrels = {prefix: readers.read_qrels(path) for prefix, path in splits}
    run = ranking.reviewer_run(embeddings, qrels[splits[0][0]], reviewers)
    out = {}
    for prefix, judged in qrels.items():
      out.update({prefix + k: v for k, v in ranking.ir_metrics(judged, run, spec.metrics).items()})
    return out
  qrels = readers.read_qrels(readers.require_file(directory / "test_qrel.jsonl", "qrels"))
  missing = ranking.Missing()
  run = ranking.embedding_run(embeddings, qrels, missing)
  out = ranking.ir_metrics(qrels, run, spec.metrics)
  if info is not None:
    info.update({"queries": len(qrels), "queries_without_embedding": missing.queries,
                 "candidates_without_embedding": missing.candidates})
  return out


def score_task(spec: B.TaskSpec, embeddings: Mapping[str, np.ndarray] | str | os.PathLike,
               data_dir: str | os.PathLike, *, backend: str = "sklearn", n_jobs: int = 1,
               float16: bool = False, few_shot_runs: bool = True,
               info: dict | None = None) -> dict[str, Any]:
  """The task's entry of the official results JSON (metrics x100, rounded to 2).

  `info`, when given, receives counts the official evaluator keeps to itself:
  rows, queries and candidates dropped for lack of an embedding.
  """
  if spec.external or not spec.evaluated:
    return {"not_run": True, "reason": "S2AND is scored by allenai/S2AND" if spec.external
            else f"{spec.name} is a training-only task"}
  if not isinstance(embeddings, Mapping):
    embeddings = readers.read_embeddings(embeddings, float16=float16)
  directory = task_dir(spec, data_dir)
  if spec.type in (B.CLASSIFICATION, B.REGRESSION):
    return score_supervised(spec, embeddings, directory, backend=backend, n_jobs=n_jobs,
                            few_shot_runs=few_shot_runs, info=info)
  return score_ranking(spec, embeddings, directory, info=info)


def scored_by(backend: str) -> dict[str, str]:
  """Which code and estimator backend produced the numbers."""
  import sklearn
  import pytrec_eval  # noqa: F401
  from importlib import metadata
  info = {"scorer": "crosstask.scirepeval_eval", "backend": backend,
          "scikit-learn": sklearn.__version__}
  try:
    info["pytrec-eval-terrier"] = metadata.version("pytrec-eval-terrier")
  except metadata.PackageNotFoundError:
    pass
  return info
