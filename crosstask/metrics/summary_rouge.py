"""English summarisation ROUGE as HF's `rouge` metric computes it.

The CiteSum paper's numbers (CiteSum, XSum, Gigaword, title generation) come
from `datasets.load_metric("rouge")`: rouge-score with Porter stemming, every
text split into sentences joined by newlines (which only `rougeLsum` sees).
crosstask takes the plain mean over examples instead of HF's bootstrap median,
which differs by about +-0.05.
"""

import functools
from typing import Sequence

from crosstask.metrics import _checks
from crosstask.metrics import sentences
from crosstask.metrics import tokenizers

ROUGE_KEYS = ("rouge1", "rouge2", "rougeL", "rougeLsum")


class _Tokenizer:
  """rouge-score's own tokenizer; with `stem` its stemmer is memoised (same tokens)."""

  def __init__(self, stem: bool):
    self.tokenize = tokenizers.get_tokenizer("word_stem" if stem else "word")


@functools.cache
def _scorer(score_keys: tuple[str, ...], stem: bool):
  from rouge_score import rouge_scorer  # pylint: disable=g-import-not-at-top  # imports nltk
  return rouge_scorer.RougeScorer(list(score_keys), tokenizer=_Tokenizer(stem))


def pair_scores(
    target: str,
    prediction: str,
    *,
    score_keys: Sequence[str] = ROUGE_KEYS,
    stem: bool = True,
) -> dict[str, float]:
  """F-measures (0-1) of one prediction against one reference.

  An empty side scores 0 (rouge-score's rule), so an empty generation is
  simply wrong rather than an error.
  """
  return dict(_cached_pair_scores(target, prediction, tuple(score_keys), stem))


@functools.lru_cache(maxsize=1 << 16)
def _cached_pair_scores(target: str, prediction: str, score_keys: tuple[str, ...],
                        stem: bool) -> tuple[tuple[str, float], ...]:
  # Cached: multi-reference and oracle scoring meet the same pairs again and again.
  if "rougeLsum" in score_keys:  # only rougeLsum sees the sentence breaks
    target = sentences.sentences_per_line(target)
    prediction = sentences.sentences_per_line(prediction)
  scores = _scorer(score_keys, stem).score(target, prediction)
  return tuple((key, scores[key].fmeasure) for key in score_keys)


def rouge_stemmed(
    targets: Sequence[str],
    predictions: Sequence[str],
    *,
    score_keys: Sequence[str] = ROUGE_KEYS,
    stem: bool = True,
) -> dict[str, float]:
  """Mean ROUGE F-measure over examples, 0-100, with Porter stemming and rougeLsum."""
  _checks.check_pairs(targets, predictions, "rouge_stemmed")
  totals = dict.fromkeys(score_keys, 0.0)
  for i, (target, prediction) in enumerate(zip(targets, predictions)):
    scores = pair_scores(
        _checks.check_text(target, "rouge_stemmed", "targets", i),
        _checks.check_text(prediction, "rouge_stemmed", "predictions", i),
        score_keys=score_keys, stem=stem)
    for key in score_keys:
      totals[key] += scores[key]
  return {key: 100.0 * total / len(targets) for key, total in totals.items()}
