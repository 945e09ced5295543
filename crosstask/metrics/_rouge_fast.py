"""C-backed ROUGE-N / ROUGE-L with rouge-score's exact arithmetic.

rouge-score's LCS is a pure-Python O(n*m) table: about a second per hundred
abstract pairs. Here the LCS length comes from rapidfuzz's bit-parallel
LCSseq on token-id lists (each distinct token one int, so multi-letter tokens
compare as a unit), and the n-gram overlap from Counters
as rouge-score builds them; precision, recall and F are computed with the same
formulas in the same order, so the floats are identical.
"""

import collections
import re
from collections.abc import Callable, Sequence

from rapidfuzz.distance import LCSseq

_NGRAM_KEY = re.compile(r"rouge([1-9])$")


def supports(score_keys: Sequence[str]) -> bool:
  """True when every key is rougeN (N 1-9) or rougeL, which this module computes."""
  return all(key == "rougeL" or _NGRAM_KEY.match(key) for key in score_keys)


def _fmeasure(precision: float, recall: float) -> float:
  if precision + recall > 0:
    return 2 * precision * recall / (precision + recall)
  return 0.0


def _lcs_f(target: list[int], prediction: list[int]) -> float:
  if not target or not prediction:
    return 0.0
  lcs = LCSseq.similarity(target, prediction)
  return _fmeasure(lcs / len(prediction), lcs / len(target))


def _ngram_f(target: Sequence[str], prediction: Sequence[str], n: int) -> float:
  target_ngrams = collections.Counter(zip(*(target[i:] for i in range(n))))
  prediction_ngrams = collections.Counter(zip(*(prediction[i:] for i in range(n))))
  overlap = sum((target_ngrams & prediction_ngrams).values())
  precision = overlap / max(sum(prediction_ngrams.values()), 1)
  recall = overlap / max(sum(target_ngrams.values()), 1)
  return _fmeasure(precision, recall)


class _TokenIds(dict):
  """token -> int id, a new id for each token not seen before."""

  def __missing__(self, token: str) -> int:
    self[token] = value = len(self)
    return value


def mean_fmeasures(targets: Sequence[str], predictions: Sequence[str],
                   score_keys: Sequence[str], tokenize: Callable[[str], list[str]]
                   ) -> dict[str, float]:
  """Sum of per-pair F-measures (in order, as rouge-score's caller adds them), / count, x100."""
  ids = _TokenIds()

  def encode(tokens: list[str]) -> list[int]:
    return list(map(ids.__getitem__, tokens))  # C-level lookups; new tokens via __missing__

  totals = {key: 0.0 for key in score_keys}
  orders = {key: int(key[5:]) for key in score_keys if key != "rougeL"}
  for target, prediction in zip(targets, predictions):
    target_tokens, prediction_tokens = tokenize(target), tokenize(prediction)
    for key in score_keys:
      if key == "rougeL":
        totals[key] += _lcs_f(encode(target_tokens), encode(prediction_tokens))
      else:
        totals[key] += _ngram_f(target_tokens, prediction_tokens, orders[key])
  return {key: 100.0 * total / len(targets) for key, total in totals.items()}
