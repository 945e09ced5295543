"""Rank-classification metric: best-scored option per question."""

import random

import numpy as np
import pytest

from crosstask.metrics import rank_classification as rc


def test_best_option_per_question():
  targets = [(0, 0, False), (0, 1, True), (1, 0, True), (1, 1, False), (1, 2, False)]
  scores = [-2.0, -1.0, -5.0, -0.5, -3.0]
  assert rc.rank_choices(targets, scores) == {0: (1, True), 1: (1, False)}
  assert rc.rank_accuracy(targets, scores) == {"accuracy": 50.0}
  # Ties go to the lower option index, whatever the order the options arrive in.
  assert rc.rank_choices([(7, 1, True), (7, 0, False)], [-1.0, -1.0]) == {7: (0, False)}
  # A question without a correct option (unlabelled) always counts wrong.
  assert rc.rank_accuracy([(0, 0, False), (0, 1, False)], [0.0, -1.0]) == {"accuracy": 0.0}


def test_the_choice_is_np_argmax_over_each_question_s_options_nan_and_ties_included():
  # The official C3, ChID and FewCLUE scripts take np.argmax of a question's option
  # logits: the first NaN if any, else the first maximum. Options arrive shuffled.
  rng = random.Random(0)
  for question in range(2000):
    scores = [rng.choice([-1.0, -2.0, 0.5, float("nan")]) for _ in range(rng.randint(1, 5))]
    options = list(enumerate(scores))
    rng.shuffle(options)
    chosen = rc.rank_choices([(question, i, i == 0) for i, _ in options],
                             [score for _, score in options])
    assert chosen == {question: (int(np.argmax(scores)), int(np.argmax(scores)) == 0)}, scores


def test_bad_arguments():
  with pytest.raises(ValueError, match="pair up"):
    rc.rank_accuracy([(0, 0, True)], [])
  with pytest.raises(ValueError, match=r"targets\[0\] is 'x'"):
    rc.rank_accuracy(["x"], [0.0])
