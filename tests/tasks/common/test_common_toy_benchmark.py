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


TOY_PACKAGE = '''
"""A sixth benchmark: this package and its sample files are all it takes."""
import json
import pathlib

from crosstask import metrics
from crosstask.tasks.common import factory, readers, registry
from crosstask.tasks.common.schema import Field, Schema

SCHEMA = Schema("toy6", (Field("question", {"zh": "问题"}),
                         Field("answer", {"zh": "答案"}, metric_fn=metrics.rouge)))
SAMPLE = pathlib.Path(__file__).parent / "sample"


def _read_split(split):
  return [{"question": r.value["q"], "answer": r.value["a"]}
          for r in readers.read_jsonl(SAMPLE / f"{split}.jsonl")]


def register():
  task = factory.arrow_task("toy6_zh_question_to_answer", schema=SCHEMA, inputs=["question"],
                            outputs=["answer"], lang="zh", read_split=_read_split,
                            splits=["train", "validation"])
  return [task.name, factory.register_mixture("toy6_all", [task.name])]


TASKS, MIXTURES = registry.by_kind(register())
'''


def test_a_sixth_benchmark_is_its_package_and_its_sample_files(tmp_path, monkeypatch):
  import importlib  # pylint: disable=g-import-not-at-top
  from crosstask.tasks import benchmark_packages  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.common import registry  # pylint: disable=g-import-not-at-top
  package = tmp_path / "toy6"
  (package / "sample").mkdir(parents=True)
  (package / "__init__.py").write_text(TOY_PACKAGE, encoding="utf-8")
  for split in ("train", "validation"):
    (package / "sample" / f"{split}.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
  (tmp_path / "common").mkdir()
  (tmp_path / "common" / "__init__.py").write_text("", encoding="utf-8")
  assert benchmark_packages(tmp_path) == ("toy6",)  # found beside `common`, listed nowhere

  monkeypatch.syspath_prepend(str(tmp_path))
  for name in ("toy6_zh_question_to_answer",):
    seqio.TaskRegistry.remove(name)
  seqio.MixtureRegistry.remove("toy6_all")
  toy6 = importlib.import_module("toy6")
  assert registry.contract_problems(toy6) == []
  assert (toy6.TASKS, toy6.MIXTURES) == (("toy6_zh_question_to_answer",), ("toy6_all",))
  assert [t.name for t in seqio.get_mixture_or_task("toy6_all").tasks] == list(toy6.TASKS)
  ex = next(seqio.get_mixture_or_task(toy6.TASKS[0]).get_dataset(
      {"inputs": 64, "targets": 32}, split="validation", shuffle=False).as_numpy_iterator())
  assert ex["targets_pretokenized"].decode() == "答案0号"  # read from its own sample files
