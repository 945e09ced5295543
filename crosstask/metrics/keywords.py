"""Keyword-generation metrics: exact-match F1 and the CSL benchmark's Bpref."""

from typing import Sequence, Union

from crosstask.metrics import _checks
from crosstask.metrics import csl_official

Keywords = Union[str, Sequence[str]]
SEPARATOR = "_"


def normalize_keyword(keyword: str, vocab_file: str | None = None) -> str:
  """A keyword as CSL's run_text2text_csl.py compares it: its BERT tokens (uncased;
  WordPiece under `vocab_file`) joined without spaces, so case, accents, spacing and
  control characters never count (`café` is `cafe`)."""
  return csl_official.joined(keyword, vocab_file)


def keyword_list(value: Keywords, field: str = "keywords", index: int = 0,
                 keep_empty: bool = False, vocab_file: str | None = None,
                 max_tokens: int | None = None) -> list[str]:
  """Normalised keywords, in order, from a list or a `_`-joined string; the empty ones
  (`a__b`, a leading or trailing `_`) dropped unless `keep_empty`. `max_tokens` keeps
  the string's first tokens only, as the CSL script reads its gold back (the last
  keyword may be cut short)."""
  if isinstance(value, str):
    items = value.split(SEPARATOR)
  elif isinstance(value, Sequence):
    items = list(value)
  else:
    raise TypeError(f"{field}[{index}] is {type(value).__name__}; expected a list "
                    f"of keywords or a {SEPARATOR!r}-joined string")
  for position, item in enumerate(items):
    _checks.check_text(item, "keywords", f"{field}[{index}]", position)
  if max_tokens is None:
    keywords = [normalize_keyword(item, vocab_file) for item in items]
  else:
    # `_` is a token of its own, so joining the kept tokens and splitting on it again
    # gives the same keywords as splitting first, less the cut-off tail.
    tokens, _ = csl_official.gold_tokens(SEPARATOR.join(items), vocab_file, max_tokens)
    keywords = "".join(tokens).split(SEPARATOR)
  return [k for k in keywords if k or keep_empty]


def _pairs(targets, predictions, metric, keep_empty=False, vocab_file=None,
           gold_max_tokens=None):
  _checks.check_pairs(targets, predictions, metric)
  for i, (target, prediction) in enumerate(zip(targets, predictions)):
    yield (keyword_list(target, "targets", i, keep_empty, vocab_file, gold_max_tokens),
           keyword_list(prediction, "predictions", i, keep_empty, vocab_file))


def keyword_f1(targets: Sequence[Keywords],
               predictions: Sequence[Keywords]) -> dict[str, float]:
  """Exact-match keyword precision, recall and F1, averaged over examples, 0-100.

  Per example, with G the set of gold and P the set of predicted keywords
  (after `normalize_keyword`, duplicates removed): precision |P&G|/|P|,
  recall |P&G|/|G|, F1 = 2PR/(P+R); each is 0 when its denominator is 0.
  The CSL code itself reports only Bpref; this is the usual exact-match F1 of
  keyphrase generation over all predicted keywords (F1@M), example-averaged
  like the CSL metrics.
  """
  totals = [0.0, 0.0, 0.0]
  n = 0
  for gold, pred in _pairs(targets, predictions, "keyword_f1"):
    gold_set, pred_set = set(gold), set(pred)
    hits = len(gold_set & pred_set)
    p = hits / len(pred_set) if pred_set else 0.0
    r = hits / len(gold_set) if gold_set else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    totals = [totals[0] + p, totals[1] + r, totals[2] + f]
    n += 1
  return {"keyword_precision": 100.0 * totals[0] / n,
          "keyword_recall": 100.0 * totals[1] / n,
          "keyword_f1": 100.0 * totals[2] / n}


def bpref_single(gold: Sequence[str], ranked: Sequence[str]) -> float:
  """Bpref of one ranked prediction list, exactly as CSL's run_text2text_csl.py.

  Walking the predictions in rank order (duplicates kept), each relevant one
  (in `gold`) adds 1 - n/|ranked|, n being the number of non-relevant
  predictions ranked above it; the sum is divided by the number of relevant
  predictions found, and is 0 when none is found.
  """
  gold = set(gold)
  score, non_relevant, relevant = 0.0, 0, 0
  for keyword in ranked:
    if keyword in gold:
      score += 1.0 - non_relevant / len(ranked)
      relevant += 1
    else:
      non_relevant += 1
  return score / relevant if relevant else 0.0


def bpref(targets: Sequence[Keywords], predictions: Sequence[Keywords], *,
          vocab_file: str | None = None,
          gold_max_tokens: int | None = None) -> dict[str, float]:
  """The CSL benchmark's Bpref for keyword generation, averaged over examples, 0-100.

  Definition (CSL run_text2text_csl.py, `--metrics 2`): see `bpref_single`.
  Note it differs from the textbook Bpref of Buckley & Voorhees (2004),
  1/R * sum_r (1 - |n above r| / R): CSL normalises n by the number of
  predictions and averages over the relevant predictions found, not over R.
  Keywords are compared after `normalize_keyword`, and, as there, the empty strings
  that splitting on `_` leaves (`a__b`, `_a`, `a_`) are keywords too: non-relevant
  ones that count in n and |ranked| (`_a` against gold `a` scores 50, not 100). An
  empty prediction scores 0 either way. `vocab_file` and `gold_max_tokens` are
  `csl_official.rouge_l_csl`'s: WordPiece tokens, and the gold cut where the script's
  `tgt_seq_length - 2` tokens end.

  One difference cannot be reproduced from text: the official script never cuts its
  generated tokens at `[SEP]` for Bpref (it does for accuracy), so there `[SEP]` and
  whatever follows are glued to the last predicted keyword, which then never matches;
  crosstask scores the prediction up to EOS (the last keyword counts).
  """
  total, n = 0.0, 0
  for gold, pred in _pairs(targets, predictions, "bpref", True, vocab_file, gold_max_tokens):
    total += bpref_single(gold, pred)
    n += 1
  return {"bpref": 100.0 * total / n}
