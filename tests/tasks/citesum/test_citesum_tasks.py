"""CiteSum's SeqIO tasks on the bundled fixtures: prompts, splits, few-shot subsets, REF
postprocessing, multi-reference targets, TFDS sources, and the run configs."""

import pathlib

import numpy as np
import pytest
import seqio

from crosstask import paths
from crosstask.tasks.citesum import fewshot
from crosstask.tasks.citesum import readers
from crosstask.tasks.citesum import tasks as T
from crosstask.tasks.common import testing

import crosstask.tasks.citesum  # noqa: F401  registers the tasks

PROMPTS = {
    "citesum_abstract_to_tldr": "Abstract -> TLDR",
    "citesum_title_and_abstract_to_tldr": "Title + Abstract -> TLDR",
    "citesum_abstract_and_discipline_to_tldr": "Abstract + Discipline -> TLDR",
    "citesum_abstract_to_title": "Abstract -> Title",
    "citesum_abstract_to_discipline": "Abstract -> Discipline",
    "scitldr_a_abstract_to_tldr": "Abstract -> TLDR",
    "xsum_document_to_summary": "Document -> Summary",
    "xsum_as_abstract_to_tldr": "Abstract -> TLDR",
    "xsum_as_abstract_to_title": "Abstract -> Title",
    "gigaword_document_to_headline": "Document -> Headline",
    "gigaword_as_abstract_to_tldr": "Abstract -> TLDR",
}


@pytest.fixture
def sample_root():
  with paths.use_data_dir(paths.SAMPLE_DIR) as root:
    yield root


def _examples(name, split="validation"):
  task = seqio.get_mixture_or_task(name)
  return list(task.get_dataset(None, split=split, shuffle=False).as_numpy_iterator())


def _text(value):
  return value.decode() if isinstance(value, bytes) else value


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_prompts_and_total_postprocessing(name, sample_root):
  task = seqio.get_mixture_or_task(name)
  testing.assert_prompt_format(task, PROMPTS[name])
  testing.assert_postprocess_total(task)


def test_citesum_tasks_drop_rows_without_the_field_and_score_like_the_paper(sample_root):
  # val: 3 rows, one without discipline; every row has a title.
  assert len(_examples("citesum_abstract_to_discipline")) == 2
  assert len(_examples("citesum_title_and_abstract_to_tldr")) == 3
  train_titles = _examples("citesum_abstract_to_title", "train")
  assert len(train_titles) == 5  # the empty title is dropped, the repeated paper kept
  assert len(_examples("citesum_abstract_to_title_dedup", "train")) == 4
  tldr = seqio.get_mixture_or_task("citesum_abstract_to_tldr")
  # CiteSum targets keep REF (training data); the metric is stemmed ROUGE with rougeLsum.
  assert _text(_examples("citesum_abstract_to_tldr", "train")[0]["targets_pretokenized"]
               ).startswith("REF proposed")
  testing.assert_metric_keys(tldr, {"rouge1", "rouge2", "rougeL", "rougeLsum"})
  testing.assert_perfect_predictions_score_max(tldr)
  disc = seqio.get_mixture_or_task("citesum_abstract_to_discipline")
  testing.assert_metric_keys(disc, {"accuracy", "macro_f1", "weighted_f1"})
  mix = seqio.get_mixture_or_task("citesum_tldr_title_discipline")
  assert sorted(t.name for t in mix.tasks) == ["citesum_abstract_to_discipline",
                                              "citesum_abstract_to_title",
                                              "citesum_abstract_to_tldr"]


def test_aic_task_fails_clearly_without_introduction(sample_root):
  with pytest.raises(ValueError, match="AIC task needs data carrying the papers' introduction"):
    _examples("citesum_aic_to_tldr")


def test_scitldr_references_reach_the_metric_and_ref_is_stripped(sample_root):
  task = seqio.get_mixture_or_task("scitldr_a_abstract_to_tldr")
  ex = _examples("scitldr_a_abstract_to_tldr")[2]
  refs = task.postprocess_fn(ex["targets_pretokenized"], example=ex, is_target=True)
  assert len(refs) == 4 and refs[0] == _text(ex["targets_pretokenized"])
  assert task.postprocess_fn("REF prunes networks at initialisation .") == \
      "This paper prunes networks at initialisation."
  official = seqio.get_mixture_or_task("scitldr_a_abstract_to_tldr_official_ref")
  # The released pipeline: the decoder's clean-up (" ." -> "."), then eval_tldr.py's rule.
  assert official.postprocess_fn("REF prunes REF .") == "this paper prunes this paper."
  scores = task.metric_fns[0]([refs], [refs[1]])
  assert scores["rouge1"] == pytest.approx(100.0) and scores["author_rouge1"] < 100.0


def test_decoder_prompt_tasks_have_the_prompt_as_eos_free_targets(sample_root):
  vocab = seqio.get_mixture_or_task("scitldr_a_abstract_to_tldr_prompt_this_paper"
                                    ).output_features["targets"].vocabulary
  for ex in _examples("scitldr_a_abstract_to_tldr_prompt_this_paper"):
    assert _text(ex["targets_pretokenized"]) == "This paper"
    assert vocab.eos_id not in ex["targets"].tolist()
  gold = [_text(ex["targets_pretokenized"])
          for ex in _examples("scitldr_a_abstract_to_tldr_prompt_gold3", "test")]
  assert gold == ["We propose contrastive", "Factorised second moments",
                  "Gradient boosting still"]


def test_scitldr_few_shot_subsets_on_real_train(official_data):
  with paths.use_data_dir(official_data):
    train = list(readers.read_scitldr("train"))
    dev_ids = {r["paper_id"] for r in readers.read_scitldr("validation")}
    pool = [r for r in train if r["tldr"].startswith("We ")]
    assert len(pool) == 872
    for k in (32, 128):
      examples = _examples("scitldr_a_abstract_to_tldr", f"k{k}_s42")
      expected = [pool[i] for i in np.random.default_rng(42).permutation(872)[:k]]
      assert len(examples) == k
      assert [_text(e["targets_pretokenized"]) for e in examples] == [
          " ".join(("This paper REF " + r["tldr"][3:]).split()) for r in expected]
      assert not {r["paper_id"] for r in expected} & dev_ids
    orig = _examples("scitldr_a_abstract_to_tldr", "orig_k128_s42")
    first = train[int(np.random.default_rng(42).permutation(1992)[0])]
    assert _text(orig[0]["targets_pretokenized"]) == " ".join(first["tldr"].split())
    assert len(_examples("scitldr_a_abstract_to_tldr", "all_k32_s42")) == 32


def test_xsum_splits(sample_root):
  assert len(_examples("xsum_as_abstract_to_tldr", "validation1000")) == 3  # fewer than 1000
  train = list(readers.read_xsum("train"))
  for seed in T.XSUM_SEEDS:
    got = [_text(e["targets_pretokenized"]) for e in _examples("xsum_as_abstract_to_tldr",
                                                               f"k10_s{seed}")]
    order = np.random.default_rng(seed).permutation(12)[:10]
    assert got == [train[i]["summary"] for i in order]
  with pytest.raises(ValueError, match="cannot draw 100 examples from 12"):
    _examples("xsum_as_abstract_to_tldr", "k100_s0")
  task = seqio.get_mixture_or_task("xsum_as_abstract_to_tldr")
  assert task.postprocess_fn("REF says the bridge REF will reopen .") == \
      "says the bridge will reopen."


def test_few_shot_split_names():
  assert fewshot.parse_split("k32_s42") == fewshot.FewShotSplit("we_initial", 32, 42)
  assert fewshot.parse_split("orig_k128_s7").name == "orig_k128_s7"
  assert fewshot.parse_split("validation") is None
  assert fewshot.hf_subset(5, 3, 0) == np.random.default_rng(0).permutation(5)[:3].tolist()


@pytest.mark.parametrize("dataset,name,prompt", [
    ("xsum", "xsum_tfds_as_abstract_to_tldr", "Abstract -> TLDR Abstract: "),
    ("gigaword", "gigaword_tfds_document_to_headline", "Document -> Headline Document: ")])
def test_tfds_sources_with_mock_data(dataset, name, prompt):
  tfds = pytest.importorskip("tensorflow_datasets")
  task = seqio.get_mixture_or_task(name)
  assert task.source.tfds_dataset.name == T.TFDS_NAMES[dataset]
  with tfds.testing.mock_data(num_examples=3):
    # try_in_mem_cache=False: mock data has no split sizes to decide caching with.
    examples = list(task.get_dataset(None, split="test", shuffle=False,
                                     try_in_mem_cache=False).as_numpy_iterator())
  assert len(examples) == 3
  for ex in examples:
    inputs = _text(ex["inputs_pretokenized"])
    assert inputs.startswith(prompt) and "\n" not in inputs
    assert ex["targets"][-1] == task.output_features["targets"].vocabulary.eos_id


CONFIGS = sorted(p for p in (pathlib.Path(paths.__file__).parent / "t5x_configs" / "citesum"
                             ).glob("*.gin") if not p.name.startswith("_"))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_run_configs_parse_and_name_registered_tasks(config):
  import gin
  from crosstask.runtime.config import gin_utils
  import runtime_subprocess as rs
  bindings = ["MODEL_DIR='/tmp/x'", "CHECKPOINT_PATH='/tmp/x'", "EVAL_OUTPUT_DIR='/tmp/y'"]
  gin.clear_config()
  try:
    gin_utils.parse([rs.TINY, str(config)], bindings)
    name = gin.query_parameter("%MIXTURE_OR_TASK_NAME")
    assert gin.query_parameter("%MIXTURE_OR_TASK_MODULE") == "crosstask.tasks.citesum"
    assert name in seqio.TaskRegistry.names() or name in seqio.MixtureRegistry.names()
    # The paper's implicit decoding settings reach the model (macros resolved).
    params = gin.get_bindings("model.EncoderDecoderModel")["default_decoder_params"]
    assert params["no_repeat_ngram_size"] in (0, 3) and isinstance(params["min_length"], int)
  finally:
    gin.clear_config()
