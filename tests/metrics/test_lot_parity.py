"""Parity with the official NLPCC-2021 scorer on LongLM-small's val generations (spec §2.8)."""

import json

import pytest

from crosstask.metrics import lot

# `eval.py gen/small_val.jsonl val.jsonl`, printed by the official script.
OFFICIAL_SMALL_VAL = {
    "bleu-1": 0.26576156349374097, "bleu-2": 0.16035362626410565,
    "bleu-3": 0.09865450593370409, "bleu-4": 0.05641034457432627,
    "distinct-1": 0.01135576413697551, "distinct-2": 0.053188977093135206,
    "distinct-3": 0.17903295602068006, "distinct-4": 0.31384266747078227,
    "coverage": 0.836376267089707, "order": 0.6315419158081791,
    "overall": 0.30174107665948935,
}


def _read(path):
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def nlpcc(request):
  root = request.getfixturevalue("official_data") / "lot" / "nlpcc2021_outline2story"
  gold = _read(root / "val.jsonl")
  pred = _read(root / "generations" / "longlm_small_val.jsonl")
  assert len(gold) == len(pred) == 661
  return gold, pred


@pytest.fixture(scope="module")
def official_data(request):  # module scope for the shared function-scoped fixture
  from crosstask import paths  # pylint: disable=g-import-not-at-top
  root = paths.data_dir()
  if root is None or not root.is_dir():
    pytest.skip("official data not available (CROSSTASK_DATA_DIR)")
  return root


def test_longlm_small_val_matches_the_official_scorer(nlpcc):
  gold, pred = nlpcc
  got = lot.nlpcc_scores([g["story"] for g in gold], [g["outline"] for g in gold],
                         [p["story"] for p in pred])
  for name, expected in OFFICIAL_SMALL_VAL.items():
    assert got[name] == pytest.approx(expected, abs=1e-9), name
  # The paper's unit for Distinct: jieba words.
  words = lot.distinct_scores([p["story"] for p in pred])
  assert [round(words[f"distinct-{n}"], 6) for n in (1, 2, 3, 4)] == [
      0.086449, 0.398816, 0.674485, 0.833255]


def test_references_scored_against_themselves(nlpcc):
  gold, _ = nlpcc
  stories = [g["story"] for g in gold]
  got = lot.nlpcc_scores(stories, [g["outline"] for g in gold], stories)
  for name in ("bleu-1", "bleu-4", "coverage", "order"):
    assert got[name] == pytest.approx(1.0, abs=1e-12), name
  assert [got[f"distinct-{n}"] for n in (1, 2, 3, 4)] == pytest.approx(
      [0.00854622243544967, 0.06267584943055908, 0.234676190452438, 0.4216712465650762],
      abs=1e-12)
  assert got["overall"] == pytest.approx(0.8846035566280904, abs=1e-9)
  words = lot.distinct_scores(stories)
  assert [round(words[f"distinct-{n}"], 6) for n in (1, 2, 3, 4)] == [
      0.119495, 0.558047, 0.868284, 0.965353]
