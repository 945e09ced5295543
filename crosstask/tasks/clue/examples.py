"""Reader records -> the field values of a CLUE arrow prompt, and answers back.

Pure Python, shared by the SeqIO tasks, rank classification and the
submission writers, so all three see the same options in the same order.

* WSC: the candidate noun is wrapped in `_…_` and the pronoun in `[…]`, inserted
  right to left so the character offsets stay valid (CLUE's WscProcessor).
* ChID: the target blank becomes `【空】`, the passage's other blanks `【略】`,
  cut to a window of ±`CHID_WINDOW` characters around the target.
* C3 / ChID options are listed in the input joined by `|`.
* A generated option maps back to its index by exact match after NFKC + strip
  (SentencePiece decodes NFKC text); no match is -1, which scores as wrong.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from crosstask.tasks.clue import labels as L
from crosstask.tasks.clue import readers as RD

OPTION_SEP = "|"
CHID_TARGET, CHID_OTHER = "【空】", "【略】"
CHID_WINDOW = 200
# Kinds whose answer is an index into per-record options; the rest pick a label word.
CHOICE_KINDS = ("chid", "c3")


def mark_wsc(record: dict) -> str:
  """The WSC text with the noun as `_noun_` and the pronoun as `[pronoun]`."""
  text = record["text"]
  spans = [(record["span1_index"], record["span1_text"], "_", "_"),
           (record["span2_index"], record["span2_text"], "[", "]")]
  for start, span, left, right in sorted(spans, key=lambda s: s[0], reverse=True):
    end = start + len(span)
    text = text[:start] + left + text[start:end] + right + text[end:]
  return text


def chid_passage(record: dict, window: int = CHID_WINDOW) -> str:
  """The passage around the record's blank, other blanks masked differently."""
  content, tag = record["content"], record["tag"]
  start = content.index(tag)
  before = RD.CHID_BLANK.sub(CHID_OTHER, content[:start])[-window:]
  after = RD.CHID_BLANK.sub(CHID_OTHER, content[start + len(tag):])[:window]
  return before + CHID_TARGET + after


def c3_document(record: dict) -> str:
  """The document lines on one line (some C3 lines hold newlines)."""
  return " ".join(" ".join(line.split()) for line in record["document"])


def options(kind: str, record: dict) -> list[str]:
  """The answer options of a record: its own (ChID, C3) or the task's label words."""
  if kind == "chid":
    return list(record["candidates"])
  if kind == "c3":
    return list(record["choice"])
  return list(L.words(kind))


def gold_index(kind: str, record: dict) -> int | None:
  """The index of the gold option in `options(kind, record)`; None when unlabelled."""
  if kind in CHOICE_KINDS:
    return record["answer"]
  if record["label"] is None:
    return None
  return list(L.LABELS[kind]).index(record["label"])


def target_text(kind: str, record: dict) -> str:
  """The training target: the gold option's text, or '' for unlabelled records."""
  if kind == "cmrc":
    return cmrc_target(record)
  index = gold_index(kind, record)
  return "" if index is None else options(kind, record)[index]


def cmrc_target(record: dict) -> str:
  """The first reference found in the passage (193 dev references are not)."""
  for answer in record["answers"]:
    if answer.strip() and answer in record["context"]:
      return answer
  return record["answers"][0] if record["answers"] else ""


def _norm(text: str) -> str:
  return unicodedata.normalize("NFKC", text).strip()


def option_index(prediction: str, choices: Sequence[str]) -> int:
  """Index of the first option equal to `prediction` after NFKC + strip, else -1."""
  pred = _norm(prediction)
  for i, choice in enumerate(choices):
    if _norm(choice) == pred:
      return i
  return -1


def expand_options(kind: str, records: Iterable[dict], train: bool) -> list[dict]:
  """Rank classification examples: one per (record, option), in record order.

  For training only the gold option is kept (T5's mode='train'), so the model
  learns exactly what the generation task teaches it.
  """
  out = []
  for position, record in enumerate(records):
    gold = gold_index(kind, record)
    for i, option in enumerate(options(kind, record)):
      if train and i != gold:
        continue
      out.append({**record, "_example": position, "_option": i, "_text": option,
                  "_correct": gold == i})
  return out


def joint_assignment(scores: Sequence[Sequence[float]]) -> list[int]:
  """ChID's joint decoding of one line: blanks of a line have distinct answers, so the
  globally best (blank, candidate) pair is fixed first, then the best among the rest
  (greedy, as the official CHID_preprocess.logits_matrix_to_array). The pairs are listed
  candidate by candidate and stably sorted by score, highest first, as there, so equal
  scores and NaN (which compares false with everything) order as they do there."""
  n_blanks = len(scores)
  pairs = [(blank, candidate, scores[blank][candidate])
           for candidate in range(max(len(row) for row in scores))
           for blank in range(n_blanks) if candidate < len(scores[blank])]
  pairs.sort(key=lambda pair: pair[2], reverse=True)
  answer: list[int] = [-1] * n_blanks
  used: set[int] = set()
  for blank, candidate, _ in pairs:
    if answer[blank] < 0 and candidate not in used:
      answer[blank] = candidate
      used.add(candidate)
  return answer
