"""The probes equal direct scikit-learn / SciPy computations on synthetic embeddings."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC, LinearSVR

from crosstask.metrics.scirepeval import few_shot, probes


def _blobs(n, classes, dim=8, seed=0):
  rng = np.random.RandomState(seed)
  y = np.arange(n) % classes
  centres = rng.normal(size=(classes, dim)) * 2
  return (centres[y] + rng.normal(size=(n, dim))).astype(np.float32), y


def _multi_hot(n, labels=4, seed=1):
  rng = np.random.RandomState(seed)
  y = (rng.rand(n, labels) < 0.35).astype(int)
  y[np.arange(n), np.arange(n) % labels] = 1  # Every row has a label; every label >= n/4.
  x = (y @ rng.normal(size=(labels, 6)) + 0.5 * rng.normal(size=(n, 6))).astype(np.float32)
  return x, y


def test_single_label_probe_equals_grid_searched_linear_svc():
  x, y = _blobs(120, 3)
  x_test, y_test = _blobs(45, 3, seed=5)
  direct = GridSearchCV(LinearSVC(loss="squared_hinge", random_state=42),
                        param_grid={"C": [0.01, 0.1, 1.0, 10.0, 100.0]},
                        cv=StratifiedKFold(3, shuffle=False)).fit(x, y)
  preds = probes.classify(x, y, x_test)
  np.testing.assert_array_equal(preds, direct.predict(x_test))
  got = probes.classification_metrics(y_test, preds, ["f1_macro", "accuracy"])
  assert got == {"f1_macro": round(100 * f1_score(y_test, direct.predict(x_test),
                                                  average="macro"), 2),
                 "accuracy": round(100 * float(np.mean(direct.predict(x_test) == y_test)), 2)}
  assert 0 < got["f1_macro"] <= 100


def test_binary_f1_is_positive_class_f1():
  y_true, y_pred = np.array([1, 0, 1, 1, 0, 0]), np.array([1, 1, 0, 1, 0, 0])
  assert probes.classification_metrics(y_true, y_pred, ["f1"]) == {"f1": 66.67}
  with pytest.raises(ValueError, match="unknown classification metric"):
    probes.classification_metrics(y_true, y_pred, ["auc"])


def test_multi_label_probe_tunes_c_per_label():
  x, y = _multi_hot(90)
  x_test, y_test = _multi_hot(30, seed=7)
  # The official multi-label probe leaves LinearSVC's random_state unset, so liblinear
  # draws its seed from NumPy's global RNG; when it stops at max_iter unconverged the
  # fit depends on that seed. Both fits start from the same global state.
  np.random.seed(0)
  direct = OneVsRestClassifier(GridSearchCV(LinearSVC(max_iter=10000, loss="hinge"), cv=3,
                                            param_grid={"C": np.logspace(-2, 2, 5)})).fit(x, y)
  np.random.seed(0)
  preds = probes.classify(x, y, x_test, multi_label=True)
  np.testing.assert_array_equal(preds, direct.predict(x_test))
  assert preds.shape == y_test.shape
  f1 = probes.classification_metrics(y_test, preds, ["f1_macro"])["f1_macro"]
  assert f1 == round(100 * f1_score(y_test, direct.predict(x_test), average="macro"), 2)
  # C is chosen per label: one fitted grid search per column.
  assert len(probe_cs := [e.best_params_["C"] for e in direct.estimators_]) == 4, probe_cs


def test_regression_probe_and_kendall_tau():
  rng = np.random.RandomState(3)
  x = rng.normal(size=(90, 5)).astype(np.float32)
  w = rng.normal(size=5)
  y = x @ w + 0.3 * rng.normal(size=90)
  x_test = rng.normal(size=(40, 5)).astype(np.float32)
  y_test = x_test @ w
  direct = GridSearchCV(LinearSVR(random_state=42), param_grid={"C": np.logspace(-4, 2, 7)},
                        cv=KFold(3)).fit(x, y)
  preds = probes.regress(x, y, x_test)
  np.testing.assert_allclose(preds, direct.predict(x_test), rtol=0, atol=0)
  got = probes.regression_metrics(y_test, preds, ["kendalltau", "pearsonr"])
  assert got["kendalltau"] == round(100 * stats.kendalltau(y_test, direct.predict(x_test))[0], 2)
  assert got["kendalltau"] > 80  # A linear target is ranked almost perfectly.
  assert got["pearsonr"] == round(100 * stats.pearsonr(y_test, preds)[0], 2)


def test_constant_predictions_give_nan_tau_with_a_warning():
  with pytest.warns(UserWarning, match="NaN"):
    got = probes.regression_metrics([1.0, 2.0, 3.0], [0.5, 0.5, 0.5], ["kendalltau"])
  assert math.isnan(got["kendalltau"])


def test_single_label_few_shot_sets_are_stratified_fold_test_parts():
  _, y = _blobs(100, 4)
  sets = few_shot.single_label_training_sets(y, sample_size=16, iterations=3)
  direct = [held for _, held in StratifiedKFold(n_splits=math.ceil(100 / 16)).split(
      np.zeros((100, 1)), y)][:3]
  assert len(sets) == 3
  for got, want in zip(sets, direct):
    np.testing.assert_array_equal(got, want)
    assert 14 <= len(got) <= 16  # ~k examples in total, not per class.
  # More iterations than folds: the split yields what it has (7 folds here).
  assert len(few_shot.single_label_training_sets(y, 16, 50)) == 7


def test_single_label_few_shot_score_is_mean_of_c1_runs():
  x, y = _blobs(60, 2)
  x_test, y_test = _blobs(30, 2, seed=9)
  got = few_shot.few_shot_scores(x, y, x_test, y_test, sample_size=12, iterations=4,
                                 metrics=["f1"])
  runs = []
  for _, held in list(StratifiedKFold(n_splits=5).split(x, y))[:4]:
    clf = LinearSVC(loss="squared_hinge", random_state=42).fit(x[held], y[held])  # C=1
    runs.append(round(100 * f1_score(y_test, clf.predict(x_test)), 2))
  assert got == {"f1": float(np.mean(runs))}


def _official_multi_label_draws(y, k, iterations):
  """The official loop, with numpy's global seed."""
  out = []
  for i in range(iterations):
    idx_set = set()
    np.random.seed(42 + i)
    for yi in range(y.shape[1]):
      idx_set.update(np.random.choice(np.where(y[:, yi] == 1)[0], k, replace=False).tolist())
    out.append(list(idx_set))
  return out


def test_multi_label_few_shot_draws_k_per_label_with_seeds_42_plus_i():
  _, y = _multi_hot(80)
  sets = few_shot.multi_label_training_sets(y, sample_size=5, iterations=3)
  assert sets == _official_multi_label_draws(y, 5, 3)
  assert all(y[s].sum(axis=0).min() >= 5 for s in sets)
  with pytest.raises(ValueError, match="label column"):
    few_shot.multi_label_training_sets(y, sample_size=79, iterations=1)


def test_multi_label_few_shot_score_uses_grid_search():
  x, y = _multi_hot(80)
  x_test, y_test = _multi_hot(20, seed=4)
  got = few_shot.few_shot_scores(x, y, x_test, y_test, sample_size=5, iterations=2,
                                 metrics=["f1_macro"], multi_label=True)
  runs = []
  for s in _official_multi_label_draws(y, 5, 2):
    clf = OneVsRestClassifier(GridSearchCV(LinearSVC(max_iter=10000, loss="hinge"), cv=3,
                                           param_grid={"C": np.logspace(-2, 2, 5)}))
    preds = clf.fit(x[s], y[s]).predict(x_test)
    runs.append(round(100 * f1_score(y_test, preds, average="macro"), 2))
  assert got == {"f1_macro": float(np.mean(runs))}


def test_unknown_backend_is_refused():
  with pytest.raises(ValueError, match="backend"):
    probes.classifier(backend="torch")


def test_lightning_backend_uses_lightnings_estimators(monkeypatch):
  """sklearn-contrib-lightning is not installed here; a stand-in checks the wiring."""
  import sys
  import types
  made = []

  class FakeSVC(LinearSVC):
    def __init__(self, **kw):
      made.append(("svc", kw))
      super().__init__(**kw)

  class FakeSVR(LinearSVR):
    def __init__(self, **kw):
      made.append(("svr", kw))
      super().__init__(**kw)

  pkg = types.ModuleType("lightning")
  clf, reg = types.ModuleType("lightning.classification"), types.ModuleType("lightning.regression")
  clf.LinearSVC, reg.LinearSVR = FakeSVC, FakeSVR
  monkeypatch.setitem(sys.modules, "lightning", pkg)
  monkeypatch.setitem(sys.modules, "lightning.classification", clf)
  monkeypatch.setitem(sys.modules, "lightning.regression", reg)
  assert isinstance(probes.classifier(backend="lightning").estimator, FakeSVC)
  assert isinstance(probes.regressor(backend="lightning").estimator, FakeSVR)
  probes.classifier(multi_label=True, backend="lightning")
  # Multi-label keeps lightning's own default loss (hinge); sklearn gets it explicitly.
  assert made == [("svc", {"loss": "squared_hinge", "random_state": 42}),
                  ("svr", {"random_state": 42}), ("svc", {"max_iter": 10000})]
