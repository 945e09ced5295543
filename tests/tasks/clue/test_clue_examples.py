"""Prompt field values of CLUE records (WSC marking, ChID windows, options) and answers back."""

from crosstask import paths
from crosstask.tasks.clue import examples as E
from crosstask.tasks.clue import readers as RD


def test_wsc_marks_noun_and_pronoun_at_their_offsets():
  record = {"text": "张三把书借给了李四，因为他已经读完了。", "span1_index": 0, "span1_text": "张三",
            "span2_index": 12, "span2_text": "他"}
  assert E.mark_wsc(record) == "_张三_把书借给了李四，因为[他]已经读完了。"
  # The pronoun before the noun: insertion right to left keeps both offsets valid.
  record = {"text": "它说小猫跑了", "span1_index": 2, "span1_text": "小猫", "span2_index": 0,
            "span2_text": "它"}
  assert E.mark_wsc(record) == "[它]说_小猫_跑了"


def test_wsc_marks_every_real_fewclue_record(official_data):
  for split in ("train_few_all", "dev_few_all"):
    for r in RD.read_all("fewclue", "cluewsc", split, root=official_data):
      marked = E.mark_wsc(r)
      assert f"_{r['span1_text']}_" in marked and f"[{r['span2_text']}]" in marked
      assert marked.replace("_", "").replace("[", "").replace("]", "") == r["text"]


def test_chid_one_window_per_blank():
  record = {"content": "甲" * 300 + "#idiom000001#乙#idiom000002#" + "丙" * 300,
            "tag": "#idiom000002#"}
  passage = E.chid_passage(record, window=5)
  assert passage == "甲【略】乙" + "【空】" + "丙" * 5
  few = {"content": "他做事总是#idiom#，从不坚持。", "tag": "#idiom#"}
  assert E.chid_passage(few) == "他做事总是【空】，从不坚持。"


def test_options_targets_and_answers_back():
  c3 = RD.read_all("clue", "c3", "validation", root=paths.SAMPLE_DIR)
  assert E.options("c3", c3[0]) == ["上午八点", "上午九点", "下午两点"]
  assert E.target_text("c3", c3[0]) == "上午九点" and E.gold_index("c3", c3[0]) == 1
  assert E.c3_document(c3[0]) == "男：明天的会几点开始？ 女：上午九点，别迟到。"
  tnews = RD.read_all("fewclue", "tnews", "train_0", root=paths.SAMPLE_DIR)
  assert E.target_text("tnews", tnews[0]) == "体育" and len(E.options("tnews", tnews[0])) == 15
  # NFKC-decoded text still finds its option; anything else is -1.
  assert E.option_index(" 语言(非英语) ", E.options("iflytek", {})) == 61
  assert E.option_index("北京(今北京市)", ["上海", "北京（今北京市）"]) == 1
  assert E.option_index("不存在", ["甲", "乙"]) == -1
  cmrc = {"context": "长江注入东海。", "answers": ["东海。", "东海"]}
  assert E.cmrc_target(cmrc) == "东海。"
  assert E.cmrc_target({"context": "长江", "answers": ["39764.0", "x"]}) == "39764.0"


def test_rank_expansion_keeps_only_gold_for_training():
  records = [{"label": "Negative"}, {"label": None}]
  evaluation = E.expand_options("eprstmt", records, train=False)
  assert [(x["_example"], x["_option"], x["_text"], x["_correct"]) for x in evaluation] == [
      (0, 0, "正面", False), (0, 1, "负面", True), (1, 0, "正面", False), (1, 1, "负面", False)]
  train = E.expand_options("eprstmt", records[:1], train=True)
  assert [(x["_text"], x["_correct"]) for x in train] == [("负面", True)]


def test_chid_joint_assignment_gives_distinct_answers():
  # Both blanks prefer candidate 0; the stronger claim wins and the other takes its next best.
  assert E.joint_assignment([[-1.0, -5.0, -2.0], [-0.5, -4.0, -3.0]]) == [2, 0]
  assert E.joint_assignment([[-1.0, -2.0]]) == [0]
  # A NaN score sorts where the official list sort leaves it (compared false with
  # everything): there blank 0 takes candidate 1 and blank 1 the NaN candidate 0.
  assert E.joint_assignment([[0.0, 0.0], [float("nan"), 1.0]]) == [1, 0]
