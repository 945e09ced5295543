"""The CLUE and FewCLUE aggregate scores reproduce the published rows."""

import pytest

from crosstask.metrics import clue_scores
from crosstask.tasks.clue import paper


def test_clue_readme_boards():
  bert = paper.CLUE_README["BERT-base"]
  assert round(clue_scores.classification_score(bert), 2) == 68.77
  assert round(clue_scores.mrc_score(bert), 2) == 72.71
  for model, row in paper.CLUE_README.items():  # every row's boards, to the README's rounding
    assert abs(clue_scores.classification_score(row) - row["classification"]) <= 0.011, model
    assert abs(clue_scores.mrc_score(row) - row["mrc"]) <= 0.011, model


def test_clue_score_is_the_mean_of_nine_tasks():
  scores = {t: 50.0 for t in clue_scores.CLUE_TASKS}
  scores["cmrc2018"] = 95.0  # CMRC contributes its EM like any other task score
  assert clue_scores.clue_score(scores) == pytest.approx(55.0)
  with pytest.raises(ValueError, match=r"missing \['c3'\]"):
    clue_scores.clue_score({t: 1.0 for t in clue_scores.CLUE_TASKS[:-1]})
  with pytest.raises(ValueError, match="0-100 scale.*afqmc=-3.0.*tnews=170.0"):
    clue_scores.clue_score({**scores, "afqmc": -3.0, "tnews": 170.0})


def test_fewclue_readme_rows():
  human, pet = paper.FEWCLUE_README["Human"], paper.FEWCLUE_README["PET"]
  assert round(clue_scores.fewclue_score(
      {t: human[t] for t in clue_scores.FEWCLUE_TASKS}), 2) == 82.49
  assert round(clue_scores.fewclue_score({t: pet[t] for t in clue_scores.FEWCLUE_TASKS}), 2) == 57.44
  for method, row in paper.FEWCLUE_README.items():
    assert abs(clue_scores.fewclue_score(row) - row["score"]) <= 0.011, method


def test_fewclue_score_averages_the_five_splits_first():
  per_k = {t: [10.0, 20.0, 30.0, 40.0, 50.0] for t in clue_scores.FEWCLUE_TASKS}
  per_k["chid"] = 75.0  # an already averaged number is taken as is
  assert clue_scores.fewclue_score(per_k) == pytest.approx((30.0 * 8 + 75.0) / 9)
  with pytest.raises(ValueError, match="eprstmt has 6 split scores"):
    clue_scores.fewclue_score({**per_k, "eprstmt": [1.0] * 6})


def test_clue_metrics_import_without_tensorflow_seqio_or_jax():
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  code = ("import sys\n"
          "for m in ('tensorflow', 'seqio', 'jax'): sys.modules[m] = None\n"
          "from crosstask.metrics import cmrc, clue_scores, rank_classification\n"
          "assert cmrc.cmrc2018([['北京']], ['北京'])['em'] == 100.0\n")
  res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
  assert res.returncode == 0, res.stderr[-2000:]
