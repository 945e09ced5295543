"""The few-shot probes of `FewShotEvaluator`, with their two different meanings of k.

* single-label (Biomimicry, DRSM): the held-out parts of an unshuffled
  StratifiedKFold(ceil(N / k)) are the training sets (about k examples IN TOTAL,
  stratified); each fits LinearSVC with C=1, no grid search; at most
  `iterations` runs (fewer when the split yields fewer folds).
* multi-label (FoS): run i seeds numpy's legacy generator with 42 + i and draws
  k positives PER LABEL without replacement; the union trains the full
  one-vs-rest probe WITH its grid search.
The score is the mean over runs of each run's rounded metric.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from sklearn.model_selection import StratifiedKFold

from crosstask.metrics.scirepeval import probes


def single_label_training_sets(y: np.ndarray, sample_size: int, iterations: int
                               ) -> list[np.ndarray]:
  """Index arrays of the few-shot training sets, in the official order."""
  folds = StratifiedKFold(n_splits=math.ceil(len(y) / sample_size))
  out = []
  for _, held_out in folds.split(np.zeros((len(y), 1)), y):
    out.append(held_out)
    if len(out) == iterations:
      break
  return out


def multi_label_training_sets(y: np.ndarray, sample_size: int, iterations: int
                              ) -> list[list[int]]:
  """Per run, the union of k positives drawn for each label column (seed 42 + run)."""
  y = np.asarray(y)
  out = []
  for run in range(iterations):
    rng = np.random.RandomState(probes.RANDOM_STATE + run)  # == np.random.seed(42 + run)
    chosen: set[int] = set()
    for column in range(y.shape[1]):
      positives = np.where(y[:, column] == 1)[0]
      if len(positives) < sample_size:
        raise ValueError(f"few-shot k={sample_size}: label column {column} has only "
                         f"{len(positives)} positive training examples")
      chosen.update(rng.choice(positives, sample_size, replace=False).tolist())
    out.append(list(chosen))  # Set order, as the official code indexes with it.
  return out


def few_shot_scores(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray,
                    y_test: np.ndarray, *, sample_size: int, iterations: int,
                    metrics: Sequence[str], multi_label: bool = False,
                    backend: str = "sklearn", n_jobs: int = 1) -> dict[str, float]:
  """Mean over runs of the per-run metrics (each already x100 and rounded)."""
  x_train, y_train = np.asarray(x_train), np.asarray(y_train)
  if multi_label:
    sets = multi_label_training_sets(y_train, sample_size, iterations)
  else:
    sets = single_label_training_sets(y_train, sample_size, iterations)
  per_run: dict[str, list[float]] = {}
  for index in sets:
    preds = probes.classify(x_train[index], y_train[index], x_test, multi_label=multi_label,
                            grid=multi_label, backend=backend, n_jobs=n_jobs)
    for k, v in probes.classification_metrics(y_test, preds, metrics).items():
      per_run.setdefault(k, []).append(v)
  return {k: float(np.mean(v)) for k, v in per_run.items()}
