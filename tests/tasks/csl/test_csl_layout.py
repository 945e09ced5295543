"""CSL field layouts on the shared layout: prompts, and parse round trip for every output set."""

import itertools
import unicodedata

import pytest

from crosstask.tasks.common import layout
from crosstask.tasks.common import testing
from crosstask.tasks.csl.schema import FIELDS
from crosstask.tasks.csl.schema import SCHEMA

RECORD = {
    "title": "基于；改进算法的研究: 以“标题：”为例；关键词：乙",
    "abstract": "提出一种新方法；结果表明, 效果较好; Keywords: 不是字段;学科:数学。",
    "keywords": ["深度学习", "关键词：示例", "Title: x"],
    "category": "工学",
    "discipline": "计算机科学与技术",
}
OUTPUT_SETS = [c for n in range(1, 6) for c in itertools.combinations(FIELDS, n)]


def _format(record, fields, lang):
  return layout.format_fields(SCHEMA, record, fields, lang)


def _parse(text, fields, lang):
  return layout.parse_fields(SCHEMA, text, fields, lang)


def test_prompts():
  assert layout.prompt(SCHEMA, ["abstract"], ["title"], "zh") == "摘要->标题"
  assert layout.prompt(SCHEMA, ["discipline", "abstract"], ["keywords"], "zh") == "摘要+学科->关键词"
  assert layout.prompt(SCHEMA, ["abstract"], ["category", "title"], "zh") == "摘要->标题+门类"
  assert layout.prompt(SCHEMA, ["abstract"], ["title"], "en") == "Abstract -> Title"
  with pytest.raises(ValueError, match="inputs"):
    layout.prompt(SCHEMA, ["summary"], ["title"], "zh")


def test_round_trip_with_the_shared_kit():
  testing.assert_layout_round_trip(SCHEMA, [RECORD], OUTPUT_SETS)


@pytest.mark.parametrize("lang", layout.LANGS)
@pytest.mark.parametrize("outputs", OUTPUT_SETS, ids="+".join)
def test_parse_round_trip(outputs, lang):
  parsed = _parse(_format(RECORD, outputs, lang), outputs, lang)
  assert parsed["keywords" if "keywords" in outputs else outputs[0]]
  if "keywords" in outputs:
    assert parsed["keywords"] == ["深度学习", "关键词：示例", "Title: x"]
  for f in set(outputs) & {"category", "discipline"}:
    assert parsed[f] == RECORD[f]


@pytest.mark.parametrize("lang", layout.LANGS)
@pytest.mark.parametrize("outputs", OUTPUT_SETS, ids="+".join)
def test_parse_round_trip_after_nfkc(outputs, lang):
  """SentencePiece decoding applies NFKC; markers inside values must stay defused."""
  parsed = _parse(unicodedata.normalize("NFKC", _format(RECORD, outputs, lang)), outputs, lang)
  if "keywords" in outputs:
    assert len(parsed["keywords"]) == 3


def test_multi_field_layout_is_labelled():
  text = _format(RECORD, ["title", "keywords"], "zh")
  assert text.startswith("标题：") and "；关键词：深度学习_" in text
  assert _format(RECORD, ["keywords"], "zh").startswith("深度学习_")
  inputs = layout.format_inputs(SCHEMA, RECORD, ["abstract"], ["title"], "zh")
  assert inputs.startswith("摘要->标题 摘要：提出一种新方法")


@pytest.mark.parametrize("text", ["", "随便写的", "关键词：a_b；标题：", "；学科：；门类：", b"\xff\xfe"])
def test_malformed_predictions_parse_leniently(text):
  parsed = _parse(text, ["title", "keywords", "discipline"], "zh")
  assert set(parsed) == {"title", "keywords", "discipline"}
  assert isinstance(parsed["keywords"], list)


def test_out_of_order_fields_still_parse():
  parsed = _parse("学科：数学；标题：某研究", ["title", "discipline"], "zh")
  assert parsed == {"title": "某研究", "discipline": "数学"}


@pytest.mark.parametrize("lang", layout.LANGS)
def test_parse_survives_sentencepiece_decoding(official_data, lang):
  import seqio  # pylint: disable=g-import-not-at-top
  vocab = seqio.SentencePieceVocabulary(str(official_data / "vocab" / "sentencepiece_cn.model"))
  record = {"title": "基于图神经网络的谣言检测", "abstract": "提出一种方法；效果较好。",
            "keywords": ["谣言检测", "图神经网络"], "category": "工学", "discipline": "计算机科学与技术"}
  for outputs in OUTPUT_SETS:
    decoded = vocab.decode(vocab.encode(_format(record, outputs, lang)))
    parsed = _parse(decoded, outputs, lang)
    assert parsed.get("keywords", ["谣言检测", "图神经网络"]) == ["谣言检测", "图神经网络"], decoded
    for f in ("title", "category", "discipline"):
      if f in outputs:
        assert parsed[f] == record[f], decoded
