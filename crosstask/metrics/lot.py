"""LOT and NLPCC-2021 story metrics, exactly as the official scorers compute them.

The reference is the NLPCC-2021 outline-to-story `eval.py` (the only official LOT
generation scorer that can be read). Its quirks are
kept by default so that numbers agree with published ones to the last digit:
BLEU on jieba words with no smoothing, Coverage as PyPI-`rouge` ROUGE-L recall
with set semantics and `.`-splitting (empty predictions silently dropped),
Order from longest common substrings with an i = j pair in the denominator.

Functions named `*_scores` work on the official 0-1 scale; the SeqIO metric
functions (`lot_outgen_metrics`, ...) report 0-100. jieba is imported lazily.
"""

from __future__ import annotations

import functools
import math
import sys
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from crosstask.metrics import _checks
from crosstask.metrics import pypi_rouge

# ----------------------------------------------------------------- normalisation


@functools.cache
def _jieba():
  import logging  # pylint: disable=g-import-not-at-top
  import jieba  # pylint: disable=g-import-not-at-top  # slow import, logs on first use
  jieba.setLogLevel(logging.WARNING)
  jieba.initialize()
  return jieba


@functools.lru_cache(maxsize=1 << 14)
def proline(text: str) -> str:
  """The scorer's normal form: whitespace deleted, jieba words joined by spaces.

  Cached: each prediction is segmented once for BLEU and both Distinct units.
  """
  return " ".join(_jieba().cut("".join(text.strip().split())))


def jieba_words(text: str) -> list[str]:
  """jieba 0.42.1 default-mode words of `text` with all whitespace deleted."""
  return proline(text).split()


def strb2q(text: str) -> str:
  """ASCII punctuation to full width, as LongLM's `strB2Q` (undoes NFKC's `，`->`,`).

  `...` becomes `…` first; only characters of a Unicode P* category in
  U+0021..U+007E move (+0xFEE0), so `$+<=>^|~` and letters stay.
  """
  out = []
  for ch in text.replace("...", "…"):
    code = ord(ch)
    if 33 <= code <= 126 and unicodedata.category(ch).startswith("P"):
      ch = chr(code + 0xFEE0)
    out.append(ch)
  return "".join(out)


_SPECIAL = ("<s>", "<pad>")


def clean_prediction(text: str) -> str:
  """LongLM's `pro()` clean-up of a decoded story, before scoring.

  Cut at the first `</s>`, drop `<s>`, `<pad>` and `<extra_id_0..99>`, delete
  all whitespace, then `strb2q`. Unlike `pro()`, text without `</s>` keeps its
  last character (`pro()` slices `[:find('</s>')]`, i.e. `[:-1]`).
  """
  end = text.find("</s>")
  if end >= 0:
    text = text[:end]
  for token in _SPECIAL:
    text = text.replace(token, "")
  for i in range(100):
    text = text.replace(f"<extra_id_{i}>", "")
  return strb2q("".join(text.split()))


# ------------------------------------------------------------------------- BLEU


def _ngram_counts(tokens: Sequence[str], n: int) -> Counter:
  return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _clipped_matches(reference: Sequence[str], hypothesis: Sequence[str],
                     max_n: int) -> list[tuple[int, int]]:
  """(clipped n-gram matches, max(1, hypothesis n-grams)) for n = 1..max_n."""
  out = []
  for k in range(1, max_n + 1):
    hyp_counts = _ngram_counts(hypothesis, k)
    ref_counts = _ngram_counts(reference, k)
    matches = sum(min(c, ref_counts[g]) for g, c in hyp_counts.items())
    out.append((matches, max(1, sum(hyp_counts.values()))))
  return out


def _bleu(matches: Sequence[tuple[int, int]], n: int, ref_len: int, hyp_len: int) -> float:
  if matches[0][0] == 0:
    return 0.0
  precisions = [m / t if m else sys.float_info.min for m, t in matches[:n]]
  bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
  weight = 1.0 / n
  return bp * math.exp(math.fsum(weight * math.log(p) for p in precisions))


def sentence_bleu(reference: Sequence[str], hypothesis: Sequence[str], n: int) -> float:
  """nltk `sentence_bleu([reference], hypothesis, weights=(1/n,)*n)` with no smoothing.

  nltk's default method0 replaces a zero n-gram precision by `sys.float_info.min`,
  so an order without matches drives the score to ~1e-155 rather than 0; no
  unigram match (or an empty hypothesis) scores exactly 0.
  """
  return _bleu(_clipped_matches(reference, hypothesis, n), n, len(reference), len(hypothesis))


def bleu_scores(references: Sequence[str], predictions: Sequence[str],
                orders: Sequence[int] = (1, 2, 3, 4)) -> dict[str, float]:
  """Mean over examples of jieba-word BLEU-n, 0-1 scale, keys `bleu-n`."""
  _checks.check_pairs(references, predictions, "lot bleu")
  per_order = {n: [] for n in orders}
  for reference, prediction in zip(references, predictions):
    ref, hyp = proline(reference).split(), proline(prediction).split()
    matches = _clipped_matches(ref, hyp, max(orders))
    for n in orders:
      per_order[n].append(_bleu(matches, n, len(ref), len(hyp)))
  return {f"bleu-{n}": float(np.mean(v)) for n, v in per_order.items()}


# --------------------------------------------------------------------- Distinct

DISTINCT_UNITS = ("word", "nlpcc_chars")


def distinct_scores(predictions: Sequence[str], orders: Sequence[int] = (1, 2, 3, 4), *,
                    unit: str = "word") -> dict[str, float]:
  """Corpus Distinct-n: unique n-grams / all n-grams over every prediction, 0-1 scale.

  unit "word": n-grams of jieba words (the paper's numbers need this).
  unit "nlpcc_chars": n-grams of the characters of the space-joined jieba string,
  spaces included, as the NLPCC `repetition_distinct` does. No n-grams at all
  scores 0 (the official code divides by zero).
  """
  if unit not in DISTINCT_UNITS:
    raise ValueError(f"distinct unit must be one of {DISTINCT_UNITS}, got {unit!r}")
  if unit == "word":
    sequences = [proline(p).split() for p in predictions]
  else:
    sequences = [proline(p) for p in predictions]
  result = {}
  for n in orders:
    unique, total = set(), 0
    for seq in sequences:
      grams = ["_".join(seq[i:i + n]) for i in range(len(seq) - n + 1)]
      total += len(grams)
      unique.update(grams)
    result[f"distinct-{n}"] = len(unique) / total if total else 0.0
  return result


# --------------------------------------------------------------------- Coverage

# Python frames on the stack above rouge's recursive `_recon` when the official
# script runs (<module> -> main -> compute -> rouge -> get_scores -> ... -> _recon_lcs),
# measured with CPython 3.11 and recursion limit 1000: a phrase "x" against 990
# other characters fails there (991 `_recon` calls). A longer LCS walk raises
# RecursionError and the pair is dropped.
OFFICIAL_RECURSION_BUDGET = 990


def phrase_recall(phrase: str, prediction: str, *,
                  recursion_budget: int | None = OFFICIAL_RECURSION_BUDGET) -> float | None:
  """PyPI-rouge ROUGE-L recall of one outline phrase in a prediction, characters as words.

  None where the official scorer's `try/except` drops the pair: an empty phrase or
  prediction (rouge raises ValueError) or an LCS walk deeper than `recursion_budget`
  (RecursionError; None budget = unlimited).
  """
  ref = pypi_rouge.sentences(" ".join("".join(phrase.strip().split())))
  hyp = pypi_rouge.sentences(" ".join("".join(prediction.strip().split())))
  if not ref or not hyp:
    return None
  ref_vocab = {w for s in ref for w in s}
  union = set()
  for ref_s in ref:
    for hyp_s in hyp:
      tokens, calls = pypi_rouge.lcs_token_set(ref_s, hyp_s)
      if recursion_budget is not None and calls > recursion_budget:
        return None
      union |= tokens
  return len(union) / len(ref_vocab)


def outline_phrases(outline: str | Sequence[str]) -> list[str]:
  """Phrases as the scorer sees them: `"#".join(outline).split("#")`."""
  joined = outline if isinstance(outline, str) else "#".join(outline)
  return joined.split("#")


def coverage_score(outlines: Sequence, predictions: Sequence[str], *,
                   strict: bool = False) -> float:
  """Mean phrase recall over all (example, phrase) pairs, flattened, 0-1 scale.

  Default: the official behaviour (dropped pairs do not count at all, so an empty
  prediction does not lower the score). strict=True counts them as 0 and has no
  recursion limit. Where no pair is left (every prediction empty or past the
  recursion limit) this returns 0.0; the official `np.mean([])` gives NaN, and so
  would its Overall.
  """
  _checks.check_pairs(outlines, predictions, "lot coverage")
  budget = None if strict else OFFICIAL_RECURSION_BUDGET
  values = []
  for outline, pred in zip(outlines, predictions):
    for phrase in outline_phrases(outline):
      r = phrase_recall(phrase, pred, recursion_budget=budget)
      if r is None:
        if not strict:
          continue
        r = 0.0
      values.append(r)
  return float(np.mean(values)) if values else 0.0


# ------------------------------------------------------------------------ Order


def longest_common_substring(x: str, y: str) -> str:
  """The official `lcs3_dp`: the longest substring of x found in y; among equals,
  the one ending first in x."""
  for length in range(len(x), 0, -1):
    for start in range(len(x) - length + 1):
      if x[start:start + length] in y:
        return x[start:start + length]
  return ""


def gold_ranks(outline: str | Sequence[str], story: str) -> dict[str, int]:
  """Phrase -> rank by first position in the reference (absent = -1 first, stable).

  A dict as the official `kw2id`: a repeated phrase keeps its first slot and
  its last rank.
  """
  joined = outline if isinstance(outline, str) else "#".join(outline)
  phrases = joined.strip().split("#")
  truth = story.strip()
  pos = [truth.find(p.strip()) for p in phrases]
  ranks: dict[str, int] = {}
  for rank, idx in enumerate(sorted(range(len(pos)), key=lambda i: pos[i])):
    ranks[phrases[idx]] = rank
  return ranks


def order_one(ranks: Mapping[str, int], prediction: str) -> float:
  """1 - inversions / (k(k+1)/2) of the gold ranks in predicted order (official)."""
  phrases = list(ranks)[::-1]
  hyp = "".join(prediction.strip().split())
  pos = []
  for phrase in phrases:
    common = longest_common_substring("".join(phrase.strip().split()), hyp)
    pos.append(hyp.find(common) if len(common) > 1 else -1)
  seq = [ranks[phrases[i]] for i in sorted(range(len(pos)), key=lambda i: pos[i])]
  k = len(seq)
  inversions = sum(seq[i] > seq[j] for i in range(k) for j in range(i, k))
  return 1 - inversions / float(k * (k + 1) // 2)


def order_score(outlines: Sequence, references: Sequence[str],
                predictions: Sequence[str]) -> float:
  """Mean Order over examples, 0-1 scale."""
  _checks.check_pairs(references, predictions, "lot order")
  return float(np.mean([order_one(gold_ranks(o, r), p)
                        for o, r, p in zip(outlines, references, predictions)]))


# ---------------------------------------------------------------------- Overall


def weighted_overall(scores: Sequence[float], human: Sequence[float],
                     baseline: Sequence[float]) -> float:
  """Paper Eq. (1)-(2): sum_i w_i S_i with w_i = (H_i/B_i) / sum_j (H_j/B_j)."""
  w = [h / b for h, b in zip(human, baseline)]
  total = sum(w)
  return sum(wi / total * s for wi, s in zip(w, scores))


NLPCC_METRICS = ("bleu-1", "bleu-2", "distinct-3", "distinct-4", "coverage", "order")
NLPCC_WEIGHTS = {
    "validation": ([100, 100, 23.47, 42.17, 100, 100],
                   [26.58, 16.04, 17.90, 31.38, 83.64, 63.15]),
    "test": ([100, 100, 21.28, 39.54, 100, 100],
             [29.42, 17.97, 16.17, 29.15, 83.87, 64.10]),
}

# Paper Tables 10/11: humans/Truth (H) and BERT-base / GPT2-base (B), per split.
LOT_UNDERSTANDING = ("clozet/accuracy", "senpos/accuracy")
LOT_GENERATION = tuple(
    [f"plotcom/{m}" for m in ("bleu-1", "bleu-2", "distinct-1", "distinct-2")]
    + [f"outgen/{m}" for m in ("bleu-1", "bleu-2", "distinct-1", "distinct-2", "coverage",
                               "order")])
LOT_WEIGHTS = {
    ("understanding", "validation"): ([99.00, 97.00], [70.75, 40.13]),
    ("understanding", "test"): ([100.00, 98.00], [69.39, 43.68]),
    ("generation", "validation"): (
        [100, 100, 35.32, 84.33, 100, 100, 21.66, 71.43, 100, 100],
        [22.67, 6.22, 24.75, 70.57, 30.43, 14.87, 10.95, 44.38, 60.90, 55.52]),
    ("generation", "test"): (
        [100, 100, 35.01, 84.56, 100, 100, 15.71, 63.46, 100, 100],
        [22.94, 5.76, 24.69, 70.30, 30.17, 14.91, 7.62, 36.87, 60.87, 55.90]),
}


def _split_key(split: str) -> str:
  split = {"val": "validation", "dev": "validation"}.get(split, split)
  if split not in ("validation", "test"):
    raise ValueError(f"split must be 'validation' or 'test', got {split!r}")
  return split


def lot_overall(scores: Mapping[str, float], kind: str, split: str) -> float:
  """The LOT Overall (0-100) of `scores` keyed like LOT_UNDERSTANDING/LOT_GENERATION.

  Weights come from the unrounded H and B of the split, not the printed w_i.
  """
  if kind not in ("understanding", "generation"):
    raise ValueError(f"kind must be 'understanding' or 'generation', got {kind!r}")
  names = LOT_UNDERSTANDING if kind == "understanding" else LOT_GENERATION
  missing = [n for n in names if n not in scores]
  if missing:
    raise KeyError(f"lot_overall({kind!r}) needs scores for {missing}")
  human, baseline = LOT_WEIGHTS[(kind, _split_key(split))]
  return weighted_overall([scores[n] for n in names], human, baseline)


def nlpcc_overall(scores: Mapping[str, float], split: str = "validation") -> float:
  """The NLPCC-2021 weighted score over NLPCC_METRICS (0-1 scale in, 0-1 out).

  `distinct-3/4` must be the nlpcc_chars kind.
  """
  human, small = NLPCC_WEIGHTS[_split_key(split)]
  return weighted_overall([scores[n] for n in NLPCC_METRICS], human, small)


def nlpcc_scores(references: Sequence[str], outlines: Sequence, predictions: Sequence[str],
                 split: str = "validation") -> dict[str, float]:
  """Everything the NLPCC `eval.py` prints, 0-1 scale, plus `overall`."""
  result = bleu_scores(references, predictions)
  result.update(distinct_scores(predictions, unit="nlpcc_chars"))
  result["coverage"] = coverage_score(outlines, predictions)
  result["order"] = order_score(outlines, references, predictions)
  result["overall"] = nlpcc_overall(result, split)
  return result


# ------------------------------------------------------------ SeqIO metric fns


def _story_targets(targets: Sequence) -> tuple[list[str], list]:
  stories, outlines = [], []
  for i, t in enumerate(targets):
    if not isinstance(t, Mapping) or "story" not in t or "outline" not in t:
      raise TypeError(f"lot outgen metric: targets[{i}] must be a dict with 'story' and "
                      f"'outline' (the task's target postprocessor), got {type(t).__name__}")
    stories.append(t["story"])
    outlines.append(t["outline"])
  return stories, outlines


def lot_story_metrics(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
  """PlotCom-style scores (0-100): BLEU-1..4 and word Distinct-1..4."""
  result = bleu_scores(targets, predictions)
  result.update(distinct_scores(predictions, unit="word"))
  return {k: 100.0 * v for k, v in result.items()}


def lot_outgen_metrics(targets: Sequence[Mapping], predictions: Sequence[str], *,
                       split: str = "validation", strict: bool = False) -> dict[str, float]:
  """OutGen scores (0-100) from targets `{story, outline}`.

  BLEU-1..4, word Distinct-1..4 (the paper's unit), NLPCC character
  `nlpcc_distinct-1..4`, Coverage, Order, and `overall` (the NLPCC weighted score
  of the split, the only single-task Overall the official code defines).
  """
  stories, outlines = _story_targets(targets)
  result = bleu_scores(stories, predictions)
  result.update(distinct_scores(predictions, unit="word"))
  chars = distinct_scores(predictions, unit="nlpcc_chars")
  result.update({f"nlpcc_{k}": v for k, v in chars.items()})
  result["coverage"] = coverage_score(outlines, predictions, strict=strict)
  result["order"] = order_score(outlines, stories, predictions)
  result["overall"] = nlpcc_overall({**result, **chars}, split)
  return {k: 100.0 * v for k, v in result.items()}
