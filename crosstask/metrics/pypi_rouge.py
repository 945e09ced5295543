"""The `rouge` PyPI package's summary-level ROUGE-L (pltrdy/rouge 1.0.1), walked without recursion.

CSL's official scorer and LOT's NLPCC scorer both call this package. It splits a
text into sentences at '.', words at single spaces, takes each LCS as a *set* of
tokens (its union over sentence pairs counts a token once), and rebuilds every
LCS by recursion, one call per step back through the table: past Python's
recursion limit (about 1,000 steps, e.g. a 700-character prediction against a
500-character abstract) the package raises RecursionError. The same walk here
is a loop, so a long text scores what the package would give with room to
recurse; LOT's coverage still drops such pairs, as its official scorer does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def sentences(text: str) -> list[list[str]]:
  """The package's sentences: split on '.', non-empty pieces re-spaced, words by ' '."""
  pieces = [" ".join(s.split()) for s in text.split(".") if len(s) > 0]
  return [p.split(" ") for p in pieces]


def has_sentences(text: str) -> bool:
  """Whether the package finds a sentence in `text` (else it raises ValueError)."""
  return any(text.split("."))


def lcs_token_set(ref: Sequence[str], hyp: Sequence[str]) -> tuple[set, int]:
  """Tokens on the package's reconstructed LCS path, and the number of recursive calls.

  The DP table rows use table[i][j] = running max of (diag+1 on match, else up),
  which equals the package's recurrence; the walk back follows its tie-breaking
  (diagonal on match, up only when strictly larger, else left), since the token
  *set* depends on which LCS is taken.
  """
  n, m = len(ref), len(hyp)
  hyp_arr = np.array(hyp, dtype=object)
  table = np.zeros((n + 1, m + 1), dtype=np.int32)
  for i in range(1, n + 1):
    match = hyp_arr == ref[i - 1]
    cand = np.where(match, table[i - 1, :-1] + 1, table[i - 1, 1:])
    table[i, 1:] = np.maximum.accumulate(cand)
  rows = table.tolist()  # Python ints: item access on numpy is slow in the walk
  tokens, calls, i, j = set(), 1, n, m
  while i > 0 and j > 0:
    calls += 1
    if ref[i - 1] == hyp[j - 1]:
      tokens.add(ref[i - 1])
      i, j = i - 1, j - 1
    elif rows[i - 1][j] > rows[i][j - 1]:
      i -= 1
    else:
      j -= 1
  return tokens, calls


def rouge_l_f(hypothesis: str, reference: str) -> float:
  """`Rouge(metrics=["rouge-l"]).get_scores(hypothesis, reference)[0]["rouge-l"]["f"]`.

  Raises ValueError, as the package does, when either text has no sentence.
  """
  if not has_sentences(hypothesis) or not has_sentences(reference):
    raise ValueError("Collections must contain at least 1 sentence.")
  hyp, ref = sentences(hypothesis), sentences(reference)
  union: set = set()
  for ref_sentence in ref:
    for hyp_sentence in hyp:
      union |= lcs_token_set(ref_sentence, hyp_sentence)[0]
  overlap = len(union)
  recall = overlap / len({w for s in ref for w in s})
  precision = overlap / len({w for s in hyp for w in s})
  return 2.0 * ((precision * recall) / (precision + recall + 1e-8))
