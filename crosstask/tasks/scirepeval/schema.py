"""The SciRepEval fields for the shared layout: paper and pair inputs, one output per task."""

from __future__ import annotations

import re

from crosstask.tasks.common.schema import Field, Schema
from crosstask.tasks.scirepeval import text

# Canonical order = prompt order: a search query comes first, the pair's second paper last.
INPUTS = (("query", "Query"), ("title", "Title"), ("abstract", "Abstract"), ("venue", "Venue"),
          ("year", "Year"), ("candidate_title", "Candidate title"),
          ("candidate_abstract", "Candidate abstract"),
          ("reviewer_paper_title", "Reviewer paper title"),
          ("reviewer_paper_abstract", "Reviewer paper abstract"))


def _name(label: str) -> str:
  return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def output_field(task: text.TextTask) -> str:
  return _name(task.output)


def input_fields(task: text.TextTask) -> tuple[str, ...]:
  return tuple(_name(label) for label in task.input_labels)


_OUTPUTS = {}
for _t in text.TEXT_TASKS:
  _OUTPUTS.setdefault(output_field(_t), Field(output_field(_t), {"en": _t.output},
                                              kind="number" if _t.kind == "number" else "label"))

SCHEMA = Schema("scirepeval", tuple(Field(n, {"en": l}) for n, l in INPUTS)
                + tuple(_OUTPUTS.values()))
