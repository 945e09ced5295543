"""Rank classification: every option scored by the model, the best one is the answer.

The score-metric half of T5's rank classification (SeqIO calls a task's
`(targets, scores)` metrics with the model's log-likelihood of each example's
target). Each scored example is one (question, option) pair; its postprocessed
target is `(question id, option index, is_correct)`. The answer of a question
is its best-scored option (ties: the lower option index), so a model can
never give an invalid answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from crosstask.metrics import _checks


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
    if question not in best or score > best[question][0] or (
        score == best[question][0] and option < best[question][1]):
      best[question] = (score, option)
    correct.setdefault(question, set())
    if is_correct:
      correct[question].add(option)
  return {q: (option, option in correct[q]) for q, (_, option) in best.items()}


def rank_accuracy(targets: Sequence[tuple], scores: Sequence[float]) -> dict[str, float]:
  """Percentage of questions whose best-scored option is correct (0-100)."""
  chosen = rank_choices(targets, scores)
  return {"accuracy": 100.0 * sum(ok for _, ok in chosen.values()) / len(chosen)}
