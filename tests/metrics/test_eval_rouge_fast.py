"""The C-backed ROUGE path gives rouge-score's floats exactly, on real CSL text."""

import csv

import pytest
from rouge_score import rouge_scorer

from crosstask.metrics import _rouge_fast
from crosstask.metrics.rouge import rouge
from crosstask.metrics import tokenizers


def _csl_pairs(root, n_abstract_pairs):
  with open(root / "csl" / "benchmark" / "ts" / "dev.tsv", encoding="utf-8") as f:
    rows = [r for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
  abstracts, titles = [r[1] for r in rows], [r[2] for r in rows]
  # Title vs abstract (short vs long, little overlap), title vs next title, and
  # abstract vs next abstract (long LCS), where a wrong LCS would show.
  pairs = list(zip(titles, abstracts)) + list(zip(titles, titles[1:]))
  pairs += list(zip(abstracts[:n_abstract_pairs], abstracts[1:n_abstract_pairs + 1]))
  pairs += [("", abstracts[0]), (titles[0], titles[0])]
  return [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.mark.parametrize("tokenizer", ["char", "bert4keras"])
def test_fast_rouge_equals_rouge_score_on_csl(official_data, tokenizer):
  targets, predictions = _csl_pairs(official_data, 60)
  keys = ("rouge1", "rouge2", "rougeL")
  fast = rouge(targets, predictions, score_keys=keys, tokenizer=tokenizer)
  fn = tokenizers.get_tokenizer(tokenizer)
  scorer = rouge_scorer.RougeScorer(list(keys), tokenizer=type("T", (), {
      "tokenize": staticmethod(fn)})())
  totals = dict.fromkeys(keys, 0.0)
  for target, prediction in zip(targets, predictions):
    for key, score in scorer.score(target, prediction).items():
      totals[key] += score.fmeasure
  assert fast == {key: 100.0 * totals[key] / len(targets) for key in keys}  # exact floats
  assert 0 < fast["rougeL"] < 100


def test_fast_path_covers_only_what_it_computes():
  assert _rouge_fast.supports(("rouge1", "rouge2", "rouge9", "rougeL"))
  assert not _rouge_fast.supports(("rougeLsum",))
  assert not _rouge_fast.supports(("rouge10",))


def test_fast_path_keeps_field_errors():
  with pytest.raises(TypeError, match=r"predictions\[1\]"):
    rouge(["a", "b"], ["a", None])
