"""ROUGE F-measure with a tokenizer that works for Chinese."""

from typing import Sequence

from crosstask.metrics import _checks
from crosstask.metrics import _rouge_fast
from crosstask.metrics import tokenizers as tok


class _Tokenizer:
  """Adapts a token function to rouge-score's tokenizer interface."""

  def __init__(self, name: str):
    self._fn = tok.get_tokenizer(name)

  def tokenize(self, text: str) -> list[str]:
    return self._fn(text)


def rouge(
    targets: Sequence[str],
    predictions: Sequence[str],
    *,
    score_keys: Sequence[str] = ("rouge1", "rouge2", "rougeL"),
    tokenizer: str = "char",
) -> dict[str, float]:
  """Mean ROUGE F-measure over examples, 0-100, keyed like SeqIO's `rouge`.

  rouge-score computes it (n-gram counts with multiplicity; rougeL is
  sentence-level LCS; F = 2PR/(P+R), 0 when either side has no tokens) on the
  tokens of `crosstask.metrics.tokenizers`: "char" (default, Chinese),
  "word" (rouge-score's English default) or "bert4keras".

  Not the `rouge` PyPI package the CSL scripts call: that one counts unique
  n-grams and takes rouge-l's LCS over '.'-split sentences, so its numbers differ a
  little (`crosstask.metrics.csl_official` is that one).
  """
  _checks.check_pairs(targets, predictions, "rouge")
  if _rouge_fast.supports(score_keys):
    # Same numbers as rouge-score below (tested), with a C LCS instead of its Python one.
    for i, (target, prediction) in enumerate(zip(targets, predictions)):
      _checks.check_text(target, "rouge", "targets", i)
      _checks.check_text(prediction, "rouge", "predictions", i)
    return _rouge_fast.mean_fmeasures(targets, predictions, score_keys,
                                      tok.get_tokenizer(tokenizer))
  from rouge_score import rouge_scorer  # pylint: disable=g-import-not-at-top  # imports nltk
  scorer = rouge_scorer.RougeScorer(list(score_keys),
                                    tokenizer=_Tokenizer(tokenizer))
  totals = {key: 0.0 for key in score_keys}
  for i, (target, prediction) in enumerate(zip(targets, predictions)):
    scores = scorer.score(_checks.check_text(target, "rouge", "targets", i),
                          _checks.check_text(prediction, "rouge", "predictions", i))
    for key in score_keys:
      totals[key] += scores[key].fmeasure
  return {key: 100.0 * total / len(targets) for key, total in totals.items()}
