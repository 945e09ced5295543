"""CiteSum's fields (and its transfer sets') with their English labels and metrics.

One schema for all four datasets, so that a transfer task can lay a news
article out as an `Abstract` and reuse the prompt its source model was trained
with. Canonical order (the order of prompts): title, abstract, introduction,
conclusion, discipline, document, then the outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from crosstask.metrics import classification
from crosstask.metrics import summary_rouge
from crosstask.tasks.common.schema import Field, Schema

# MAG top-level fields of study in S2ORC (the discipline labels; paper Fig. 1).
MAG_FIELDS = ("Art", "Biology", "Business", "Chemistry", "Computer Science", "Economics",
              "Engineering", "Environmental Science", "Geography", "Geology", "History",
              "Materials Science", "Mathematics", "Medicine", "Philosophy", "Physics",
              "Political Science", "Psychology", "Sociology")


def discipline_metrics(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
  """Accuracy, macro F1 and weighted F1 (Table 7), 0-100.

  The classes are those in the targets or predictions, as sklearn's
  `f1_score` takes them by default (the paper released no scorer).
  """
  classes = sorted({t.strip() for t in targets} | {p.strip() for p in predictions})
  return {**classification.accuracy(targets, predictions),
          **classification.macro_f1(targets, predictions, label_set=classes),
          **classification.weighted_f1(targets, predictions, label_set=classes)}


def _text(name: str, label: str, scored: bool = False) -> Field:
  return Field(name, {"en": label}, metric_fn=summary_rouge.rouge_stemmed if scored else None)


SCHEMA = Schema("citesum", (
    _text("title", "Title", scored=True),
    _text("abstract", "Abstract"),
    _text("introduction", "Introduction"),
    _text("conclusion", "Conclusion"),
    Field("discipline", {"en": "Discipline"}, kind="label", label_set=MAG_FIELDS,
          metric_fn=discipline_metrics),
    _text("document", "Document"),
    _text("tldr", "TLDR", scored=True),
    _text("summary", "Summary", scored=True),
    _text("headline", "Headline", scored=True),
))
