"""Extractive baselines for CSL arrow tasks: lower bounds any model must beat.

* title: the lead of the abstract (its first clause, at most `max_chars`).
* keywords: frequent Chinese character n-grams of the abstract (2-4 chars,
  scored count × length, none sharing a bigram with a chosen one).
* category / discipline: the majority class of the training records.
* abstract (as an output): the title itself, the only text left to copy.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Mapping, Sequence

from crosstask.tasks.common import layout
from crosstask.tasks.csl import schema as S

_CLAUSE_END = re.compile(r"[，。；：,.;:！？!?（）()]")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
# Function words and stock phrases that make poor keywords.
_STOP = ("研究", "结果", "表明", "方法", "本文", "提出", "分析", "采用", "通过", "进行", "影响",
         "具有", "以及", "显著", "基于", "一种", "的", "了", "和", "与", "在", "对", "为", "是")


def lead_title(abstract: str, max_chars: int = 20) -> str:
  """The first clause of the abstract, cut to `max_chars`."""
  text = abstract.strip()
  for prefix in ("目的", "摘要"):
    text = text[len(prefix):].lstrip() if text.startswith(prefix) else text
  clause = _CLAUSE_END.split(text, maxsplit=1)[0]
  return (clause or text)[:max_chars]


def ngram_keywords(text: str, num: int = 4, sizes: Sequence[int] = (2, 3, 4)) -> list[str]:
  """The `num` best-scoring frequent character n-grams of `text`."""
  counts = collections.Counter()
  for run in _HAN_RUN.findall(text):
    for n in sizes:
      for i in range(len(run) - n + 1):
        gram = run[i:i + n]
        if not any(s in gram for s in _STOP):
          counts[gram] += 1
  ranked = sorted(counts.items(), key=lambda kv: (-(kv[1] * len(kv[0])), -len(kv[0]), kv[0]))
  chosen: list[str] = []
  for gram, count in ranked:
    if count < 2 and chosen:
      break
    if not any(_overlaps(gram, c) for c in chosen):
      chosen.append(gram)
    if len(chosen) == num:
      break
  return chosen


def _overlaps(a: str, b: str) -> bool:
  """Whether two n-grams share a character bigram (one is a shifted piece of the other)."""
  return any(a[i:i + 2] in b for i in range(len(a) - 1))


def majority(labels: Iterable[str]) -> str:
  """The most frequent label (ties broken by label order)."""
  counts = collections.Counter(labels)
  if not counts:
    raise ValueError("majority baseline needs at least one training label")
  return min(counts, key=lambda label: (-counts[label], label))


class ExtractiveBaseline:
  """Predicts every output field of a record from its input fields."""

  def __init__(self, train_records: Sequence[Mapping]):
    self.majority = {f: majority(r[f] for r in train_records) for f in S.LABEL_FIELDS}

  def predict_field(self, record: Mapping, field: str, inputs: Sequence[str]):
    source = " ".join(record[f] for f in ("abstract", "title") if f in inputs) or " ".join(
        layout.value_text(S.SCHEMA[f], record[f], S.SCHEMA) for f in inputs)
    if field == "title":
      return lead_title(record["abstract"]) if "abstract" in inputs else source[:20]
    if field == "abstract":
      return source
    if field == "keywords":
      return ngram_keywords(source)
    return self.majority[field]

  def predict(self, record: Mapping, inputs: Sequence[str], outputs: Sequence[str],
              lang: str = "zh") -> str:
    """The prediction as output text, in the task's layout."""
    values = {f: self.predict_field(record, f, inputs) for f in outputs}
    return layout.format_fields(S.SCHEMA, values, outputs, lang)
