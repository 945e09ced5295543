"""Cross-benchmark scenarios: registration, episodes, the leakage check, Δ_m, and a tiny run."""

import collections
import json
import logging
import shutil
import subprocess
import sys
import unicodedata

import numpy as np
import pytest
import seqio

import runtime_subprocess as rs
import crosstask.tasks.xbench as xb  # registers the sources and the xbench tasks and mixtures
from crosstask import paths
from crosstask.tasks import BENCHMARKS
from crosstask.tasks.common import sampling
from crosstask.tasks.xbench import episodes
from crosstask.tasks.xbench import report
from crosstask.tasks.xbench import scenarios as S
from crosstask.tasks.xbench import tasks as xb_tasks

LENGTHS = {"inputs": 256, "targets": 64}
FEWCLUE = S.SCENARIOS["csl_citesum_to_fewclue"]
LOT = S.SCENARIOS["clue_csl_to_lot"]


@pytest.fixture(autouse=True)
def sample_data():
  with paths.use_data_dir(paths.SAMPLE_DIR):
    yield


def _texts(name: str, split: str) -> list[tuple[str, str]]:
  ds = seqio.get_mixture_or_task(name).get_dataset(LENGTHS, split=split, shuffle=False)
  return [(ex["inputs_pretokenized"].decode(), ex["targets_pretokenized"].decode())
          for ex in ds.as_numpy_iterator()]


def test_scenarios_register_with_all_benchmarks():
  assert "xbench" in BENCHMARKS  # so crosstask.tasks.all imports it
  mixtures = [m for m in seqio.MixtureRegistry.names() if m.startswith("xbench_")]
  assert len(mixtures) >= 4 and set(xb.MIXTURES) <= set(mixtures)
  for scenario in (FEWCLUE, LOT):
    for stage in ("meta", "few"):
      tasks = seqio.get_mixture_or_task(scenario.mixture_name(stage)).tasks
      assert sorted(t.name for t in tasks) == sorted(scenario.task_name(stage, m.task)
                                                     for m in scenario.members(stage))
  # Meta and few-shot tasks come from different benchmarks.
  assert {m.task.split("_")[0] for m in FEWCLUE.meta} == {"csl", "citesum"}
  assert {m.task.split("_")[0] for m in FEWCLUE.few} == {"fewclue"}
  assert {m.task.split("_")[0] for m in LOT.meta} == {"clue", "csl"}
  assert {m.task.split("_")[0] for m in LOT.few} == {"lot"}
  assert S.mixture("clue_csl_to_lot", "few") == "xbench_clue_csl_to_lot_few"
  with pytest.raises(ValueError, match="SCENARIO='nope' is not an xbench scenario"):
    S.mixture("nope")


def test_episodes_are_seeded_nested_per_class_and_keep_the_source_scoring():
  member = FEWCLUE.few[2]  # eprstmt: two classes, two examples of each in the sample
  name = FEWCLUE.task_name("few", member.task)
  source = seqio.get_mixture_or_task(member.task)
  task = seqio.get_mixture_or_task(name)
  assert task.predict_metric_fns == source.predict_metric_fns
  pool = _texts(member.task, "train")
  shots = {k: _texts(name, f"s0_k{k}") for k in (0, 1, 2, 4)}
  assert shots[0] == []
  assert [len(shots[k]) for k in (1, 2)] == [2, 4]  # k per class, 2 classes
  assert collections.Counter(t for _, t in shots[1]) == {t: 1 for t in {t for _, t in pool}}
  assert set(shots[1]) <= set(shots[2]) <= set(pool) and shots[4] == shots[2]
  assert _texts(name, "s0_k1") == shots[1]  # the same seed picks the same examples
  orders = {tuple(_texts(name, f"s{seed}_k1")) for seed in range(8)}
  assert len(orders) > 1  # seeds differ
  test = _texts(name, "s0_test")
  assert sorted(test) == sorted(_texts(member.task, "test_public"))
  for text in [t for _, t in test] + ["不是标签"]:
    assert (task.postprocess_fn(text, example={}, is_target=True)
            == source.postprocess_fn(text, example={}, is_target=True))
  meta = FEWCLUE.meta[0]
  meta_texts = _texts(FEWCLUE.task_name("meta", meta.task), "s3_meta")
  assert len(meta_texts) == S.META_SIZE
  assert set(meta_texts) <= set(_texts(meta.task, "train"))
  with pytest.raises(ValueError, match="is a few task.*'s0_meta' belongs to the other stage"):
    episodes.episode_examples(FEWCLUE, "few", member, "s0_meta")


def test_an_episode_cut_short_by_its_source_says_so(caplog):
  member = FEWCLUE.few[2]  # eprstmt: two classes, two examples of each in the sample
  sampling.warn_cut.cache_clear()
  with caplog.at_level(logging.WARNING, logger="absl"):
    for _ in range(2):
      assert len(episodes.episode_examples(FEWCLUE, "few", member, "s0_k2")) == 4  # as asked
      assert len(episodes.episode_examples(FEWCLUE, "few", member, "s0_k4")) == 4
      assert len(episodes.episode_examples(FEWCLUE, "few", member, "s5_k4")) == 4
  assert [r.getMessage() for r in caplog.records] == [
      f"xbench scenario 'csl_citesum_to_fewclue': {member.task}'s k4 set holds 4 of the 8 "
      "examples the protocol asks: its source split 'train' has fewer than 4 examples of "
      "some class"]


def test_an_evaluation_example_in_the_meta_pool_fails_the_run():
  outgen = S.Member("lot_zh_outgen", metrics=("bleu-2", "distinct-4"))
  leaky = S.Scenario("leaky_outgen", meta=(S.Member("lot_zh_outgen", train_split="test"),),
                     few=(outgen,))
  tasks, _ = xb_tasks.register_scenario(leaky)
  test_examples = episodes.source_examples("lot_zh_outgen", "test")
  for name, split in ((tasks[1], "s0_test"), (tasks[0], "s0_meta"), (tasks[1], "s0_k1")):
    with pytest.raises(episodes.LeakageError,
                       match=r"'leaky_outgen', seed 0: evaluation example \d+ of task "
                             r"'lot_zh_outgen' split 'test' \(episode split 's0_test'\) shares "
                             r"text with meta-training example \d+ of task 'lot_zh_outgen' "
                             r"split 'test'") as err:
      _texts(name, split)
  # The segment named is a real example's text (normalised: NFKC, no spaces).
  segment = str(err.value).rsplit(": '", 1)[1][:20]
  assert any(segment in "".join(unicodedata.normalize("NFKC", ex["targets"]).split())
             for ex in test_examples)
  # The shipped scenarios do not leak on the sample.
  for scenario in (FEWCLUE, LOT):
    episodes.check_episode(scenario, seed=0)


def _sample_copy(tmp_path, planted_story: str | None):
  """The sample data, with a LOT story appended to CLUE TNEWS's train file when given."""
  root = tmp_path / "data"
  shutil.copytree(paths.SAMPLE_DIR, root)
  if planted_story is not None:
    with (root / "clue" / "tnews" / "train.json").open("a", encoding="utf-8") as f:
      f.write(json.dumps({"label": "103", "label_desc": "news_sports",
                          "sentence": planted_story, "keywords": ""}, ensure_ascii=False)
              + "\n")
  return root


def test_an_evaluation_example_copied_into_another_benchmarks_meta_pool_is_caught(tmp_path):
  """A LOT OutGen test story inside CLUE TNEWS's training file: TNEWS lays it out as a
  news headline to classify, LOT as a story to write, and the meta set of clue_csl_to_lot
  trains on TNEWS. The check compares content across benchmarks, not task with task."""
  story = json.loads((paths.SAMPLE_DIR / "lot" / "outgen" / "test.jsonl")
                     .read_text(encoding="utf-8").splitlines()[0])["story"]
  with paths.use_data_dir(_sample_copy(tmp_path / "clean", None)):
    episodes.check_episode(LOT, seed=0)  # the same pools without the copy pass
  with paths.use_data_dir(_sample_copy(tmp_path / "planted", story)):
    with pytest.raises(episodes.LeakageError,
                       match=r"'clue_csl_to_lot', seed 0: evaluation example \d+ of task "
                             r"'lot_zh_outgen' split 'test' \(episode split 's0_test'\) shares "
                             r"text with meta-training example 4 of task 'clue_tnews' "
                             r"split 'train'"):
      episodes.check_episode(LOT, seed=0)


def test_segments_ignore_layout_and_labels():
  a = {"inputs": "摘要->学科 摘要：本文研究了水稻在盐胁迫下的根系发育与产量形成", "targets": "农学"}
  b = {"inputs": "Abstract -> Title Abstract: 本文研究了水稻在盐胁迫下的根系发育与产量形成 ",
       "targets": "x"}
  assert episodes.normalised_segments(a) == episodes.normalised_segments(b) == {
      "本文研究了水稻在盐胁迫下的根系发育与产量形成"}
  assert episodes.normalised_segments({"inputs": "新闻->类别 新闻：短句", "targets": "体育"}) == set()


def test_delta_m_per_task_and_scenario():
  runs = []
  for seed, (few, meta) in enumerate([((40.0, 30.0), (50.0, 36.0)), ((44.0, 34.0), (50.0, 40.0))]):
    for setting, (acc, f1) in (("few", few), ("+meta", meta)):
      runs.append(report.Run("csl_citesum_to_fewclue", "fewclue_tnews_kall", 4, setting, seed,
                             {"accuracy": acc, "macro_f1": f1}))
  runs.append(report.Run("xbench_csl_citesum_to_fewclue",
                         "xbench_csl_citesum_to_fewclue_few_fewclue_eprstmt_kall", 4, "few", 0,
                         {"accuracy": 60.0, "macro_f1": 50.0}))
  runs.append(report.Run("csl_citesum_to_fewclue", "fewclue_eprstmt_kall", 4, "+meta", 0,
                         {"accuracy": 58.0, "macro_f1": 50.0}))
  summary = report.summarize(runs)["csl_citesum_to_fewclue"][4]
  assert summary["few"]["fewclue_tnews_kall"] == (42.0, 32.0)
  assert summary["+meta"]["fewclue_tnews_kall"] == (50.0, 38.0)
  assert summary["delta_m"]["fewclue_tnews_kall"] == pytest.approx((8.0 + 6.0) / 2)
  assert summary["delta_m"]["fewclue_eprstmt_kall"] == pytest.approx(-1.0)
  assert summary["delta_m"]["scenario"] == pytest.approx((7.0 - 1.0) / 2)
  text = report.table(report.summarize(runs), "csl_citesum_to_fewclue")
  assert "fewclue_tnews_kall Δ_m | 7.00" in text
  with pytest.raises(ValueError, match="lacks metrics \\['macro_f1'\\]"):
    report.summarize([report.Run("csl_citesum_to_fewclue", "fewclue_tnews_kall", 1, "few", 0,
                                 {"accuracy": 1.0})])
  with pytest.raises(ValueError, match="not a few-shot task"):
    report.summarize([report.Run("clue_csl_to_lot", "clue_tnews", 1, "few", 0, {})])


def _run(cmd):
  env = rs.env()
  env[paths.DATA_DIR_ENV] = str(paths.SAMPLE_DIR)
  res = subprocess.run(cmd, cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=400)
  assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
  return res


def _saved_params(step_dir) -> dict[str, np.ndarray]:
  """A checkpoint's parameters by path, read with the shapes the checkpoint records."""
  import jax  # pylint: disable=g-import-not-at-top
  import orbax.checkpoint as ocp  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.state import checkpoints  # pylint: disable=g-import-not-at-top
  meta = ocp.StandardCheckpointer().metadata(checkpoints.resolve_state_dir(str(step_dir)))
  meta = getattr(getattr(meta, "item_metadata", meta), "tree", meta)
  here = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  abstract = jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=here),
                          meta["params"])
  flat, _ = jax.tree_util.tree_flatten_with_path(checkpoints.load_params(str(step_dir), abstract))
  return {jax.tree_util.keystr(k): np.asarray(v) for k, v in flat}


@pytest.mark.slow(seconds=35)
def test_meta_train_then_k_shot_end_to_end(tmp_path):
  """Stage 1 on the meta mixture, stage 2 (2-shot) from its checkpoint, scored on s0_test.

  Stage 2 runs at learning rate 0 (AdamW's decay is scaled by the rate too), so its
  saved parameters are the ones it started from: they must equal stage 1's final ones.
  """
  common = [sys.executable, "-m", "crosstask.train", f"--gin_file={rs.TINY}",
            "--gin.SCENARIO='csl_citesum_to_fewclue'",
            "--gin.TASK_FEATURE_LENGTHS={'inputs': 64, 'targets': 16}", "--gin.LOG_EVERY=1"]
  meta_dir, few_dir = tmp_path / "meta", tmp_path / "few"
  _run(common + ["--gin_file=xbench/xbench_meta.gin", f"--gin.MODEL_DIR='{meta_dir}'",
                 "--gin.TRAIN_STEPS=3", "--gin.BATCH_SIZE=8", "--gin.EVAL_PERIOD=0",
                 "--gin.CHECKPOINT_PERIOD=3", "--gin.WARMUP_STEPS=1"])
  assert (meta_dir / "checkpoint_3").is_dir()
  few = _run(common + ["--gin_file=xbench/xbench_fewshot.gin", f"--gin.MODEL_DIR='{few_dir}'",
                       "--gin.SHOTS=2", "--gin.TRAIN_STEPS=2", "--gin.BATCH_SIZE=8",
                       "--gin.EVAL_PERIOD=2", "--gin.EVAL_STEPS=1", "--gin.CHECKPOINT_PERIOD=2",
                       "--gin.WARMUP_STEPS=1", "--gin.EVAL_SPLIT='s0_test'",
                       "--gin.LEARNING_RATE=0.0",
                       f"--gin.INITIAL_CHECKPOINT_PATH='{meta_dir}/checkpoint_3'"])
  # Stage 2 takes stage 1's parameters (equal below), not its step (it saves and scores
  # step 2, from 0).
  assert f"Initialised parameters from {meta_dir}/checkpoint_3" in few.stdout, few.stdout[-3000:]
  stage_1, stage_2 = _saved_params(meta_dir / "checkpoint_3"), _saved_params(few_dir / "checkpoint_2")
  assert stage_1.keys() == stage_2.keys() and len(stage_1) > 10
  for name, value in stage_1.items():
    np.testing.assert_array_equal(stage_2[name], value, err_msg=name)
  lines = [json.loads(l) for l in (few_dir / "inference_eval" / "metrics.jsonl").open()]
  scored = {l["task"]: l for l in lines}
  want = {FEWCLUE.task_name("few", m.task) for m in FEWCLUE.few}
  assert want <= set(scored), sorted(scored)
  runs = [report.Run(FEWCLUE.name, name, 2, "+meta", 0, scored[name]["metrics"]) for name in want]
  for name in want:
    assert scored[name]["step"] == 2
    assert 0.0 <= scored[name]["metrics"]["accuracy"] <= 100.0
  cell = report.summarize(runs)[FEWCLUE.name][2]
  assert set(cell["+meta"]) == {m.task for m in FEWCLUE.few}
