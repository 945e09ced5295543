"""A whole benchmark from the shared layer alone: JSON lines, two fields, one metric."""

import json

import seqio

from crosstask import metrics as metrics
from crosstask.tasks.common import factory, readers, testing
from crosstask.tasks.common.schema import Field, Schema

SCHEMA = Schema("toy", (
    Field("question", {"zh": "问题", "en": "Question"}),
    Field("answer", {"zh": "答案", "en": "Answer"}, metric_fn=metrics.rouge),
))
ROWS = [{"q": f"第{i}个问题是什么", "a": f"答案{i}号"} for i in range(6)]


def read_split(root, split):
  rows = readers.read_jsonl(root / f"{split}.jsonl")
  return list(readers.convert(rows, lambda row: (
      readers.require(row.value, ["q", "a"], row.where),
      {"question": row.value["q"], "answer": row.value["a"]})[1]))


def test_toy_benchmark(tmp_path):
  for split in ("train", "validation"):
    (tmp_path / f"{split}.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
  seqio.TaskRegistry.remove("toy_zh_question_to_answer")
  task = factory.arrow_task(
      "toy_zh_question_to_answer", schema=SCHEMA, inputs=["question"], outputs=["answer"],
      lang="zh", read_split=lambda split: read_split(tmp_path, split),
      splits=["train", "validation"])
  assert factory.arrow_task("toy_zh_question_to_answer", schema=SCHEMA, inputs=["question"],
                            outputs=["answer"], lang="zh", read_split=None, splits=[]) is task
  testing.assert_prompt_format(task, "问题->答案")
  testing.assert_metric_keys(task, {"rouge1", "rouge2", "rougeL"})
  testing.assert_postprocess_total(task)
  testing.assert_perfect_predictions_score_max(task)
  ex = next(task.get_dataset({"inputs": 64, "targets": 32}, split="train", shuffle=False)
            .as_numpy_iterator())
  assert ex["inputs_pretokenized"].decode() == "问题->答案 问题：第0个问题是什么"
  assert ex["targets_pretokenized"].decode() == "答案0号"
  scores = task.metric_fns[0]([{"answer": "答案1号"}], [task.postprocess_fn("答案2号")])
  assert 0 < scores["rouge1"] < 100
