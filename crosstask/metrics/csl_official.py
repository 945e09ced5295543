"""The CSL benchmark's own scorer (`run_text2text_csl.py`, function `evaluate`), exactly.

* Text reaches the metrics as BERT tokens: `bert_basic_tokens` is the BasicTokenizer
  of UER-py, which the script runs in (Google BERT's: Cc and Cf characters dropped,
  every CJK character and every punctuation mark a token, Latin lower-cased with
  accents stripped). The official script also WordPiece-splits words with its
  model's vocabulary (`[UNK]` for what it lacks, and for a word over 200
  characters); pass `vocab_file` (the CSL README's
  `google_zh_with_sentinel_vocab.txt`, one token a line) to do the same, else words
  stay whole.
* ROUGE-L (`--metrics 1`): the `rouge` package's ROUGE-L F of the space-joined
  tokens (the reference with the space the script leaves before `[SEP]`), averaged
  over examples. That package splits text into sentences on
  `.`, takes the union LCS over them and counts unique tokens; it is not
  rouge-score's ROUGE-L (`crosstask.metrics.rouge`).
* Accuracy (`--metrics 0`): tokens are joined without spaces, and the
  prediction is replaced by the gold-set label (labels in order of first
  occurrence) with the highest `rouge` ROUGE-L F, kept as float32 and the first
  maximum taken, as torch.argmax does. Joined without spaces each label is one
  "word", so in practice an exact match keeps its label and anything else
  becomes the first label, unless a `.` splits it into pieces. Where the
  package raises (an empty prediction) the official script picks a random
  label; here a `random.Random(seed)` pick makes that reproducible.
* F1 for classes (the paper's "F1"; the script prints only accuracy but builds
  its confusion matrix from the mapped predictions): macro-F1 over the labels
  of the gold set, on the mapped predictions.

* The gold text, as the script reads it back from its padded target row, holds
  at most `tgt_seq_length - 2` tokens (WordPiece tokens under its vocabulary): the
  script's default `--tgt_seq_length 32` cuts 152 of the 1,000 dev keyword strings.
  `gold_max_tokens=tgt_seq_length - 2` makes the same cut; None (the default)
  scores the whole gold text. A cut reference, or one exactly that long, loses the
  space the script otherwise leaves before `[SEP]`.

Differences that cannot be reproduced from text: the script scores every one
of its `tgt_seq_length` generated tokens, `[SEP]` and what follows included
(one or two extra unique tokens in the hypothesis); crosstask scores the text
up to EOS.
"""

from __future__ import annotations

import functools
import random
import unicodedata
from collections.abc import Callable, Sequence

import numpy as np

from crosstask.metrics import _checks
from crosstask.metrics import classification
from crosstask.metrics import pypi_rouge

# BERT's _is_chinese_char ranges (CJK Unified Ideographs and extensions, compatibility).
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_cjk(cp: int) -> bool:
  return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_whitespace(ch: str) -> bool:
  return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
  # UER-py's (Google BERT's) test: Cc and Cf only. HF's BERT drops every C* category,
  # so a private-use or unassigned character is dropped there but kept (as [UNK] under
  # a vocabulary) by the script CSL scores with.
  return ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf")


def _is_punctuation(ch: str) -> bool:
  cp = ord(ch)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(ch).startswith("P")


def bert_basic_tokens(text: str, lower_case: bool = True) -> list[str]:
  """BERT BasicTokenizer tokens of `text` (uncased: lower-cased, accents stripped)."""
  chars = []
  for ch in text:
    cp = ord(ch)
    if cp == 0 or cp == 0xFFFD or _is_control(ch):
      continue
    if _is_whitespace(ch):
      chars.append(" ")
    elif _is_cjk(cp):
      chars.append(f" {ch} ")
    else:
      chars.append(ch)
  tokens = []
  for word in "".join(chars).split():
    if lower_case:
      word = "".join(c for c in unicodedata.normalize("NFD", word.lower())
                     if unicodedata.category(c) != "Mn")
    piece = []
    for ch in word:
      if _is_punctuation(ch):
        if piece:
          tokens.append("".join(piece))
          piece = []
        tokens.append(ch)
      else:
        piece.append(ch)
    if piece:
      tokens.append("".join(piece))
  return tokens


@functools.lru_cache(maxsize=4)
def load_vocab(vocab_file: str) -> frozenset[str]:
  """The tokens of a BERT vocab.txt (one per line)."""
  with open(vocab_file, encoding="utf-8") as f:
    return frozenset(line.rstrip("\n") for line in f if line.rstrip("\n"))


def wordpiece(word: str, vocab: frozenset[str], max_chars: int = 200) -> list[str]:
  """BERT's greedy longest-match-first WordPiece split of one word; ['[UNK]'] if it fails."""
  if len(word) > max_chars:
    return ["[UNK]"]
  pieces, start = [], 0
  while start < len(word):
    end = len(word)
    while end > start:
      piece = word[start:end] if start == 0 else "##" + word[start:end]
      if piece in vocab:
        break
      end -= 1
    if end == start:
      return ["[UNK]"]
    pieces.append(piece)
    start = end
  return pieces


def bert_tokens(text: str, vocab_file: str | None = None) -> list[str]:
  """BasicTokenizer tokens, WordPiece-split when a vocab file is given."""
  tokens = bert_basic_tokens(text)
  if vocab_file is None:
    return tokens
  vocab = load_vocab(str(vocab_file))
  return [piece for token in tokens for piece in wordpiece(token, vocab)]


# The text functions below are memoised: a bootstrap interval scores the same
# predictions against the same labels on each of its 1000 resamples.
@functools.lru_cache(maxsize=1 << 16)
def spaced(text: str, vocab_file: str | None = None) -> str:
  """The tokens joined by single spaces: what the official ROUGE-L scores."""
  return " ".join(bert_tokens(text, vocab_file))


@functools.lru_cache(maxsize=1 << 16)
def joined(text: str, vocab_file: str | None = None) -> str:
  """The tokens joined without spaces: what the official accuracy compares."""
  return "".join(bert_tokens(text, vocab_file))


@functools.lru_cache(maxsize=1 << 16)
def gold_tokens(text: str, vocab_file: str | None = None,
                max_tokens: int | None = None) -> tuple[tuple[str, ...], bool]:
  """The gold text's tokens as the script reads them back from its target row (at
  most `max_tokens` of them), and whether its `[SEP]` was among them: it is when the
  gold is shorter than `max_tokens` (always when `max_tokens` is None)."""
  tokens = tuple(bert_tokens(text, vocab_file))
  if max_tokens is None:
    return tokens, True
  if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
    raise ValueError(f"gold_max_tokens must be a positive int (the script's "
                     f"tgt_seq_length - 2), got {max_tokens!r}")
  return tokens[:max_tokens], len(tokens) < max_tokens


@functools.lru_cache(maxsize=1 << 18)
def rouge_l_f(hypothesis: str, reference: str) -> float:
  """The `rouge` package's ROUGE-L F of two already-tokenized strings (ValueError as it
  raises one); long texts score where the package runs out of recursion."""
  return pypi_rouge.rouge_l_f(hypothesis, reference)


def rouge_l_csl(targets: Sequence[str], predictions: Sequence[str], *,
                vocab_file: str | None = None,
                gold_max_tokens: int | None = None) -> dict[str, float]:
  """Mean official ROUGE-L F, 0-100, under key "rougeL"; an empty prediction scores 0.
  `gold_max_tokens`: cut each gold text as the script does (its tgt_seq_length - 2)."""
  _checks.check_pairs(targets, predictions, "rouge_l_csl")
  total = 0.0
  for i, (target, prediction) in enumerate(zip(targets, predictions)):
    tokens, sep_follows = gold_tokens(_checks.check_text(target, "rouge_l_csl", "targets", i),
                                      vocab_file, gold_max_tokens)
    ref = " ".join(tokens)
    hyp = spaced(_checks.check_text(prediction, "rouge_l_csl", "predictions", i), vocab_file)
    # The official reference is the label's tokens joined by spaces up to " [SEP]", that
    # space kept: after a last "." token the package finds one more sentence, the empty
    # word, and the reference one more unigram ("a model ." against "a model": 80, not 100;
    # a gold "." alone is that empty sentence, and scores 0).
    if sep_follows:
      ref += " "
    if not pypi_rouge.has_sentences(ref):
      raise ValueError(f"rouge_l_csl: targets[{i}]={target!r} has no tokens to score against")
    # The official script crashes on a prediction the package finds no sentence
    # in; crosstask scores it 0. Dots with spaces between (". . .") are sentences
    # of one empty word to the package, and it scores them.
    if pypi_rouge.has_sentences(hyp):
      total += rouge_l_f(hyp, ref)
  return {"rougeL": 100.0 * total / len(targets)}


def nearest_label(prediction: str, labels: Sequence[str], rng: random.Random) -> str:
  """The label the official script maps `prediction` to (all strings already `joined`)."""
  try:
    scores = np.asarray([rouge_l_f(prediction, label) for label in labels], np.float32)
  except ValueError:
    return rng.choice(list(labels))
  return labels[int(np.argmax(scores))]


def map_to_gold_labels(targets: Sequence[str], predictions: Sequence[str], seed: int = 0,
                       vocab_file: str | None = None, gold_max_tokens: int | None = None,
                       ) -> tuple[list[str], list[str]]:
  """(gold, mapped predictions), both `joined`, as the official accuracy compares them."""
  _checks.check_pairs(targets, predictions, "csl accuracy")
  gold = ["".join(gold_tokens(_checks.check_text(t, "csl accuracy", "targets", i), vocab_file,
                              gold_max_tokens)[0])
          for i, t in enumerate(targets)]
  labels = list(dict.fromkeys(gold))
  rng = random.Random(seed)
  mapped = []
  for i, p in enumerate(predictions):
    pred = joined(_checks.check_text(p, "csl accuracy", "predictions", i), vocab_file)
    mapped.append(nearest_label(pred, labels, rng))
  return gold, mapped


def classification_csl(targets: Sequence[str], predictions: Sequence[str], *,
                       seed: int = 0, vocab_file: str | None = None,
                       gold_max_tokens: int | None = None) -> dict[str, float]:
  """Official accuracy and macro-F1 (over the gold set's labels) after nearest-label mapping."""
  gold, mapped = map_to_gold_labels(targets, predictions, seed, vocab_file, gold_max_tokens)
  return _mapped_classification(gold, mapped)


def _mapped_classification(gold: Sequence[str], mapped: Sequence[str]) -> dict[str, float]:
  return {**classification.accuracy(gold, mapped), **classification.macro_f1(gold, mapped)}


def classification_csl_resampling(targets: Sequence[str], predictions: Sequence[str]
                                  ) -> tuple[list[str], list[str], Callable]:
  """What a bootstrap of `classification_csl` resamples: (gold, mapped predictions) from
  one mapping over the whole set, and the metric of a draw of those pairs.

  The mapping reads the set's gold labels (a prediction that is no label goes to the
  first of them, an empty one to a seeded draw among them); mapped again on each draw,
  it went by what each draw held, so an untrained model's 26.67 got [0.00, 43.33].
  The whole set's value is the same either way.
  """
  gold, mapped = map_to_gold_labels(targets, predictions)
  return gold, mapped, _mapped_classification


def accuracy_csl(targets: Sequence[str], predictions: Sequence[str], *,
                 seed: int = 0, vocab_file: str | None = None,
                 gold_max_tokens: int | None = None) -> dict[str, float]:
  """Official accuracy after nearest-label mapping, 0-100, under key "accuracy"."""
  gold, mapped = map_to_gold_labels(targets, predictions, seed, vocab_file, gold_max_tokens)
  return classification.accuracy(gold, mapped)
