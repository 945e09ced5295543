"""CMRC 2018 EM and F1, scored as the official `cmrc2018_evaluate.py` does.

The official script (ymcui/cmrc2018, v5-special; CLUE ships a Python 3 port)
segments text into CJK characters and NLTK word tokens of the non-CJK runs,
drops its own punctuation list (`SP_CHAR`, below), and takes the best score
over every reference of a question:

* EM: the prediction equals a reference once both are lower-cased, stripped and
  have every SP_CHAR character removed (other punctuation, ASCII `.,?!()` and
  inner spaces included, counts).
* F1: over `mixed_segmentation` tokens, the longest common *contiguous* token
  run L gives P = L/|pred|, R = L/|ref|, F1 = 2PR/(P+R).

The official script calls `nltk.word_tokenize`, which splits a run into sentences
with NLTK's Punkt model (`punkt_tab`, `nltk.download('punkt_tab')`; not on PyPI)
before the Treebank tokenizer. Where that model is installed crosstask makes the
same call; where it is not (offline, and where the official script stops) each
run goes to the Treebank tokenizer whole (`preserve_line=True`). The two differ
only where Punkt ends a sentence inside a run: a period before a space
(`army. the`) stays on its word without Punkt and is its own token with it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from crosstask.metrics import _checks
from crosstask.metrics import sentences as sentences_lib

# The official list, in its order. `……` is one two-character entry, so a single
# `…` is never removed (the script compares characters against the list).
SP_CHAR = ("-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=",
           "，", "。", "：", "？", "！", "“", "”", "；", "’", "《", "》", "……", "·", "、",
           "「", "」", "（", "）", "－", "～", "『", "』")
_SP_SET = frozenset(SP_CHAR)
_CJK = re.compile("[\u4e00-\u9fa5]")


@functools.lru_cache(maxsize=65536)
def _word_tokens(run: str, sentences: bool) -> tuple[str, ...]:
  """NLTK's tokens of one non-CJK run, split into Punkt sentences first when
  `sentences` (cached: answers repeat a lot)."""
  if run.isspace():
    return ()
  from nltk.tokenize import word_tokenize  # pylint: disable=g-import-not-at-top
  return tuple(word_tokenize(run, preserve_line=not sentences))


def mixed_segmentation(text: str, rm_punc: bool = True, *,
                       sentences: bool | None = None) -> list[str]:
  """CJK characters one token each, other runs NLTK-tokenized (official order).

  With `rm_punc`, SP_CHAR characters are dropped without ending the current
  non-CJK run (so `ω-force` is one token `ωforce`, as in the official script).
  `sentences`: split runs into Punkt sentences as `nltk.word_tokenize` does; None
  does so where the model is installed (`sentences.punkt_installed`, asked once).
  """
  if sentences is None:
    sentences = sentences_lib.punkt_installed()
  text = str(text).lower().strip()
  tokens: list[str] = []
  run = ""
  for char in text:
    if rm_punc and char in _SP_SET:
      continue
    if _CJK.match(char) or char in _SP_SET:
      if run:
        tokens.extend(_word_tokens(run, sentences))
        run = ""
      tokens.append(char)
    else:
      run += char
  if run:
    tokens.extend(_word_tokens(run, sentences))
  return tokens


def remove_punctuation(text: str) -> str:
  """Lower-cased, stripped text without SP_CHAR characters (the EM normaliser)."""
  return "".join(c for c in str(text).lower().strip() if c not in _SP_SET)


def longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
  """Length of the longest common contiguous token run of `a` and `b`."""
  best = 0
  previous = [0] * (len(b) + 1)
  for x in a:
    current = [0] * (len(b) + 1)
    for j, y in enumerate(b):
      if x == y:
        current[j + 1] = previous[j] + 1
        best = max(best, current[j + 1])
    previous = current
  return best


def f1_score(references: Iterable[str], prediction: str) -> float:
  """Best token F1 (0..1) of `prediction` over `references`."""
  pred = mixed_segmentation(prediction)
  best = 0.0
  for ref in references:
    ref_tokens = mixed_segmentation(ref)
    common = longest_common_run(ref_tokens, pred)
    if common:
      precision, recall = common / len(pred), common / len(ref_tokens)
      best = max(best, 2 * precision * recall / (precision + recall))
  return best


def em_score(references: Iterable[str], prediction: str) -> float:
  """1.0 when `prediction` equals any reference after `remove_punctuation`."""
  pred = remove_punctuation(prediction)
  return float(any(remove_punctuation(ref) == pred for ref in references))


def _references(value, index: int) -> list[str]:
  refs = [value] if isinstance(value, str) else list(value)
  if not refs:
    raise ValueError(f"cmrc2018: targets[{index}] has no reference answer")
  for position, ref in enumerate(refs):
    _checks.check_text(ref, "cmrc2018", f"targets[{index}]", position)
  return refs


def cmrc2018(targets: Sequence[str | Sequence[str]],
             predictions: Sequence[str]) -> dict[str, float]:
  """SeqIO metric: {"em", "f1", "average"} on 0-100; a target is a list of references."""
  _checks.check_pairs(targets, predictions, "cmrc2018")
  em = f1 = 0.0
  for i, (target, prediction) in enumerate(zip(targets, predictions)):
    refs = _references(target, i)
    prediction = _checks.check_text(prediction, "cmrc2018", "predictions", i)
    em += em_score(refs, prediction)
    f1 += f1_score(refs, prediction)
  n = len(targets)
  em, f1 = 100.0 * em / n, 100.0 * f1 / n
  return {"em": em, "f1": f1, "average": (em + f1) / 2}


def evaluate(gold: Mapping, predictions: Mapping[str, str]) -> dict[str, float]:
  """The official script's totals for a SQuAD-style gold file and {query_id: answer}.

  Every question of `gold` counts; an unanswered one scores 0 and counts in SKIP.
  """
  em = f1 = 0.0
  total = skip = 0
  for article in gold["data"]:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        total += 1
        query_id = qa["id"].strip()
        if query_id not in predictions:
          skip += 1
          continue
        refs = [a["text"] for a in qa["answers"]]
        prediction = str(predictions[query_id])
        em += em_score(refs, prediction)
        f1 += f1_score(refs, prediction)
  if not total:
    raise ValueError("cmrc2018.evaluate: the gold file holds no questions")
  em, f1 = 100.0 * em / total, 100.0 * f1 / total
  return {"AVERAGE": (em + f1) / 2, "F1": f1, "EM": em, "TOTAL": total, "SKIP": skip}


def _normalized_with_offsets(text: str) -> tuple[str, list[int]]:
  """NFKC(text) without whitespace, and the index in `text` of each kept character."""
  out, origin = [], []
  for i, char in enumerate(text):
    for norm in unicodedata.normalize("NFKC", char):
      if not norm.isspace():
        out.append(norm)
        origin.append(i)
  return "".join(out), origin


def span_in_context(answer: str, context: str) -> str:
  """The exact `context` substring that `answer` stands for, else `answer` stripped.

  A SentencePiece vocabulary decodes NFKC-normalised text (`，（）` come back as
  `,()`), which the official EM counts wrong although the span is right; so the
  decoded answer is looked up in NFKC(context), whitespace ignored, and the
  original characters of the first match are returned.
  """
  answer = answer.strip()
  if not answer or answer in context:
    return answer
  needle, _ = _normalized_with_offsets(answer)
  haystack, origin = _normalized_with_offsets(context)
  start = haystack.find(needle) if needle else -1
  if start < 0:
    return answer
  return context[origin[start]:origin[start + len(needle) - 1] + 1]
