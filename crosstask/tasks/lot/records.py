"""Validation and normalisation of one LOT record (pure Python, no I/O).

The four official formats (thu-coai/LOT-LongLM `datasets/*/README.md`) and the
NLPCC-2021 outline-to-story form (OutGen without titles). Placeholders vary
between the tasks and even within SenPos's own README (`<mask>`, `<MASK>`,
`[MASK]`), so any of them is accepted, case-insensitively, and normalised:
ClozeT/PlotCom to `<mask>`, SenPos positions to `[1]..[n]` (paper Table 7).
Label types follow the data: ClozeT `"0"`/`"1"` strings, SenPos 1-based ints.
Each function raises `ValueError` subclass `RecordError(field, problem)`; the
reader adds the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "<mask>"
PLACEHOLDER = re.compile(r"<mask>|\[mask\]", re.IGNORECASE)


class RecordError(ValueError):
  """A bad field in one record; `field` names it."""

  def __init__(self, field: str, problem: str):
    super().__init__(f"field {field!r}: {problem}")
    self.field = field
    self.problem = problem


def _text(record: Mapping, field: str) -> str:
  if field not in record:
    raise RecordError(field, "missing")
  value = record[field]
  if not isinstance(value, str):
    raise RecordError(field, f"expected a string, got {type(value).__name__}")
  if not value.strip():
    raise RecordError(field, "empty")
  return value


def _one_mask(record: Mapping, field: str = "story") -> str:
  story = _text(record, field)
  found = PLACEHOLDER.findall(story)
  if len(found) != 1:
    raise RecordError(field, f"expected exactly one placeholder (<mask>, <MASK> or [MASK]), "
                      f"found {len(found)}")
  return PLACEHOLDER.sub(MASK, story)


def clozet(record: Mapping) -> dict[str, Any]:
  """{story (one <mask>), plot0, plot1, label "0"|"1"}."""
  story = _one_mask(record)
  plots = [_text(record, "plot0"), _text(record, "plot1")]
  if "label" not in record:
    raise RecordError("label", "missing")
  label = record["label"]
  if isinstance(label, bool) or str(label) not in ("0", "1"):
    raise RecordError("label", f"expected \"0\" or \"1\" (the index of the right plot), "
                      f"got {label!r}")
  if plots[0] == plots[1]:
    raise RecordError("plot1", "identical to plot0, so the label cannot be told")
  return {"story": story, "plot0": plots[0], "plot1": plots[1], "label": str(label)}


def senpos(record: Mapping) -> dict[str, Any]:
  """{story with positions [1]..[n], sentence, label 1..n (int), num_positions n}."""
  story = _text(record, "story")
  count = len(PLACEHOLDER.findall(story))
  if count < 2:
    raise RecordError("story", f"expected at least 2 candidate positions ([MASK]), found {count}")
  numbered = iter(range(1, count + 1))
  story = PLACEHOLDER.sub(lambda _: f"[{next(numbered)}]", story)
  sentence = _text(record, "sentence")
  if "label" not in record:
    raise RecordError("label", "missing")
  label = record["label"]
  if isinstance(label, str) and label.strip().isdigit():
    label = int(label)
  if isinstance(label, bool) or not isinstance(label, int) or not 1 <= label <= count:
    raise RecordError("label", f"expected an integer position from 1 to {count} "
                      f"(1-based, one per [MASK]), got {label!r}")
  return {"story": story, "sentence": sentence, "label": label, "num_positions": count}


def plotcom(record: Mapping) -> dict[str, Any]:
  """{story (one <mask>), plot}."""
  return {"story": _one_mask(record), "plot": _text(record, "plot")}


def outline(record: Mapping) -> list[str]:
  """A non-empty list of non-empty phrases, none containing '#' (the join character)."""
  if "outline" not in record:
    raise RecordError("outline", "missing")
  value = record["outline"]
  if not isinstance(value, list) or not value:
    raise RecordError("outline", f"expected a non-empty list of phrases, got {value!r:.60}")
  for i, phrase in enumerate(value):
    if not isinstance(phrase, str) or not phrase.strip():
      raise RecordError("outline", f"phrase {i} must be a non-empty string, got {phrase!r}")
    if "#" in phrase:
      raise RecordError("outline", f"phrase {i} {phrase!r} contains '#', which joins phrases")
  return list(value)


def outgen(record: Mapping, *, with_title: bool = True) -> dict[str, Any]:
  """{title (LOT only), outline [phrases in the given order], story}."""
  result = {"outline": outline(record), "story": _text(record, "story")}
  if with_title:
    result["title"] = _text(record, "title")
  return result


def nlpcc(record: Mapping) -> dict[str, Any]:
  """NLPCC-2021 outline-to-story: OutGen without titles."""
  return outgen(record, with_title=False)


def nlpcc_unlabelled(record: Mapping) -> dict[str, Any]:
  """An NLPCC-2021 test record: its outline, and the empty story the official test files
  hold in its place (`{"story": "", "outline": [...]}`), kept as ""."""
  story = record.get("story", "")
  if not isinstance(story, str):
    raise RecordError("story", f"expected a string, got {type(story).__name__}")
  return {"outline": outline(record), "story": story}


NORMALISERS = {"clozet": clozet, "senpos": senpos, "plotcom": plotcom, "outgen": outgen,
               "nlpcc": nlpcc}
# The unlabelled splits' normalisers: NLPCC-2021's test stories are hidden.
UNLABELLED = {("nlpcc", "test"): nlpcc_unlabelled}
