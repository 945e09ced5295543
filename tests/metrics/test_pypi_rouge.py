"""crosstask.metrics.pypi_rouge against the `rouge` package it replaces (pltrdy/rouge 1.0.1)."""

import random
import sys

import pytest
from rouge import Rouge

from crosstask import metrics as ev
from crosstask.metrics import csl_official
from crosstask.metrics import pypi_rouge

CHARS = "的一是了我不人在他有这个上们来到时大地为子中你说生国年着就那和要她出也得里后自以会家"


def _package_f(hypothesis: str, reference: str) -> float:
  return Rouge(metrics=["rouge-l"]).get_scores(hyps=hypothesis, refs=reference)[0]["rouge-l"]["f"]


def _spaced_text(rng: random.Random, length: int) -> str:
  """Space-separated characters with a few '.' sentence breaks, as CSL's scorer sees text."""
  return " ".join(rng.choice(CHARS + "..") for _ in range(length))


def test_equals_the_package_on_random_texts():
  rng = random.Random(0)
  pairs = [(_spaced_text(rng, rng.randint(1, 60)), _spaced_text(rng, rng.randint(1, 60)))
           for _ in range(300)]
  pairs += [(". . .", "省 略 . . . 号"), ("a  b . c", "c b a"), (" . x", "x .")]
  for hypothesis, reference in pairs:
    try:
      expected = _package_f(hypothesis, reference)
    except ValueError:
      with pytest.raises(ValueError, match="at least 1 sentence"):
        pypi_rouge.rouge_l_f(hypothesis, reference)
      continue
    assert pypi_rouge.rouge_l_f(hypothesis, reference) == expected, (hypothesis, reference)


def test_equals_the_package_on_csl_dev_titles_and_abstracts(official_data):
  from crosstask.tasks.common import readers  # pylint: disable=g-import-not-at-top
  rows = [r.value for r in readers.read_tsv(official_data / "csl/benchmark/ts/dev.tsv", 3)]
  for (_, abstract, title), (_, next_abstract, _) in zip(rows[:60], rows[1:61]):
    for hypothesis, reference in ((abstract[:30], title), (next_abstract, abstract)):
      hyp, ref = csl_official.spaced(hypothesis), csl_official.spaced(reference)
      assert pypi_rouge.rouge_l_f(hyp, ref) == _package_f(hyp, ref)


def test_a_long_text_scores_where_the_package_runs_out_of_recursion():
  rng = random.Random(1)
  reference, prediction = ("".join(rng.choice(CHARS) for _ in range(900)) for _ in range(2))
  hyp, ref = csl_official.spaced(prediction), csl_official.spaced(reference)
  with pytest.raises(RecursionError):
    _package_f(hyp, ref)
  limit = sys.getrecursionlimit()
  sys.setrecursionlimit(10_000)
  try:
    expected = _package_f(hyp, ref)
  finally:
    sys.setrecursionlimit(limit)
  assert 0 < expected < 1
  assert pypi_rouge.rouge_l_f(hyp, ref) == expected
  assert ev.rouge_l_csl([reference], [prediction])["rougeL"] == pytest.approx(100 * expected)
