"""CSL's fields: names, Chinese and English labels, label sets, and how each is scored.

A record is `{"title", "abstract", "keywords": [..], "category", "discipline"}`;
keywords are written joined by `_`, as in the benchmark files.
"""

from __future__ import annotations

from crosstask.tasks.common.schema import Field
from crosstask.tasks.common.schema import Schema

KEYWORD_SEP = "_"
TEXT_FIELDS = ("title", "abstract")
LABEL_FIELDS = ("category", "discipline")

# The 13 CSL categories (门类) and 67 disciplines (学科), as spelled in the benchmark data.
CATEGORIES = ("工学", "理学", "农学", "医学", "管理学", "法学", "教育学", "经济学",
              "文学", "艺术学", "历史学", "军事学", "哲学")
DISCIPLINES = (
    "计算机科学与技术", "信息与通信工程", "电子科学与技术", "控制科学与工程", "电气工程", "机械工程", "光学工程", "材料科学与工程", "冶金工程",
    "动力工程及工程热物理", "土木工程", "水利工程", "测绘科学与技术", "化学/化学工程与技术", "地质学/地质资源与地质工程", "矿业工程", "石油与天然气工程",
    "纺织科学与工程", "交通运输工程", "船舶与海洋工程", "航空宇航科学与技术", "兵器科学与技术", "核科学与技术", "农业工程", "环境科学与工程",
    "食品科学与工程", "建筑学", "力学", "数学", "物理学", "天文学", "地理学", "大气科学", "海洋科学", "地球物理学", "生物学/生物科学与工程",
    "作物学", "园艺学", "农业资源利用", "植物保护", "畜牧学/兽医学", "林学/林业工程", "水产", "基础医学/临床医学", "口腔医学",
    "公共卫生与预防医学", "中医学/中药学", "药学", "工商管理", "公共管理", "农林经济管理", "图书馆、情报与档案管理", "法学", "政治学", "社会学",
    "民族学", "教育学", "心理学", "体育学", "理论经济学", "应用经济学", "中国语言文学", "新闻传播学", "艺术学", "历史学", "军事学", "哲学")


# The paper's metric pairs (Table 9), in the flavour of CSL's own scorer
# (`crosstask.metrics.csl_official`, equal to run_text2text_csl.py).
def text_metrics(targets, predictions) -> dict:
  """Titles and abstracts: ROUGE-L (official `rouge`-package flavour) and BLEU-4."""
  from crosstask import metrics as ev  # pylint: disable=g-import-not-at-top
  return {**ev.rouge_l_csl(targets, predictions), **ev.bleu(targets, predictions)}


def keyword_metrics(targets, predictions) -> dict:
  """Keywords: Bpref (official) and exact-match F1 (with its precision and recall)."""
  from crosstask import metrics as ev  # pylint: disable=g-import-not-at-top
  return {**ev.bpref(targets, predictions), **ev.keyword_f1(targets, predictions)}


def label_metrics(targets, predictions) -> dict:
  """Categories and disciplines: official accuracy (nearest gold label first) and macro-F1."""
  from crosstask import metrics as ev  # pylint: disable=g-import-not-at-top
  return ev.classification_csl(targets, predictions)


SCHEMA = Schema("csl", (
    Field("title", {"zh": "标题", "en": "Title"}, metric_fn=text_metrics),
    Field("abstract", {"zh": "摘要", "en": "Abstract"}, metric_fn=text_metrics),
    Field("keywords", {"zh": "关键词", "en": "Keywords"}, separator=KEYWORD_SEP, kind="list",
          metric_fn=keyword_metrics),
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
