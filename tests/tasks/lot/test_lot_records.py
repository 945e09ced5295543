"""One LOT record at a time: placeholders, label types, outline checks."""

import json

import pytest

from crosstask.tasks.lot import records


def _readme(root, task):
  with open(root / "lot" / "readme_examples" / f"{task}.jsonl", encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def test_official_readme_examples_normalise(official_data):
  clozet = records.clozet(_readme(official_data, "clozet")[0])
  assert clozet["label"] == "1" and clozet["story"].count("<mask>") == 1
  senpos = records.senpos(_readme(official_data, "senpos")[0])
  # The README example: 8 [MASK] markers, label 8 (1-based, the last position).
  assert senpos["num_positions"] == 8 and senpos["label"] == 8
  assert "[8]" in senpos["story"] and "[MASK]" not in senpos["story"]
  plotcom = records.plotcom(_readme(official_data, "plotcom")[0])
  assert "<mask>" in plotcom["story"] and "<MASK>" not in plotcom["story"]
  outgen = records.outgen(_readme(official_data, "outgen")[0])
  assert outgen["title"] == "运神像的驴子" and len(outgen["outline"]) == 8
  assert outgen["outline"][0] == "对着神像顶礼膜拜"  # given (shuffled) order kept


@pytest.mark.parametrize("placeholder", ["<mask>", "<MASK>", "[MASK]", "[mask]"])
def test_every_placeholder_variant_becomes_mask(placeholder):
  rec = {"story": f"甲。{placeholder}乙。", "plot": "丙。"}
  assert records.plotcom(rec)["story"] == "甲。<mask>乙。"


def test_senpos_positions_are_numbered_from_one():
  rec = {"story": "甲。<MASK>乙。[MASK]丙。", "sentence": "丁。", "label": 2}
  assert records.senpos(rec) == {"story": "甲。[1]乙。[2]丙。", "sentence": "丁。",
                                 "label": 2, "num_positions": 2}
  assert records.senpos({**rec, "label": "1"})["label"] == 1  # digit strings become ints


def test_clozet_label_is_the_string_index():
  rec = {"story": "甲<mask>乙", "plot0": "丙", "plot1": "丁", "label": 0}
  assert records.clozet(rec)["label"] == "0"


@pytest.mark.parametrize("fn,record,field,problem", [
    (records.clozet, {"story": "甲<mask>乙<mask>", "plot0": "a", "plot1": "b", "label": "0"},
     "story", "found 2"),
    (records.clozet, {"story": "甲乙", "plot0": "a", "plot1": "b", "label": "0"}, "story", "found 0"),
    (records.clozet, {"story": "甲<mask>", "plot0": "a", "plot1": "b", "label": "2"}, "label", "'2'"),
    (records.clozet, {"story": "甲<mask>", "plot0": "a", "plot1": "b", "label": True}, "label", "True"),
    (records.clozet, {"story": "甲<mask>", "plot0": "a", "plot1": "a", "label": "0"}, "plot1",
     "identical"),
    (records.clozet, {"story": "甲<mask>", "plot0": "a", "label": "0"}, "plot1", "missing"),
    (records.senpos, {"story": "甲[MASK]乙[MASK]丙", "sentence": "丁", "label": 0}, "label",
     "from 1 to 2"),
    (records.senpos, {"story": "甲[MASK]乙[MASK]丙", "sentence": "丁", "label": 3}, "label",
     "from 1 to 2"),
    (records.senpos, {"story": "甲[MASK]乙", "sentence": "丁", "label": 1}, "story", "at least 2"),
    (records.plotcom, {"story": "甲<MASK>", "plot": "  "}, "plot", "empty"),
    (records.outgen, {"title": "t", "outline": [], "story": "s"}, "outline", "non-empty list"),
    (records.outgen, {"title": "t", "outline": "a#b", "story": "s"}, "outline", "list"),
    (records.outgen, {"title": "t", "outline": ["a#b"], "story": "s"}, "outline", "'#'"),
    (records.outgen, {"title": "t", "outline": ["a", 3], "story": "s"}, "outline", "phrase 1"),
    (records.outgen, {"outline": ["a"], "story": "s"}, "title", "missing"),
    (records.nlpcc, {"outline": ["a"], "story": 5}, "story", "expected a string"),
])
def test_bad_records_name_field_and_problem(fn, record, field, problem):
  with pytest.raises(records.RecordError, match=problem) as info:
    fn(record)
  assert info.value.field == field


def test_nlpcc_records_need_no_title():
  assert records.nlpcc({"outline": ["小猫"], "story": "小猫钓鱼。"}) == {
      "outline": ["小猫"], "story": "小猫钓鱼。"}
