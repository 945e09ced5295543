"""Label metrics for text-to-text classification: accuracy and macro F1."""

from typing import Optional, Sequence

from crosstask.metrics import _checks


def _labels(targets, predictions, metric):
  _checks.check_pairs(targets, predictions, metric)
  gold = [_checks.check_text(t, metric, "targets", i).strip()
          for i, t in enumerate(targets)]
  pred = [_checks.check_text(p, metric, "predictions", i).strip()
          for i, p in enumerate(predictions)]
  return gold, pred


def accuracy(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
  """Percentage of predictions equal to the target (surrounding spaces ignored)."""
  gold, pred = _labels(targets, predictions, "accuracy")
  return {"accuracy": 100.0 * sum(g == p for g, p in zip(gold, pred)) / len(gold)}


def macro_f1(
    targets: Sequence[str],
    predictions: Sequence[str],
    *,
    label_set: Optional[Sequence[str]] = None,
) -> dict[str, float]:
  """Unweighted mean over classes of per-class F1, 0-100.

  Classes are the members of `label_set` that occur in the targets or the
  predictions, or the labels seen in `targets` when it is None: a class that
  occurs nowhere has no F1 to speak of, and counting it as 0 would keep perfect
  predictions below 100 on any set that lacks a class (FewCLUE's 67 CSLDCP
  disciplines on a few hundred papers). A target outside a given `label_set` is
  an error. A prediction outside the classes (free text a model generated) is
  simply wrong: it adds a false negative to its gold class and a false positive
  to no class. A class predicted but never right scores F1 0.
  """
  gold, pred = _labels(targets, predictions, "macro_f1")
  if label_set is None:
    classes = sorted(set(gold))
  else:
    classes = list(dict.fromkeys(label.strip() for label in label_set))
    known = set(classes)
    for i, label in enumerate(gold):
      if label not in known:
        raise ValueError(f"macro_f1: targets[{i}]={label!r} is not in label_set")
  tp = dict.fromkeys(classes, 0)
  fp = dict.fromkeys(classes, 0)
  fn = dict.fromkeys(classes, 0)
  for g, p in zip(gold, pred):
    if g == p:
      tp[g] += 1
      continue
    fn[g] += 1
    if p in fp:
      fp[p] += 1
  occurring = [c for c in classes if tp[c] + fp[c] + fn[c]]
  total = sum(2 * tp[c] / (2 * tp[c] + fp[c] + fn[c]) for c in occurring)
  return {"macro_f1": 100.0 * total / len(occurring)}


def weighted_f1(
    targets: Sequence[str],
    predictions: Sequence[str],
    *,
    label_set: Optional[Sequence[str]] = None,
) -> dict[str, float]:
  """Per-class F1 averaged with weights = gold support, 0-100 (sklearn "weighted").

  CiteSum's discipline task reports it beside macro F1: with skewed classes
  (most papers are Computer Science) the two tell different stories. Classes
  and out-of-set predictions are treated as in `macro_f1`; a class absent from
  the targets has weight 0.
  """
  gold, pred = _labels(targets, predictions, "weighted_f1")
  if label_set is not None:
    known = {label.strip() for label in label_set}
    for i, label in enumerate(gold):
      if label not in known:
        raise ValueError(f"weighted_f1: targets[{i}]={label!r} is not in label_set")
  support: dict[str, int] = {}
  tp: dict[str, int] = {}
  fp: dict[str, int] = {}
  for g, p in zip(gold, pred):
    support[g] = support.get(g, 0) + 1
    if g == p:
      tp[g] = tp.get(g, 0) + 1
    else:
      fp[p] = fp.get(p, 0) + 1
  total = 0.0
  for c, n in support.items():
    fn = n - tp.get(c, 0)
    denominator = 2 * tp.get(c, 0) + fp.get(c, 0) + fn
    total += n * 2 * tp.get(c, 0) / denominator
  return {"weighted_f1": 100.0 * total / len(gold)}
