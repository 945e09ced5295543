"""Rank classification: every option scored by the model, the best one is the answer.

The score-metric half of T5's rank classification (SeqIO calls a task's
`(targets, scores)` metrics with the model's log-likelihood of each example's
target). Each scored example is one (question, option) pair; its postprocessed
target is `(question id, option index, is_correct)`. The answer of a question
is its best-scored option (ties: the lower option index), so a model can
never give an invalid answer. A NaN score is the best, as `np.argmax` over a
question's option logits (the official C3, ChID and FewCLUE scripts) takes the
first NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from crosstask.metrics import _checks


def _beats(a: tuple[float, int], b: tuple[float, int]) -> bool:
  """Whether option a = (score, index) is np.argmax's pick over b: NaN first, then the
  higher score, then the lower index."""
  (score_a, index_a), (score_b, index_b) = a, b
  if math.isnan(score_a) or math.isnan(score_b):
    return math.isnan(score_a) and (not math.isnan(score_b) or index_a < index_b)
  return score_a > score_b or (score_a == score_b and index_a < index_b)


def rank_choices(targets: Sequence[tuple], scores: Sequence[float]) -> dict:
  """{question id: (chosen option, whether it is correct)} in first-seen order."""
  _checks.check_pairs(targets, scores, "rank_classification")
  best: dict = {}
  correct: dict = {}
  for i, (target, score) in enumerate(zip(targets, scores)):
    try:
      question, option, is_correct = target
    except (TypeError, ValueError):
      raise ValueError(f"rank_classification: targets[{i}] is {target!r}; expected "
                       "(question id, option index, is_correct)") from None
    score = float(score)
    if question not in best or _beats((score, option), best[question]):
      best[question] = (score, option)
    correct.setdefault(question, set())
    if is_correct:
      correct[question].add(option)
  return {q: (option, option in correct[q]) for q, (_, option) in best.items()}


def rank_accuracy(targets: Sequence[tuple], scores: Sequence[float]) -> dict[str, float]:
  """Percentage of questions whose best-scored option is correct (0-100)."""
  chosen = rank_choices(targets, scores)
  return {"accuracy": 100.0 * sum(ok for _, ok in chosen.values()) / len(chosen)}
