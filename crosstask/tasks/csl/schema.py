"""CSL's fields: names, Chinese and English labels, label sets, and how each is scored.

A record is `{"title", "abstract", "keywords": [..], "category", "discipline"}`;
keywords are written joined by `_`, as in the benchmark files.
"""

from __future__ import annotations

from crosstask.tasks.common import label_sets
from crosstask.tasks.common.schema import Field
from crosstask.tasks.common.schema import Schema

KEYWORD_SEP = "_"
TEXT_FIELDS = ("title", "abstract")
LABEL_FIELDS = ("category", "discipline")

# The 13 CSL categories (门类) and 67 disciplines (学科), as spelled in the benchmark data.
CATEGORIES = ("工学", "理学", "农学", "医学", "管理学", "法学", "教育学", "经济学",
              "文学", "艺术学", "历史学", "军事学", "哲学")
DISCIPLINES = label_sets.DISCIPLINES


# The WordPiece vocabulary CSL's README scores with (UER-py's), under the data root;
# `python -m crosstask.data fetch csl` puts it there.
OFFICIAL_VOCAB = "vocab/google_zh_with_sentinel_vocab.txt"


def official_vocab() -> str | None:
  """The path of `OFFICIAL_VOCAB` under the data root, or None where it is absent."""
  from crosstask import paths  # pylint: disable=g-import-not-at-top
  root = paths.data_dir()
  path = root / OFFICIAL_VOCAB if root is not None else None
  return str(path) if path is not None and path.is_file() else None


# The paper's metric pairs (Table 9), in the flavour of CSL's own scorer
# (`crosstask.metrics.csl_official`, equal to run_text2text_csl.py).
def text_metrics(targets, predictions) -> dict:
  """Titles and abstracts: ROUGE-L (official `rouge`-package flavour) and BLEU-4.

  ROUGE-L WordPiece-splits Latin words and digit runs as the official script does
  when `official_vocab()` finds the vocabulary in the data root; without it they
  stay whole (the 1,000 dev titles against the abstracts' first 24 characters: 35.09
  with it, equal to the official script (less its `[SEP]` tail), 35.05 without).
  """
  from crosstask import metrics as ev  # pylint: disable=g-import-not-at-top
  return {**ev.rouge_l_csl(targets, predictions, vocab_file=official_vocab()),
          **ev.bleu(targets, predictions)}


def keyword_metrics(targets, predictions) -> dict:
  """Keywords: Bpref (official) and exact-match F1 (with its precision and recall)."""
  from crosstask import metrics as ev  # pylint: disable=g-import-not-at-top
  return {**ev.bpref(targets, predictions), **ev.keyword_f1(targets, predictions)}


def label_metrics(targets, predictions) -> dict:
  """Categories and disciplines: official accuracy (nearest gold label first) and macro-F1."""
  from crosstask import metrics as ev  # pylint: disable=g-import-not-at-top
  return ev.classification_csl(targets, predictions)


def _label_resampling(targets, predictions):
  from crosstask.metrics import csl_official  # pylint: disable=g-import-not-at-top
  return csl_official.classification_csl_resampling(targets, predictions)


# A bootstrap draw keeps the whole set's mapping to labels (`rescoring.replicates`).
label_metrics.resampling = _label_resampling


SCHEMA = Schema("csl", (
    Field("title", {"zh": "标题", "en": "Title"}, metric_fn=text_metrics),
    Field("abstract", {"zh": "摘要", "en": "Abstract"}, metric_fn=text_metrics),
    # Empty keywords stay: the official Bpref counts each as a non-relevant prediction.
    Field("keywords", {"zh": "关键词", "en": "Keywords"}, separator=KEYWORD_SEP, kind="list",
          metric_fn=keyword_metrics, keep_empty_items=True),
    Field("category", {"zh": "门类", "en": "Category"}, label_set=CATEGORIES, kind="label",
          metric_fn=label_metrics),
    Field("discipline", {"zh": "学科", "en": "Discipline"}, label_set=DISCIPLINES, kind="label",
          metric_fn=label_metrics),
))
FIELDS = SCHEMA.names
LANGS = ("zh", "en")


def split_keywords(text: str) -> list[str]:
  """`a_b_c` -> ['a', 'b', 'c'] without empty items."""
  return [k.strip() for k in text.split(KEYWORD_SEP) if k.strip()]
