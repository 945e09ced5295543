"""Sentence-level BLEU-4 averaged over examples, as the CSL title baselines report it."""

from typing import Sequence
import warnings

from crosstask.metrics import _checks
from crosstask.metrics import tokenizers as tok


def _bert4keras_split(text: str) -> list[str]:
  """bert4keras's own split, literally: each space of the text leaves two empty tokens."""
  return " ".join(text).lower().split(" ")


def bleu(
    targets: Sequence[str],
    predictions: Sequence[str],
    *,
    tokenizer: str = "bert4keras",
) -> dict[str, float]:
  """Mean over examples of nltk `sentence_bleu`, 0-100, under key "bleu".

  The definition bert4keras uses for CSL title generation
  (examples/task_seq2seq_autotitle_csl*.py, the baseline the CSL repository
  points to): per example, one reference, uniform 4-gram weights,
  `SmoothingFunction().method1` (epsilon 0.1 added to zero n-gram matches),
  brevity penalty; an example whose prediction is blank scores 0 and still counts
  in the mean (a blank target is scored as bert4keras splits it). Not corpus BLEU
  (sacrebleu) as T5X reports.

  Tokens: "bert4keras" (default: exactly bert4keras's `' '.join(text).lower()
  .split(' ')`, every character a token, punctuation and the empty strings each space
  leaves included), "char" (CJK characters one each, Latin/digit runs one,
  punctuation dropped) or "word"; under those an example without tokens scores 0.
  """
  from nltk.translate import bleu_score  # pylint: disable=g-import-not-at-top  # slow import
  _checks.check_pairs(targets, predictions, "bleu")
  fn = _bert4keras_split if tokenizer == "bert4keras" else tok.get_tokenizer(tokenizer)
  smoothing = bleu_score.SmoothingFunction().method1
  total = 0.0
  for i, (target, prediction) in enumerate(zip(targets, predictions)):
    reference = fn(_checks.check_text(target, "bleu", "targets", i))
    hypothesis = fn(_checks.check_text(prediction, "bleu", "predictions", i))
    if not prediction.strip():
      continue
    # bert4keras scores whatever its split gives, a blank target's empty strings too
    # (the empty tokens of each space then match: "" against " a" is 11.36).
    if tokenizer != "bert4keras" and not (reference and hypothesis):
      continue
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")  # nltk warns on zero higher-order matches.
      total += bleu_score.sentence_bleu([reference], hypothesis,
                                        smoothing_function=smoothing)
  return {"bleu": 100.0 * total / len(targets)}
