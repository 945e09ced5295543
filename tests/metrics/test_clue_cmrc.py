"""CMRC 2018 EM/F1: the official script's rules, and its numbers on the real dev file."""

import json
import re

import pytest

from crosstask.metrics import cmrc
from crosstask.metrics import sentences


def test_segmentation_follows_the_official_rules():
  # SP_CHAR characters vanish without splitting the Latin run around them.
  assert cmrc.mixed_segmentation("ω-Force战队") == ["ωforce", "战", "队"]
  # `……` is a two-character list entry, so a lone `…` survives; ASCII `.` is tokenized.
  assert cmrc.mixed_segmentation("等等…") == ["等", "等", "…"]
  assert cmrc.mixed_segmentation("1998年。") == ["1998", "年"]
  assert cmrc.mixed_segmentation("Henry A. Walsh") == ["henry", "a.", "walsh"]
  assert cmrc.mixed_segmentation("“北京”，", rm_punc=False) == ["“", "北", "京", "”", "，"]
  assert cmrc.remove_punctuation(" 《红楼梦》（清） ") == "红楼梦清"
  assert cmrc.remove_punctuation("A (b).") == "a (b)."


def _official_mixed_segmentation(in_str, rm_punc=True):
  """cmrc2018_evaluate.py's mixed_segmentation, transcribed: `nltk.word_tokenize` on each
  non-CJK run, Punkt sentences and all."""
  import nltk  # pylint: disable=g-import-not-at-top
  in_str = str(in_str).lower().strip()
  segs_out, temp_str = [], ""
  for char in in_str:
    if rm_punc and char in cmrc.SP_CHAR:
      continue
    if re.search(r"[\u4e00-\u9fa5]", char) or char in cmrc.SP_CHAR:
      if temp_str != "":
        segs_out.extend(nltk.word_tokenize(temp_str))
        temp_str = ""
      segs_out.append(char)
    else:
      temp_str += char
  if temp_str != "":
    segs_out.extend(nltk.word_tokenize(temp_str))
  return segs_out


TEXTS = ["他在army. the前线", "U.S. Army第3.5 km. then", "Dr. Smith与Henry A. Walsh", "a.m. vs p.m. x",
         "北京。the end.", "ω-Force战队"]


def test_segmentation_splits_sentences_as_the_official_call_where_punkt_is_installed(punkt_model):
  del punkt_model
  assert sentences.punkt_installed()
  for text in TEXTS:
    assert cmrc.mixed_segmentation(text) == _official_mixed_segmentation(text), text
  assert cmrc.mixed_segmentation("在army. the") == ["在", "army", ".", "the"]
  assert cmrc.mixed_segmentation("在army. the", sentences=False) == ["在", "army.", "the"]
  # F1 follows: the reference's "army." against a prediction's "army" "." tokens.
  assert cmrc.f1_score(["army. the"], "army") == pytest.approx(2 * 1 * (1 / 3) / (4 / 3))
  assert cmrc.cmrc2018([["army. the"]], ["army"])["f1"] == pytest.approx(50.0)


def test_segmentation_without_punkt_keeps_each_run_one_line(no_punkt):
  del no_punkt
  assert not sentences.punkt_installed()
  assert cmrc.mixed_segmentation("在army. the") == ["在", "army.", "the"]
  assert cmrc.f1_score(["army. the"], "army") == 0.0


def test_em_and_f1_by_hand():
  assert cmrc.em_score(["北京", "北京市"], "北京市。") == 1.0
  assert cmrc.em_score(["北京"], "北京.") == 0.0  # ASCII '.' is not in SP_CHAR
  # ref 北/京/市 vs pred 在/北/京: common run 2 -> P = R = 2/3.
  assert cmrc.f1_score(["北京市"], "在北京") == pytest.approx(2 / 3)
  # Max over references; the common run must be contiguous (not an LCS subsequence).
  assert cmrc.f1_score(["甲乙丙丁", "乙丙"], "乙丙") == 1.0
  assert cmrc.f1_score(["甲乙丙丁"], "甲丙") == pytest.approx(2 * 0.5 * 0.25 / 0.75)
  assert cmrc.f1_score(["北京"], "") == 0.0
  scores = cmrc.cmrc2018([["北京", "北京市"], "上海"], ["北京市", "广州"])
  assert scores["em"] == 50.0 and scores["f1"] == 50.0 and scores["average"] == 50.0


def test_metric_rejects_bad_arguments():
  with pytest.raises(ValueError, match="pair up"):
    cmrc.cmrc2018([["a"]], [])
  with pytest.raises(ValueError, match=r"targets\[0\] has no reference"):
    cmrc.cmrc2018([[]], ["a"])
  with pytest.raises(TypeError, match=r"predictions\[0\]"):
    cmrc.cmrc2018([["a"]], [None])


def test_span_in_context_restores_the_passage_characters():
  context = "他出生于北京（今北京市），1998年毕业。Henry  A. Walsh 在场"
  assert cmrc.span_in_context("北京(今北京市),", context) == "北京（今北京市），"
  assert cmrc.span_in_context(" 1998年 ", context) == "1998年"
  assert cmrc.span_in_context("Henry A. Walsh", context) == "Henry  A. Walsh"
  assert cmrc.span_in_context("上海", context) == "上海"  # not in the passage: kept as is
  assert cmrc.span_in_context("", context) == ""


def _dev(root):
  gold = json.loads((root / "clue" / "cmrc2018" / "cmrc2018_dev.json").read_text("utf-8"))
  qas = [(qa, p["context"]) for a in gold["data"] for p in a["paragraphs"] for qa in p["qas"]]
  return gold, qas


# Numbers of the official functions (with the same offline tokenizer) on the dev file.
@pytest.mark.parametrize("variant,em,f1", [
    ("gold", 100.0, 100.0),
    ("zh_period", 100.0, 100.0),
    ("ascii_dot", 0.0, 90.27),
    ("spaced", 0.22, 87.26),
])
def test_official_anchors_on_dev(official_data, variant, em, f1):
  gold, qas = _dev(official_data)
  make = {"gold": lambda r: r, "zh_period": lambda r: r + "。", "ascii_dot": lambda r: r + ".",
          "spaced": " ".join}[variant]
  scores = cmrc.evaluate(gold, {qa["id"]: make(qa["answers"][0]["text"]) for qa, _ in qas})
  assert (scores["TOTAL"], scores["SKIP"]) == (3219, 0)
  assert round(scores["EM"], 2) == em and round(scores["F1"], 2) == f1


def test_sentencepiece_round_trip_needs_the_passage_mapping(official_data):
  spm = pytest.importorskip("sentencepiece")
  sp = spm.SentencePieceProcessor(
      model_file=str(official_data / "vocab" / "sentencepiece_cn.model"))
  gold, qas = _dev(official_data)
  decoded = {qa["id"]: (sp.decode(sp.encode(qa["answers"][0]["text"])), context)
             for qa, context in qas}
  raw = cmrc.evaluate(gold, {k: d for k, (d, _) in decoded.items()})
  assert round(raw["EM"], 2) == 87.48 and round(raw["F1"], 2) == 94.18
  mapped = cmrc.evaluate(gold, {k: cmrc.span_in_context(d, c) for k, (d, c) in decoded.items()})
  assert mapped["EM"] >= 99.9 and round(mapped["EM"], 2) == 99.97
  assert round(mapped["F1"], 2) == 99.99
  # Unanswered questions count in TOTAL and SKIP and score 0.
  partial = cmrc.evaluate(gold, {qas[0][0]["id"]: qas[0][0]["answers"][0]["text"]})
  assert partial["SKIP"] == 3218 and partial["EM"] == pytest.approx(100 / 3219)
