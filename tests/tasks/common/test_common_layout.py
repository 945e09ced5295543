"""Schema and the one layout: prompts, labelled fields, lists, lenient parsing."""

import pytest

from crosstask.tasks.common import layout
from crosstask.tasks.common import testing
from crosstask.tasks.common.schema import Field
from crosstask.tasks.common.schema import Schema

SCHEMA = Schema("toy", (
    Field("question", {"zh": "问题", "en": "Question"}),
    Field("answers", {"zh": "答案", "en": "Answers"}, separator="|", kind="list"),
    Field("label", {"en": "Label"}, label_set=("yes", "no"), kind="label"),
))
RECORD = {"question": "为什么；答案：天是蓝的?\n第二行", "answers": ["散射", "Answers: 光"], "label": "yes"}


def test_schema_checks():
  assert SCHEMA.names == ("question", "answers", "label") and SCHEMA.langs == ("en",)
  assert SCHEMA.check(["label", "question"]) == ("question", "label")
  with pytest.raises(ValueError, match="non-empty subset"):
    SCHEMA.check(["nope"])
  with pytest.raises(KeyError, match="no field 'x'"):
    SCHEMA["x"]  # pylint: disable=pointless-statement
  with pytest.raises(ValueError, match="needs a separator"):
    Field("a", {"en": "A"}, kind="list")
  with pytest.raises(ValueError, match="keep_empty_items is for 'list' fields"):
    Field("a", {"en": "A"}, keep_empty_items=True)
  # Empty items: dropped, or kept where the field's metric counts them; none from "".
  kept = Field("k", {"en": "K"}, separator="_", kind="list", keep_empty_items=True)
  assert layout.typed_value(kept, " a__b_ ") == ["a", "", "b", ""]
  assert layout.typed_value(kept, "  ") == []
  assert layout.typed_value(SCHEMA["answers"], " a||b| ") == ["a", "b"]
  with pytest.raises(ValueError, match="distinct"):
    Schema("dup", (SCHEMA["label"], SCHEMA["label"]))


def test_prompt_inputs_and_targets():
  assert layout.prompt(SCHEMA, ["question"], ["answers"], "zh") == "问题->答案"
  assert layout.prompt(SCHEMA, ["question", "answers"], ["label"], "en") == (
      "Question + Answers -> Label")
  ex = layout.example(SCHEMA, RECORD, ["question"], ["answers"], "zh")
  # one line, the marker inside the value defused (U+2236), the single input still labelled
  assert ex == {"inputs": "问题->答案 问题：为什么；答案\u2236天是蓝的? 第二行",
                "targets": "散射|Answers: 光"}
  both = layout.format_fields(SCHEMA, RECORD, ["question", "answers"], "en")
  assert both.startswith("Question: 为什么") and "; Answers: 散射|Answers: 光" in both
  with pytest.raises(ValueError, match="no label in language 'zh'"):
    layout.prompt(SCHEMA, ["question"], ["label"], "zh")


def test_round_trip_and_garbage():
  testing.assert_layout_round_trip(SCHEMA, [RECORD], [["question", "answers"], ["answers"]])
  testing.assert_layout_round_trip(SCHEMA, [RECORD], [["question", "answers", "label"]], ["en"])
  for text in testing.DEFAULT_GARBAGE + (None, 3):
    parsed = layout.parse_fields(SCHEMA, text, ["question", "answers"], "zh")
    assert set(parsed) == {"question", "answers"} and isinstance(parsed["answers"], list)
  assert layout.parse_fields(SCHEMA, "答案：a|b；问题：q", ["question", "answers"], "zh") == {
      "question": "q", "answers": ["a", "b"]}
  assert layout.parse_fields(SCHEMA, "答案:a|b", ["answers"], "zh") == {"answers": ["a", "b"]}


def test_round_trip_kit_catches_a_broken_layout(monkeypatch):
  monkeypatch.setattr(layout, "typed_value", lambda field, text: text.strip()[:-1])
  with pytest.raises(AssertionError, match="parsed to"):
    testing.assert_layout_round_trip(SCHEMA, [RECORD], [["question", "answers"]], ["zh"])
