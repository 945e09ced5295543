"""Linear probes of the official SciRepEval evaluator (`SupervisedEvaluator`).

The estimators, grids, folds and GridSearchCV scoring are the official ones:
* single-label: LinearSVC(squared hinge) tuned over C in {1e-2..1e2} by
  unshuffled 3-fold CV on accuracy, refit on the whole probe-train split;
* multi-label: one-vs-rest, C tuned per label (hinge loss, max_iter 10000);
* regression: LinearSVR tuned over C in {1e-4..1e2} by 3-fold CV on R².
`backend="sklearn"` (default, installable everywhere) or `"lightning"`
(sklearn-contrib-lightning, the estimators the paper's numbers came from: no
intercept, other tolerances), so every result records which one scored it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats
from sklearn import metrics as skm
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier

RANDOM_STATE = 42
CLASSIFICATION_CS = np.logspace(-2, 2, 5)
REGRESSION_CS = np.logspace(-4, 2, 7)
BACKENDS = ("sklearn", "lightning")


def _estimators(backend: str):
  if backend == "sklearn":
    from sklearn.svm import LinearSVC, LinearSVR
    return LinearSVC, LinearSVR
  if backend == "lightning":
    try:
      from lightning.classification import LinearSVC  # pytype: disable=import-error
      from lightning.regression import LinearSVR  # pytype: disable=import-error
    except ImportError as e:
      raise ImportError("backend='lightning' needs sklearn-contrib-lightning: pip install "
                        "Cython numpy && pip install --no-build-isolation "
                        "sklearn-contrib-lightning") from e
    return LinearSVC, LinearSVR
  raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")


def classifier(*, multi_label: bool = False, grid: bool = True, backend: str = "sklearn",
               cv: int = 3, n_jobs: int = 1):
  """The official (unfitted) classification probe."""
  svc, _ = _estimators(backend)
  grid_cs = {"C": CLASSIFICATION_CS}
  if multi_label:
    # HEAD passes loss="hinge" so sklearn matches lightning's default loss.
    base = svc(max_iter=10000, loss="hinge") if backend == "sklearn" else svc(max_iter=10000)
    return OneVsRestClassifier(GridSearchCV(base, cv=cv, param_grid=grid_cs, n_jobs=n_jobs),
                               n_jobs=1)
  base = svc(loss="squared_hinge", random_state=RANDOM_STATE)
  return GridSearchCV(base, cv=cv, param_grid=grid_cs, n_jobs=n_jobs) if grid else base


def regressor(*, backend: str = "sklearn", cv: int = 3, n_jobs: int = 1):
  """The official (unfitted) regression probe."""
  _, svr = _estimators(backend)
  return GridSearchCV(svr(random_state=RANDOM_STATE), cv=cv,
                      param_grid={"C": REGRESSION_CS}, n_jobs=n_jobs)


def _check_xy(x_train, y_train, x_test) -> None:
  if len(x_train) != len(y_train):
    raise ValueError(f"{len(x_train)} training embeddings but {len(y_train)} labels")
  if not len(x_train) or not len(x_test):
    raise ValueError(f"empty probe split: {len(x_train)} train / {len(x_test)} test rows "
                     "have embeddings")


def classify(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, *,
             multi_label: bool = False, grid: bool = True, backend: str = "sklearn",
             n_jobs: int = 1) -> np.ndarray:
  """Fits the probe on (x_train, y_train); predictions for x_test."""
  _check_xy(x_train, y_train, x_test)
  probe = classifier(multi_label=multi_label, grid=grid, backend=backend, n_jobs=n_jobs)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # ConvergenceWarning per grid point says nothing new.
    probe.fit(x_train, y_train)
  return probe.predict(x_test)


def regress(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, *,
            backend: str = "sklearn", n_jobs: int = 1) -> np.ndarray:
  _check_xy(x_train, y_train, x_test)
  probe = regressor(backend=backend, n_jobs=n_jobs)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    probe.fit(x_train, y_train)
  return probe.predict(x_test)


def classification_metrics(y_true, y_pred, metrics: Sequence[str]) -> dict[str, float]:
  """`f1`, `f1_macro`, `accuracy`, `precision_macro`, ...: 100 x sklearn, rounded to 2."""
  scorers = {"f1": skm.f1_score, "accuracy": skm.accuracy_score,
             "precision": skm.precision_score, "recall": skm.recall_score}
  out = {}
  for m in metrics:
    name, _, average = m.partition("_")
    if name not in scorers:
      raise ValueError(f"unknown classification metric {m!r}; known: {sorted(scorers)} "
                       "with an optional _<average> suffix")
    kwargs = {"average": average} if average else {}
    out[m] = float(np.round(100 * scorers[name](y_true, y_pred, **kwargs), 2))
  return out


def regression_metrics(y_true, y_pred, metrics: Sequence[str]) -> dict[str, float]:
  """`kendalltau` (τ-b), `pearsonr`, `r2` (x100, rounded to 2) and `mse` (raw)."""
  out = {}
  for m in metrics:
    if m == "kendalltau":
      value = stats.kendalltau(y_true, y_pred)[0]
      if np.isnan(value):  # Constant predictions: say so, never report 0.
        warnings.warn("Kendall tau is NaN: the predictions (or targets) are constant")
    elif m == "pearsonr":
      value = stats.pearsonr(y_true, y_pred)[0]
    elif m == "r2":
      value = skm.r2_score(y_true, y_pred)
    elif m == "mse":
      out[m] = float(skm.mean_squared_error(y_true, y_pred))
      continue
    else:
      raise ValueError(f"unknown regression metric {m!r}; known: kendalltau, pearsonr, r2, mse")
    out[m] = float(np.round(100 * value, 2))
  return out
