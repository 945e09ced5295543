"""Metrics of the text-to-text forms equal the probes' sklearn / SciPy calls."""

import math

import pytest
from scipy import stats
from sklearn.metrics import f1_score

from crosstask.metrics.scirepeval import text_metrics as tm


def test_macro_f1_counts_invalid_outputs_as_wrong_without_a_class():
  fn = tm.label_f1(["Brain", "Liver", "DNA"])
  got = fn(["Brain", "Liver", "Brain", "DNA"], ["Brain", "Liver ", "kidney?", "Brain"])
  want = f1_score(["Brain", "Liver", "Brain", "DNA"], ["Brain", "Liver", "<invalid>", "Brain"],
                  labels=["Brain", "DNA", "Liver"], average="macro", zero_division=0)
  assert got == {"f1_macro": pytest.approx(100 * want), "invalid": 25.0}


def test_binary_f1_positive_is_yes():
  fn = tm.label_f1(["yes", "no"], average="binary")
  got = fn(["yes", "no", "yes", "no"], ["yes", "yes", "no", "no"])
  assert got["f1"] == pytest.approx(100 * f1_score([1, 0, 1, 0], [1, 1, 0, 0]))


def test_multi_label_macro_f1_over_all_columns():
  labels = ["Art", "Biology", "Physics"]
  got = tm.multi_label_f1(labels)(["Art, Physics", "Biology"], ["Physics", "Biology, Art"])
  want = f1_score([[1, 0, 1], [0, 1, 0]], [[0, 0, 1], [1, 1, 0]], average="macro",
                  zero_division=0)
  assert got == {"f1_macro": pytest.approx(100 * want)}


def test_kendall_tau_parses_with_float_and_fills_failures_with_the_given_median():
  # "about 2.5" is no number to float(); "nan" no finite one: both take the fill.
  got = tm.kendall_tau(2.0)(["1", "2", "3", "4", "5"],
                           [" 0.5 ", "about 2.5", "n/a", "9e0", "nan"])
  want = stats.kendalltau([1, 2, 3, 4, 5], [0.5, 2.0, 2.0, 9.0, 2.0])[0]
  assert got == {"kendalltau": pytest.approx(100 * want), "parse_failures": 3.0}
  # A callable fill is called only when a prediction fails.
  def unread():
    raise AssertionError("read although every prediction parsed")
  assert tm.kendall_tau(unread)(["1", "2"], ["1", "2"])["kendalltau"] == pytest.approx(100)
  with pytest.warns(UserWarning, match="NaN"):
    assert math.isnan(tm.kendall_tau(0.0)(["1", "2"], ["x", "y"])["kendalltau"])


def test_yes_no_accuracy_and_length_check():
  assert tm.yes_no_accuracy(["yes", "no"], ["Yes", "yes"]) == {"accuracy": 50.0}
  with pytest.raises(ValueError, match="2 targets but 1"):
    tm.yes_no_accuracy(["yes", "no"], ["yes"])


def test_metrics_package_imports_without_tensorflow_seqio_or_jax():
  import subprocess, sys
  code = ("import sys\nfor m in ('tensorflow', 'seqio', 'jax'): sys.modules[m] = None\n"
          "import crosstask.metrics.scirepeval.probes, crosstask.metrics.scirepeval.few_shot\n"
          "import crosstask.metrics.scirepeval.ranking, crosstask.metrics.scirepeval.text_metrics\n")
  res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
  assert res.returncode == 0, res.stderr[-2000:]
