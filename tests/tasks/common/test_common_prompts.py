"""Prompt variants `<base>.p<k>`: same task but the prompt text, one mixture, names read back."""

import pytest
import seqio

import crosstask.tasks.csl as csl  # registers the CSL tasks and their prompt variants
from crosstask import paths
from crosstask.tasks.common import factory, prompts
from crosstask.tasks.common.schema import Field, Schema
from crosstask.tasks.csl import tasks as csl_tasks

LENGTHS = {"inputs": 2048, "targets": 512}
BASE = "csl_zh_abstract_to_category"


def _examples(name: str) -> list[tuple[str, str]]:
  task = seqio.get_mixture_or_task(name)
  with paths.use_data_dir(paths.SAMPLE_DIR):
    ds = task.get_dataset(LENGTHS, split="validation", shuffle=False)
    return [(ex["inputs_pretokenized"].decode(), ex["targets_pretokenized"].decode())
            for ex in ds.as_numpy_iterator()]


def test_csl_variants_differ_only_in_the_prompt_and_share_scoring():
  names = [prompts.variant_name(BASE, k) for k in range(3)]
  assert set(names) <= set(csl.TASKS)
  assert prompts.mixture_name(BASE) in csl.MIXTURES
  mixture = seqio.get_mixture_or_task(prompts.mixture_name(BASE))
  assert sorted(t.name for t in mixture.tasks) == names

  base = _examples(BASE)
  assert base
  heads = csl_tasks.PROMPT_VARIANTS[(("abstract",), ("category",))]
  wanted = ["摘要->门类", *heads]
  for name, head in zip(names, wanted):
    got = _examples(name)
    # Same records, same targets, same labelled inputs: only the text before them changes.
    assert [t for _, t in got] == [t for _, t in base]
    for (inputs, _), (base_inputs, _) in zip(got, base):
      assert inputs == head + base_inputs[len("摘要->门类"):], (name, inputs[:40])
  # p0 is the paper's prompt: the base task's inputs exactly.
  assert _examples(names[0]) == base

  tasks = [seqio.get_mixture_or_task(n) for n in [BASE, *names]]
  text = base[0][1]
  assert len({repr(t.postprocess_fn(text, is_target=True)) for t in tasks}) == 1
  parsed = [tasks[0].postprocess_fn(t, is_target=True) for _, t in base]
  wrong = [{"category": "不是门类"} for _ in parsed]
  for task in tasks:
    [metric_fn] = task.metric_fns
    assert metric_fn.__name__ == tasks[0].metric_fns[0].__name__
    assert metric_fn(parsed, parsed) == tasks[0].metric_fns[0](parsed, parsed)
    assert metric_fn(parsed, wrong) != metric_fn(parsed, parsed)


SCHEMA = Schema("toy", (Field("text", {"en": "Text"}), Field("label", {"en": "Label"})))


def _variants(name, texts, **kw):
  return factory.arrow_task_prompts(
      name, prompts=texts, schema=SCHEMA, inputs=["text"], outputs=["label"], lang="en",
      read_split=lambda split: [{"text": "a b", "label": "x"}], splits=["train"], **kw)


def test_arrow_task_prompts_registers_variants_and_a_mixture():
  variants, mixture = _variants("toy_prompts_test", ["Text -> Label", "What label fits?"])
  assert variants == ["toy_prompts_test.p0", "toy_prompts_test.p1"]
  assert mixture == "toy_prompts_test.prompts"
  ex = next(seqio.get_mixture_or_task(variants[1]).get_dataset(
      None, split="train", shuffle=False).as_numpy_iterator())
  assert ex["inputs_pretokenized"].decode() == "What label fits? Text: a b"


@pytest.mark.parametrize("texts, match", [
    ([], "non-empty list"), ("Text -> Label", "non-empty list"),
    (["ok", ""], "prompt 1 must be a non-empty single line"),
    (["two\nlines"], "prompt 0 must be"), (["a", "b", "a"], "prompt 2 repeats prompt 0"),
])
def test_bad_prompts_are_refused_by_task_and_index(texts, match):
  with pytest.raises(ValueError, match=rf"toy_bad.*{match}"):
    _variants("toy_bad", texts)
  assert "toy_bad.p0" not in seqio.TaskRegistry.names()


def test_prompt_and_custom_layout_are_exclusive():
  with pytest.raises(ValueError, match="toy_both.*prompt= or to_example="):
    factory.arrow_task("toy_both", schema=SCHEMA, inputs=["text"], outputs=["label"], lang="en",
                       read_split=lambda s: [], splits=["train"], register=False, prompt="P",
                       to_example=lambda r: r)


def test_names_split_back_and_scores_summarize_over_prompts():
  assert prompts.split_variant("csl_zh_abstract_to_title.p12") == ("csl_zh_abstract_to_title", 12)
  for plain in ("csl_zh_abstract_to_title", "x.p", "x.p01", "x.prompts", "x.pa"):
    assert prompts.split_variant(plain) == (plain, None)
  with pytest.raises(ValueError, match="prompt index"):
    prompts.variant_name("x", -1)
  summary = prompts.summarize({"t.p0": 50.0, "t.p1": 60.0, "t.p2": 70.0, "u.p0": 5.0, "v": 1.0})
  assert summary["t"] == pytest.approx(
      {"mean": 60.0, "std": (200 / 3) ** 0.5, "min": 50.0, "max": 70.0, "prompts": 3.0})
  assert summary["u"]["std"] == 0.0 and "v" not in summary
