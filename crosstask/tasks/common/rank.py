"""Rank classification tasks: one example per (question, option), the best-scored option answers.

A rank task's target is one option; the example also carries which question and
option it is and whether that option is right (`FEATURES`). The eval scores each
target's log-likelihood, `postprocess` turns a target back into
`(question, option, is_correct)`, and `accuracy` picks each question's best option.
"""

from __future__ import annotations

from crosstask.metrics import rank_classification
from crosstask.tasks.common import layout

FEATURES = ("rank_question", "rank_option", "rank_correct")

accuracy = rank_classification.rank_accuracy


def features(question: int, option: int, correct: bool) -> dict[str, str]:
  """The rank features of one (question, option) example, as text like every feature."""
  return {"rank_question": str(question), "rank_option": str(option),
          "rank_correct": "1" if correct else "0"}


def postprocess(output, example=None, is_target=False):
  """Targets -> (question, option, is_correct) for `accuracy`; scores pass through."""
  if not is_target:
    return output
  question, option, correct = (layout.feature_text(example[k]) for k in FEATURES)
  return int(question), int(option), correct == "1"
