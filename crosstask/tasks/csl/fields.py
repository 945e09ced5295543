"""CSL record fields, label sets and the text layout of multi-field prompts.

Layout (why: a generated target must parse back into fields, with whatever
vocabulary, so the layout uses no newlines, which SentencePiece normalises
away):

* A single field is written as its bare value, as in the official benchmark
  (`text_b`); keywords are joined with `_`.
* Several fields are written in canonical order as `<label>：<value>` joined by
  `；` (zh) or as `<Label>: <value>` joined by `; ` (en), e.g.
  `标题：基于…的研究；关键词：a_b_c` / `Title: …; Keywords: a_b_c`.
* A field is found by its marker: separator + label + colon (for the first
  field, the label + colon at the start). `sanitize` rewrites the colon of any
  marker that happens to occur inside a value (zh: to U+2236 `∶`, which NFKC
  keeps; en: `: ` to ` :`), so markers never collide with content, also after
  SentencePiece decoding.

`parse_fields` is lenient: missing or garbled markers give empty fields, never
an exception, because model predictions are untrusted; it also accepts the
NFKC form (`标题:…;关键词:…`) that SentencePiece decoding produces.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence

# Canonical order; also the order used in task names and layouts.
FIELDS = ("title", "abstract", "keywords", "category", "discipline")
LABELS = {
    "zh": {"title": "标题", "abstract": "摘要", "keywords": "关键词",
           "category": "门类", "discipline": "学科"},
    "en": {"title": "Title", "abstract": "Abstract", "keywords": "Keywords",
           "category": "Category", "discipline": "Discipline"},
}
COLON = {"zh": "：", "en": ": "}
SEP = {"zh": "；", "en": "; "}
ARROW = {"zh": "->", "en": " -> "}
PLUS = {"zh": "+", "en": " + "}
LANGS = ("zh", "en")
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


def check_fields(fields: Sequence[str], what: str = "fields") -> tuple[str, ...]:
  """`fields` as a canonical-order tuple; a clear error for unknown names."""
  unknown = [f for f in fields if f not in FIELDS]
  if unknown or not fields:
    raise ValueError(f"{what} must be a non-empty subset of {FIELDS}, got {tuple(fields)}")
  return tuple(f for f in FIELDS if f in fields)


def marker(field: str, lang: str, first: bool) -> str:
  """The string that opens `field` in a multi-field layout."""
  head = "" if first else SEP[lang]
  return f"{head}{LABELS[lang][field]}{COLON[lang]}"


# What a marker's colon becomes inside a value. For zh it is U+2236 (RATIO): it
# looks like a colon and, unlike `：` and `:`, survives the NFKC normalisation
# that SentencePiece decoding applies, so a defused marker stays defused there.
_DEFUSED_COLON = {"zh": "\u2236", "en": " :"}


def sanitize(value: str) -> str:
  """`value` on one line, with any field marker inside it defused (both languages).

  Both the exact marker (`；关键词：`) and its NFKC form (`;关键词:`) are defused,
  since `parse_fields` matches either.
  """
  value = " ".join(value.split())
  for lang in LANGS:
    colons = (COLON[lang], unicodedata.normalize("NFKC", COLON[lang]))
    for f in FIELDS:
      m = marker(f, lang, first=False)
      for form, colon in zip((m, unicodedata.normalize("NFKC", m)), colons):
        value = value.replace(form, form[:-len(colon)] + _DEFUSED_COLON[lang])
  return value


def value_text(field: str, value) -> str:
  """One field's value as text (keywords joined with `_`)."""
  if field == "keywords" and not isinstance(value, str):
    return KEYWORD_SEP.join(sanitize(k) for k in value)
  return sanitize(str(value))


def _labelled(record: Mapping, fields: Sequence[str], lang: str) -> str:
  """Every field of `record` behind its marker, in the order given."""
  return "".join(marker(f, lang, i == 0) + value_text(f, record[f])
                 for i, f in enumerate(fields))


def format_fields(record: Mapping, fields: Sequence[str], lang: str) -> str:
  """The layout of `fields` of `record` (see the module docstring)."""
  fields = check_fields(fields)
  if len(fields) == 1:
    return value_text(fields[0], record[fields[0]])
  return _labelled(record, fields, lang)


def prompt(inputs: Sequence[str], outputs: Sequence[str], lang: str) -> str:
  """The arrow prompt, e.g. `摘要+学科->关键词` or `Abstract -> Title`."""
  names = LABELS[lang]
  left = PLUS[lang].join(names[f] for f in check_fields(inputs, "inputs"))
  right = PLUS[lang].join(names[f] for f in check_fields(outputs, "outputs"))
  return f"{left}{ARROW[lang]}{right}"


def format_inputs(record: Mapping, inputs: Sequence[str], outputs: Sequence[str],
                  lang: str) -> str:
  """Model input: the arrow prompt, a space, then every input field labelled."""
  inputs = check_fields(inputs, "inputs")
  return f"{prompt(inputs, outputs, lang)} {_labelled(record, inputs, lang)}"


def split_keywords(text: str) -> list[str]:
  """`a_b_c` -> ['a', 'b', 'c'] without empty items."""
  return [k.strip() for k in text.split(KEYWORD_SEP) if k.strip()]


def _typed(field: str, text: str):
  text = text.strip()
  return split_keywords(text) if field == "keywords" else text


def _find_markers(text: str, fields, lang: str, nfkc: bool) -> list[tuple[int, str, int]]:
  """(position, field, marker length) of each field marker found, sorted."""
  norm = (lambda m: unicodedata.normalize("NFKC", m)) if nfkc else (lambda m: m)
  lead = len(text) - len(text.lstrip())
  starts = {}
  for f in fields:
    m = norm(marker(f, lang, first=True))
    if text.startswith(m, lead):  # any field may come first in a garbled prediction
      starts[f] = (lead, len(m))
      continue
    m = norm(marker(f, lang, first=False))
    pos = text.find(m)
    if pos >= 0:
      starts[f] = (pos, len(m))
  return sorted((pos, f, n) for f, (pos, n) in starts.items())


def parse_fields(text: str, fields: Sequence[str], lang: str) -> dict:
  """Parses a layout back into {field: value}; lenient, never raises on text.

  Text decoded by a SentencePiece vocabulary comes back NFKC-normalised
  (`标题:…;关键词:…`), so when the exact markers are not all found the text is
  matched again in NFKC form.
  """
  fields = check_fields(fields)
  text = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
  if len(fields) == 1:
    f = fields[0]
    body = text.strip()
    label = LABELS[lang][f] + COLON[lang]
    for label in (label, unicodedata.normalize("NFKC", label)):
      if body.startswith(label):
        body = body[len(label):]
        break
    return {f: _typed(f, body)}
  found = _find_markers(text, fields, lang, nfkc=False)
  if len(found) < len(fields):
    normalized = unicodedata.normalize("NFKC", text)
    found_nfkc = _find_markers(normalized, fields, lang, nfkc=True)
    if len(found_nfkc) > len(found):
      text, found = normalized, found_nfkc
  out = {f: ([] if f == "keywords" else "") for f in fields}
  for j, (pos, f, n) in enumerate(found):
    end = found[j + 1][0] if j + 1 < len(found) else len(text)
    out[f] = _typed(f, text[pos + n:end])
  return out
