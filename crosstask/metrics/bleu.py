"""Sentence-level BLEU-4 averaged over examples, as the CSL title baselines report it."""

from typing import Sequence
import warnings

from crosstask.metrics import _checks
from crosstask.metrics import tokenizers as tok


def bleu(
    targets: Sequence[str],
    predictions: Sequence[str],
    *,
    tokenizer: str = "char",
) -> dict[str, float]:
  """Mean over examples of nltk `sentence_bleu`, 0-100, under key "bleu".

  The definition bert4keras uses for CSL title generation
  (examples/task_seq2seq_autotitle_csl*.py, the baseline the CSL repository
  points to): per example, one reference, character tokens, uniform 4-gram
  weights, `SmoothingFunction().method1` (epsilon 0.1 added to zero n-gram
  matches), brevity penalty; an example whose prediction (or target) has no
  tokens scores 0 and still counts in the mean. Not corpus BLEU (sacrebleu) as T5X reports.

  Tokens: "char" (default: CJK characters one each, Latin/digit runs one,
  punctuation dropped), "bert4keras" (every non-space character, as bert4keras
  itself) or "word".
  """
  from nltk.translate import bleu_score  # pylint: disable=g-import-not-at-top  # slow import
  _checks.check_pairs(targets, predictions, "bleu")
  fn = tok.get_tokenizer(tokenizer)
  smoothing = bleu_score.SmoothingFunction().method1
  total = 0.0
  for i, (target, prediction) in enumerate(zip(targets, predictions)):
    reference = fn(_checks.check_text(target, "bleu", "targets", i))
    hypothesis = fn(_checks.check_text(prediction, "bleu", "predictions", i))
    if not hypothesis or not reference:
      continue
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")  # nltk warns on zero higher-order matches.
      total += bleu_score.sentence_bleu([reference], hypothesis,
                                        smoothing_function=smoothing)
  return {"bleu": 100.0 * total / len(targets)}
