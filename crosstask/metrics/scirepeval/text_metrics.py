"""SeqIO metrics for the text-to-text forms, with the probes' sklearn / SciPy calls.

`fn(targets, predictions) -> {name: 0..100}`. Classification predictions outside
the label set count as wrong without adding a class (the probes' macro F1
averages over the labels seen in targets and predictions). Regression
predictions `float()` cannot read take the probe-train median (the spec's rule;
a task passes it) and are counted in `parse_failures`. Pairs are scored here by
yes/no accuracy only: their ranking metrics come from `crosstask.relevance`
(log P(yes) - log P(no)).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence


def _check(targets, predictions, name):
  if len(targets) != len(predictions) or not targets:
    raise ValueError(f"{name}: {len(targets)} targets but {len(predictions)} predictions")


def label_f1(label_set: Sequence[str], average: str = "macro") -> Callable:
  """Macro F1 (or binary F1 with `average="binary"`: positive = the first label)."""
  labels = tuple(label_set)

  def fn(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
    from sklearn.metrics import f1_score  # pylint: disable=g-import-not-at-top
    _check(targets, predictions, "label_f1")
    preds = [p.strip() if p.strip() in labels else "<invalid>" for p in predictions]
    invalid = sum(p == "<invalid>" for p in preds)
    if average == "binary":
      y = [int(t == labels[0]) for t in targets]
      p = [int(x == labels[0]) for x in preds]
      return {"f1": 100 * f1_score(y, p), "invalid": 100 * invalid / len(preds)}
    used = sorted(set(targets) | (set(preds) & set(labels)))
    score = f1_score(list(targets), preds, labels=used, average=average, zero_division=0)
    return {f"f1_{average}": 100 * score, "invalid": 100 * invalid / len(preds)}
  return fn


def multi_label_f1(label_set: Sequence[str], separator: str = ", ") -> Callable:
  """Macro F1 over every label column (23 for FoS), as the multi-label probe."""
  labels = tuple(label_set)

  def hot(text: str) -> list[int]:
    chosen = {part.strip() for part in text.split(separator.strip())}
    return [int(l in chosen) for l in labels]

  def fn(targets, predictions) -> dict[str, float]:
    from sklearn.metrics import f1_score  # pylint: disable=g-import-not-at-top
    _check(targets, predictions, "multi_label_f1")
    score = f1_score([hot(t) for t in targets], [hot(p) for p in predictions],
                     average="macro", zero_division=0)
    return {"f1_macro": 100 * score}
  return fn


def parse_number(text: str) -> float | None:
  """`float()` of the stripped text, as the spec parses; None where it fails or the
  value is not finite ("nan" and "inf" would make τ undefined)."""
  try:
    value = float(text.strip())
  except ValueError:
    return None
  return value if math.isfinite(value) else None


def kendall_tau(fill: float | Callable[[], float]) -> Callable:
  """Kendall τ-b (x100) of the parsed predictions; those `parse_number` cannot read take
  `fill`, the probe-train median (a callable is called only when one fails, so a task
  reads its train split only then). NaN with a warning if predictions are constant."""

  def fn(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
    from scipy import stats  # pylint: disable=g-import-not-at-top
    _check(targets, predictions, "kendall_tau")
    parsed = [parse_number(p) for p in predictions]
    failures = sum(p is None for p in parsed)
    if failures:
      value = float(fill() if callable(fill) else fill)
      parsed = [value if p is None else p for p in parsed]
    tau = stats.kendalltau([float(t) for t in targets], parsed)[0]
    if math.isnan(tau):
      warnings.warn("Kendall tau is NaN: predictions are constant or unparsable")
    return {"kendalltau": 100 * tau, "parse_failures": float(failures)}
  return fn


def yes_no_accuracy(targets, predictions) -> dict[str, float]:
  _check(targets, predictions, "yes_no_accuracy")
  hits = sum(t.strip() == p.strip().lower() for t, p in zip(targets, predictions))
  return {"accuracy": 100 * hits / len(targets)}
