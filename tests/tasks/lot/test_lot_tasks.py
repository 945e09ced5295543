"""The LOT arrow-prompt tasks on the bundled sample: layouts, postprocessors, metrics."""

import pytest

from crosstask import paths
from crosstask.tasks.common import rank, testing

import crosstask.tasks.lot  # pylint: disable=unused-import  # registers the tasks
from crosstask.tasks.lot import tasks as T

import seqio


@pytest.fixture(autouse=True)
def sample_root():
  with paths.use_data_dir(paths.SAMPLE_DIR):
    yield


@pytest.mark.parametrize("name,prompt", [
    ("lot_zh_clozet", "故事+候选一+候选二->缺句"), ("lot_zh_clozet_rank", "故事+候选一+候选二->缺句"),
    ("lot_zh_senpos", "故事+句子->位置"), ("lot_zh_plotcom", "故事->缺句"),
    ("lot_zh_outgen", "标题+大纲->故事"), ("lot_zh_outgen_notitle", "大纲->故事"),
])
def test_prompts_and_total_postprocessors(name, prompt):
  task = seqio.get_mixture_or_task(name)
  testing.assert_prompt_format(task, prompt)
  testing.assert_postprocess_total(task)


def test_clozet_layout_and_target_is_the_right_plot():
  task = seqio.get_mixture_or_task("lot_zh_clozet")
  ex = next(task.get_dataset(None, split="train", shuffle=False).as_numpy_iterator())
  inputs = ex["inputs_pretokenized"].decode()
  assert "<mask>" in inputs and "；候选一：" in inputs and "；候选二：" in inputs
  assert ex["targets_pretokenized"] == ex[f"plot{ex['label'].decode()}"]
  testing.assert_perfect_predictions_score_max(task)


@pytest.mark.parametrize("text,expected", [
    ("有些单纯的鸟儿赴宴来了。", "1"),
    ("有些单纯的鸟儿赴宴来了.", "1"),           # NFKC'd punctuation back to full width
    ("<extra_id_1> 可是没有一只鸟儿愿意来", "0"),  # special tokens, spaces, a lost 。
    ("鸟儿", "-1"),                              # an LCS tie is wrong
    ("", "-1"),
])
def test_clozet_generated_text_maps_to_a_candidate(text, expected):
  example = {"plot0": "可是没有一只鸟儿愿意来。".encode(), "plot1": "有些单纯的鸟儿赴宴来了。".encode(),
             "label": b"1"}
  assert T.clozet_postprocess(text, example=example) == expected
  assert T.clozet_postprocess("x", example=example, is_target=True) == "1"


def test_clozet_rank_scores_both_candidates_and_trains_on_the_right_one():
  task = seqio.get_mixture_or_task("lot_zh_clozet_rank")
  val = list(task.get_dataset(None, split="validation", shuffle=False).as_numpy_iterator())
  targets = [task.postprocess_fn("", example=ex, is_target=True) for ex in val]
  assert [t[:2] for t in targets] == [(0, 0), (0, 1), (1, 0), (1, 1)]
  assert sum(t[2] for t in targets) == 2
  train = list(task.get_dataset(None, split="train", shuffle=False).as_numpy_iterator())
  assert len(train) == 4 and all(ex["rank_correct"] == b"1" for ex in train)
  # The right candidate scores higher in story 0, lower in story 1; ties go to candidate 0.
  right = [t[2] for t in targets]
  scores = [-1.0 if right[0] else -2.0, -2.0 if right[0] else -1.0, -3.0, -3.0]
  assert rank.accuracy(targets, scores)["accuracy"] == pytest.approx(
      50.0 + 50.0 * (targets[2][2]))


def test_senpos_parses_the_first_integer():
  assert T.senpos_postprocess("位置：３，不是5") == "3"
  assert T.senpos_postprocess("第12个") == "12"
  assert T.senpos_postprocess("不知道") == ""
  task = seqio.get_mixture_or_task("lot_zh_senpos")
  scores = testing.assert_perfect_predictions_score_max(task)
  assert scores == {"accuracy": 100.0}


def test_plotcom_metrics_and_clean_up():
  task = seqio.get_mixture_or_task("lot_zh_plotcom")
  assert task.postprocess_fn("他说 , 好 </s>", is_target=False) == "他说，好"
  testing.assert_metric_keys(task, {f"{m}-{n}" for m in ("bleu", "distinct") for n in (1, 2, 3, 4)})


def test_outgen_targets_carry_the_outline_for_coverage_and_order():
  task = seqio.get_mixture_or_task("lot_zh_outgen")
  val = list(task.get_dataset(None, split="validation", shuffle=False).as_numpy_iterator())
  targets = [task.postprocess_fn(ex["targets_pretokenized"].decode(), example=ex, is_target=True)
             for ex in val]
  assert targets[0]["outline"] == ["准备了降落伞", "石头缝里", "开出了一朵小黄花", "飞上了天", "扎下根"]
  scores = task.metric_fns[0](targets, [t["story"] for t in targets])
  for key in ("bleu-1", "bleu-2", "coverage", "order"):
    assert scores[key] == pytest.approx(100.0), key
  assert 0 < scores["overall"] < 100 and 0 < scores["distinct-1"] < 100
  shuffled = ["".join(reversed(t["story"])) for t in targets]
  assert task.metric_fns[0](targets, shuffled)["order"] < 100.0


def test_nlpcc_test_file_with_hidden_stories_reads_and_builds_its_test_split(tmp_path):
  # IndexFziQ/LongLM-Eyas datasets/chn/data/final/test/test.jsonl: every story is ""
  # (predictions are submitted in this format); the train and val files must have one.
  folder = tmp_path / "lot" / "nlpcc2021_outline2story"
  folder.mkdir(parents=True)
  (folder / "test.jsonl").write_text(
      '{"story": "", "outline": ["小猴子", "大苹果"]}\n'
      '{"story": "", "outline": ["一只猫"]}\n', encoding="utf-8")
  (folder / "val.jsonl").write_text('{"story": "", "outline": ["一只猫"]}\n', encoding="utf-8")
  from crosstask.tasks.lot import readers  # pylint: disable=g-import-not-at-top
  assert readers.read_split("nlpcc", "test", tmp_path) == [
      {"outline": ["小猴子", "大苹果"], "story": ""}, {"outline": ["一只猫"], "story": ""}]
  with pytest.raises(ValueError, match=r"val.jsonl:1.*'story': empty"):
    readers.read_split("nlpcc", "validation", tmp_path)
  task = seqio.get_mixture_or_task("lot_zh_outgen_notitle")
  with paths.use_data_dir(tmp_path):
    test = list(task.get_dataset(None, split="test", shuffle=False).as_numpy_iterator())
  assert [ex["inputs_pretokenized"].decode() for ex in test] == [
      "大纲->故事 大纲：小猴子#大苹果", "大纲->故事 大纲：一只猫"]
  assert {ex["targets_pretokenized"].decode() for ex in test} == {""}
