"""CLUE/FewCLUE SeqIO tasks: prompts, targets, postprocessing, metrics, rank twins, mixtures."""

import json

import numpy as np
import pytest
import seqio

import crosstask.tasks.clue  # noqa: F401  Registers the tasks.
from crosstask import paths
from crosstask.metrics import cmrc
from crosstask.tasks.clue import labels as L
from crosstask.tasks.clue import leakage
from crosstask.tasks.clue import readers as RD
from crosstask.tasks.clue import tasks as T
from crosstask.tasks.common import testing

LENGTHS = {"inputs": 2048, "targets": 128}


@pytest.fixture
def sample_root():
  with paths.use_data_dir(paths.SAMPLE_DIR) as root:
    yield root


def _examples(name, split):
  ds = seqio.get_mixture_or_task(name).get_dataset(LENGTHS, split=split, shuffle=False)
  return list(ds.as_numpy_iterator())


def _text(ex, key):
  return ex[key].decode("utf-8")


@pytest.mark.parametrize("name,split,inputs,target", [
    ("clue_afqmc", "validation", "句子1+句子2->关系 句子1：为什么我的***不能用花呗；句子2：花呗为什么用不了", "相同"),
    ("clue_tnews", "validation", "新闻->类别 新闻：央行宣布下调存款准备金率", "财经"),
    ("clue_iflytek", "train", "应用描述->类别 应用描述：一款帮助你随时打车出行的软件，支持快车专车", "打车"),
    ("clue_ocnli", "validation", "前提+假设->关系 前提：今天下了一整天的雨；假设：今天天气晴朗", "矛盾"),
    ("clue_cluewsc2020", "train", "句子+代词+名词->指代 句子：_张三_把书借给了李四，因为[他]已经读完了。；代词：他；名词：张三", "是"),
    ("clue_csl", "train", "摘要+关键词->真伪 摘要：本文提出一种基于深度学习的图像分割方法，在公开数据集上取得了较好的效果。；关键词：深度学习_图像分割", "真"),
    ("clue_cmrc2018", "validation", "问题+文章->答案 问题：鲁迅的原名是什么？；文章：鲁迅，原名周树人，", "周树人"),
    ("clue_chid", "validation", "候选+文段->成语 候选：一帆风顺|画蛇添足|守株待兔|亡羊补牢|对牛弹琴|杯弓蛇影|半途而废|胸有成竹|一鸣惊人|井底之蛙；文段：他画竹子之前早已【空】，", "胸有成竹"),
    ("clue_c3", "validation", "问题+选项+对话->答案 问题：会议什么时候开始？；选项：上午八点|上午九点|下午两点；对话：男：明天的会几点开始？ 女：上午九点，别迟到。", "上午九点"),
    ("fewclue_eprstmt", "train_0", "评论->情感 评论：东西很好，物流也快，下次还来买。", "正面"),
    ("fewclue_csldcp", "test_public", "摘要->学科 摘要：探讨了中小学课堂教学评价体系的构建。", "教育学"),
    ("fewclue_chid_k0", "train", "候选+文段->成语 候选：一帆风顺|画蛇添足|守株待兔|亡羊补牢|对牛弹琴|杯弓蛇影|半途而废；文段：他做事总是【空】，从不坚持到底。", "半途而废"),
])
def test_prompts_and_targets(sample_root, name, split, inputs, target):
  ex = _examples(name, split)[0]
  assert _text(ex, "inputs_pretokenized").startswith(inputs)
  assert _text(ex, "targets_pretokenized") == target


def test_c3_mixed_genre_says_article(sample_root):
  ex = _examples("clue_c3", "validation")[1]
  assert _text(ex, "inputs_pretokenized").startswith("问题+选项+文章->答案 问题：文中说的是哪个季节？；选项：春天|夏天|秋天|冬天；文章：秋天到了")
  assert json.loads(_text(ex, "options")) == ["春天", "夏天", "秋天", "冬天"]
  assert _text(ex, "answer_index") == "2"


def test_chid_one_example_per_blank_with_the_others_masked(sample_root):
  blanks = _examples("clue_chid", "validation")
  assert [_text(b, "id") for b in blanks] == [f"#idiom57715{i}#" for i in (7, 8, 9)] + ["#idiom577160#"]
  second = _text(blanks[1], "inputs_pretokenized")
  assert "这只青蛙就像【空】，只看到头顶的一片天。可他的作品一经发表便【略】。" in second
  assert [_text(b, "targets_pretokenized") for b in blanks] == ["胸有成竹", "井底之蛙", "一鸣惊人", "亡羊补牢"]


def _score(name, split, predictions=None):
  """The task's metrics with targets (or `predictions`) run through its postprocessor."""
  task = seqio.get_mixture_or_task(name)
  exs = _examples(name, split)
  targets = [task.postprocess_fn(_text(e, "targets_pretokenized"), example=e, is_target=True)
             for e in exs]
  preds = [_text(e, "targets_pretokenized") for e in exs] if predictions is None else predictions
  preds = [task.postprocess_fn(p, example=e, is_target=False) for p, e in zip(preds, exs)]
  out = {}
  for fn in task.metric_fns:
    out.update(fn(targets, preds))
  return out


@pytest.mark.parametrize("name,split,metric,best", [
    ("clue_afqmc", "validation", "accuracy", 100.0), ("clue_iflytek", "validation", "macro_f1", 100.0),
    ("clue_cmnli", "validation", "accuracy", 100.0), ("clue_cmrc2018", "validation", "em", 100.0),
    ("clue_chid", "validation", "accuracy", 100.0), ("clue_c3", "train", "accuracy", 100.0),
    ("fewclue_cluewsc_kall", "validation", "accuracy", 100.0), ("fewclue_csldcp", "train_0", "accuracy", 100.0),
])
def test_targets_as_predictions_score_best(sample_root, name, split, metric, best):
  assert _score(name, split)[metric] == pytest.approx(best)


def test_generated_text_maps_back(sample_root):
  # NFKC output of a SentencePiece vocabulary still finds options and passage spans.
  assert _score("clue_c3", "train", ["上午九点", "秋天 ", "收割稻谷!"])["accuracy"] == pytest.approx(200 / 3)
  scores = _score("clue_cmrc2018", "validation", ["周树人", "1918年", "东海", "6300千米(公里)"])
  assert scores["em"] == 100.0
  assert _score("clue_tnews", "validation", ["财经", "科学"])["accuracy"] == 50.0


def test_rank_twins(sample_root):
  evaluation = _examples("fewclue_eprstmt_k0_rank", "validation")
  assert len(evaluation) == 2 * len(RD.read_all("fewclue", "eprstmt", "dev_0"))
  assert {_text(e, "targets_pretokenized") for e in evaluation} == {"正面", "负面"}
  train = _examples("fewclue_eprstmt_k0_rank", "train")
  assert [_text(e, "rank_correct") for e in train] == ["1"] * 4  # the gold option only
  generation = _examples("fewclue_eprstmt_k0", "train")
  assert [_text(e, "targets_pretokenized") for e in train] == [
      _text(e, "targets_pretokenized") for e in generation]
  task = seqio.get_mixture_or_task("fewclue_eprstmt_k0_rank")
  assert task.score_metric_fns and not task.predict_metric_fns
  targets = [task.postprocess_fn(None, example=e, is_target=True) for e in evaluation]
  gold_scores = [0.0 if t[2] else -1.0 for t in targets]
  assert task.score_metric_fns[0](targets, gold_scores) == {"accuracy": 100.0}
  assert task.score_metric_fns[0](targets, [-g for g in gold_scores])["accuracy"] == 0.0
  chid = _examples("clue_chid_rank", "validation")
  assert len(chid) == 4 * 10  # ten candidates per blank
  with pytest.raises(ValueError, match="no options to rank"):
    T.clue_task("clue", "cmrc2018", rank=True)


def test_mixtures():
  names = lambda m: sorted(t.name for t in seqio.get_mixture_or_task(m).tasks)
  assert names("clue_classification") == sorted(
      ["clue_afqmc", "clue_tnews", "clue_iflytek", "clue_ocnli", "clue_cluewsc2020", "clue_csl"])
  assert names("clue_mrc") == ["clue_c3", "clue_chid", "clue_cmrc2018"]
  assert len(names("clue_all")) == 9
  assert names("fewclue_k3_rank") == sorted(f"fewclue_{t}_k3_rank" for t in RD.FEWCLUE_TASKS)
  leakage.check_run("fewclue_k0", "fewclue_k0", "test_public")
  with pytest.raises(leakage.LeakageError, match="6 pairs.*clue_ocnli -> fewclue_ocnli_k0"):
    leakage.check_run("clue_classification", "fewclue_k0", "test_public")
  with pytest.raises(leakage.LeakageError):
    T.register_mixture("bad_mix", ["clue_tnews", "fewclue_tnews"])


def test_cmrc_sentencepiece_round_trip_through_the_task(official_data):
  """Gold targets through the real Chinese vocabulary, then the task's postprocess: >= 99.9 EM."""
  vocab = seqio.SentencePieceVocabulary(str(official_data / "vocab" / "sentencepiece_cn.model"))
  records = RD.read_all("clue", "cmrc2018", "validation", root=official_data)
  targets, raw, mapped = [], [], []
  for record in records:
    ex = {k: np.bytes_(v.encode("utf-8")) for k, v in T.to_example(record, kind="cmrc").items()}
    decoded = vocab.decode(vocab.encode(_text(ex, "targets")))
    targets.append(T.postprocess(ex["targets"], example=ex, is_target=True, kind="cmrc"))
    raw.append(decoded)
    mapped.append(T.postprocess(decoded, example=ex, kind="cmrc"))
  assert len(targets) == 3219
  assert cmrc.cmrc2018(targets, raw)["em"] < 90  # NFKC punctuation costs ~12 EM unmapped
  scores = cmrc.cmrc2018(targets, mapped)
  assert scores["em"] >= 99.9 and scores["f1"] >= 99.9
  print(f"CMRC dev, SentencePiece round trip of the training targets: raw EM "
        f"{cmrc.cmrc2018(targets, raw)['em']:.2f}, mapped back EM {scores['em']:.2f} "
        f"F1 {scores['f1']:.2f}")


@pytest.mark.parametrize("name", ["clue_afqmc", "clue_cmrc2018", "clue_chid", "clue_c3",
                                  "fewclue_iflytek_k0", "fewclue_chid_rank"])
def test_shared_layer_contract(sample_root, name):
  task = seqio.get_mixture_or_task(name)
  testing.assert_postprocess_total(task)
  split = "validation" if name.startswith("clue") or "_k" in name else "dev_0"
  prompt = {"clue_afqmc": "句子1+句子2->关系", "clue_cmrc2018": "问题+文章->答案",
            "clue_chid": "候选+文段->成语", "clue_c3": None, "fewclue_iflytek_k0": "应用描述->类别",
            "fewclue_chid_rank": "候选+文段->成语"}[name]
  if prompt:
    testing.assert_prompt_format(task, prompt, split=split)
  if not name.endswith("_rank") and name != "clue_cmrc2018":  # CMRC targets are reference lists
    testing.assert_perfect_predictions_score_max(task, split, keys=["accuracy"])


def test_train_holdout_for_checkpoint_selection(official_data):
  records = RD.read_all("clue", "c3", "train", root=official_data)
  fit, held = (T.holdout(records, "c3", part) for part in T.HOLDOUT_SPLITS)
  assert len(fit) + len(held) == 11869
  docs = lambda rs: {"\n".join(r["document"]) for r in rs}
  assert not docs(fit) & docs(held)  # a document's questions stay together
  assert len(docs(held)) == round(0.05 * len(docs(records)))
  assert T.holdout(records, "c3", "train_holdout") == held  # seeded: the same every time
  with paths.use_data_dir(official_data):
    assert len(_examples("clue_c3_rank", "train_holdout")) == sum(len(r["choice"]) for r in held)
  assert "train_holdout" not in seqio.get_mixture_or_task("fewclue_eprstmt").splits


@pytest.mark.parametrize("task,split", [("iflytek", "dev_0"), ("iflytek", "dev_few_all"),
                                        ("csldcp", "dev_few_all"), ("tnews", "dev_0")])
def test_perfect_labels_on_the_official_fewclue_files_score_100(official_data, task, split):
  # IFLYTEK's dev files use 117 of its 119 classes; the two absent ones are no class of the set.
  records = RD.read_all("fewclue", task, split, root=official_data)
  gold = [L.LABELS[task][r["label"]] for r in records]
  scores = T.label_metrics(gold, gold, kind=task)
  assert scores == {"accuracy": 100.0, "macro_f1": 100.0}
  if task == "iflytek":
    assert len(set(gold)) < len(L.LABELS[task])
