"""Sources and the arrow-task factory: checkpointable pipelines, extra features, metrics."""

import pytest
import seqio
import tensorflow as tf

from crosstask.tasks.common import factory, plain, sources, testing
from crosstask.tasks.common.schema import Field, Schema


def _exact(targets, predictions):
  return {"exact": 100.0 * sum(t == p for t, p in zip(targets, predictions)) / len(targets)}


def _count(targets, predictions):
  return {"n_items": float(sum(len(p) for p in predictions))}


SCHEMA = Schema("fact", (
    Field("text", {"zh": "文本", "en": "Text"}),
    Field("tags", {"zh": "标签", "en": "Tags"}, separator=",", kind="list", metric_fn=_count),
    Field("label", {"zh": "类别", "en": "Label"}, kind="label", label_set=("a", "b"),
          metric_fn=_exact),
))
RECORDS = [{"text": f"t{i}", "tags": [f"x{i}", "y"], "label": "ab"[i % 2], "id": f"r{i}"}
           for i in range(10)]


def _read(split):
  if split == "missing":
    raise FileNotFoundError("no /data/missing.jsonl")
  return RECORDS if split == "train" else []


def _task(**kw):
  return factory.arrow_task("fact_en_text_to_tags_and_label", schema=SCHEMA, inputs=["text"],
                            outputs=["tags", "label"], lang="en", read_split=_read,
                            splits=["train", "validation", "missing"], register=False, **kw)


def test_pipeline_supports_iterator_checkpointing(tmp_path):
  task = _task(extra_features=["id"], to_example=lambda r: {
      "inputs": f"Text -> Tags + Label Text: {r['text']}", "targets": r["label"], "id": r["id"]})
  ds = task.get_dataset({"inputs": 16, "targets": 8}, split="train", shuffle=True, seed=3)
  it = iter(ds)
  first = [next(it)["id"].numpy() for _ in range(3)]
  ckpt = tf.train.Checkpoint(iterator=it)
  path = ckpt.save(str(tmp_path / "it"))
  rest = [ex["id"].numpy() for ex in it]
  it2 = iter(task.get_dataset({"inputs": 16, "targets": 8}, split="train", shuffle=True, seed=3))
  tf.train.Checkpoint(iterator=it2).restore(path)
  assert [ex["id"].numpy() for ex in it2] == rest
  assert sorted(first + rest) == sorted(r["id"].encode() for r in RECORDS)


def test_default_layout_metrics_and_errors():
  task = _task()
  ex = next(task.get_dataset(None, split="train", shuffle=False).as_numpy_iterator())
  assert ex["inputs_pretokenized"].decode() == "Text -> Tags + Label Text: t0"
  assert ex["targets_pretokenized"].decode() == "Tags: x0,y; Label: a"
  assert list(task.get_dataset(None, split="validation", shuffle=False)) == []
  with pytest.raises(FileNotFoundError, match="missing.jsonl"):
    task.get_dataset(None, split="missing", shuffle=False)
  target = task.postprocess_fn("Tags: x0,y; Label: a", is_target=True)
  assert target == {"tags": ["x0", "y"], "label": "a"}
  scores = plain.field_metrics(SCHEMA, ["label", "tags"])([target], [task.postprocess_fn("junk")])
  assert scores == {"tags/n_items": 0.0, "label/exact": 0.0}
  bad = factory.arrow_task("fact_bad", schema=SCHEMA, inputs=["text"], outputs=["label"], lang="en",
                           read_split=_read, splits=["train"], register=False,
                           to_example=lambda r: {"inputs": r["text"]})
  with pytest.raises(ValueError, match=r"split 'train', record 0: to_example gave no \['targets'\]"):
    bad.get_dataset(None, split="train", shuffle=False)
  src = sources.records_source(lambda s: [{"x": 1}], ["train"],
                               to_example=lambda r: {"inputs": "a", "targets": r["x"]})
  with pytest.raises(TypeError, match="feature 'targets' is int"):
    src.get_dataset("train", shuffle=False)


def test_kit_assertions_fail_on_wrong_tasks():
  task = _task()
  testing.assert_metric_keys(task, {"tags/n_items", "label/exact"}, split="train")
  testing.assert_postprocess_total(task)
  with pytest.raises(AssertionError, match="does not start with"):
    testing.assert_prompt_format(task, "Text -> Label", split="train")
  with pytest.raises(AssertionError, match="metric keys"):
    testing.assert_metric_keys(task, {"label/exact"}, split="train")
  with pytest.raises(AssertionError, match="perfect predictions score tags/n_items"):
    testing.assert_perfect_predictions_score_max(task, "train")
  raising = _task(postprocess_fn=lambda text, example=None, is_target=False: text.decode())
  with pytest.raises(AssertionError, match="postprocess_fn raised"):
    testing.assert_postprocess_total(raising)
  assert isinstance(task.output_features["inputs"].vocabulary, seqio.Vocabulary)
