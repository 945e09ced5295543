"""crosstask.score on a real eval: the same numbers from the infer output, with no model."""

import json
import subprocess
import sys
import time

import pytest

import results_helpers
import runtime_subprocess as rs
from crosstask import paths
from crosstask import records
from crosstask import score

FLAGS = [f"--gin.MIXTURE_OR_TASK_NAME='{results_helpers.MIXTURE}'",
         "--gin.MIXTURE_OR_TASK_MODULE='results_helpers'",
         "--gin.TASK_FEATURE_LENGTHS={'inputs': 128, 'targets': 24}", "--gin.BATCH_SIZE=8"]
SPLITS = {"clue_cmrc2018": "validation", "fewclue_eprstmt_k0_rank": "validation",
          "csl_zh_title_to_category": "validation", "lot_zh_outgen": "validation",
          "scitldr_a_abstract_to_tldr_official_ref": "validation"}


def _run(cmd):
  env = {**rs.env(), paths.DATA_DIR_ENV: str(paths.SAMPLE_DIR)}
  started = time.time()
  res = subprocess.run(cmd, cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=600)
  assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
  return res, time.time() - started


def _job(module, run_gin, *flags):
  return [sys.executable, "-m", module, f"--gin_file={rs.TINY}", f"--gin_file={run_gin}",
          *FLAGS, *flags]


@pytest.mark.slow(seconds=50)
def test_score_reproduces_the_eval_metrics_from_the_infer_output(tmp_path):
  model_dir = tmp_path / "model"
  _run(_job("crosstask.train", "runs/finetune.gin", f"--gin.MODEL_DIR='{model_dir}'",
            "--gin.TRAIN_STEPS=4", "--gin.EVAL_PERIOD=0", "--gin.LEARNING_RATE=0.01",
            "--gin.MIXTURE_OR_TASK_NAME='fewclue_eprstmt_k0_rank'", "--gin.TRAIN_SPLIT='train'"))
  checkpoint = model_dir / "checkpoint_4"
  eval_dir, infer_dir, score_dir = tmp_path / "eval", tmp_path / "infer", tmp_path / "score"
  _, eval_seconds = _run(_job("crosstask.eval", "runs/eval.gin",
                               f"--gin.CHECKPOINT_PATH='{checkpoint}'",
                               f"--gin.EVAL_OUTPUT_DIR='{eval_dir}'"))
  _run(_job("crosstask.infer", "runs/infer.gin", f"--gin.CHECKPOINT_PATH='{checkpoint}'",
            f"--gin.INFER_OUTPUT_DIR='{infer_dir}'"))
  evaluated = {r.task: r for r in records.read(eval_dir)}
  assert set(evaluated) == set(SPLITS)
  assert all(r.step == 4 and r.source == "eval" and len(r.fingerprint) == 8
             for r in evaluated.values())

  files = [str(infer_dir / f"{task}-{split}.jsonl") for task, split in SPLITS.items()]
  first = json.loads(open(files[0], encoding="utf-8").readline())
  assert first["step"] == 4 and first["fingerprint"] == evaluated["clue_cmrc2018"].fingerprint
  started = time.time()  # in this process: no second TensorFlow start-up to pay for
  with paths.use_data_dir(paths.SAMPLE_DIR):
    assert score.main([*files, f"--output_dir={score_dir}", "--module=results_helpers"]) == 0
  print(f"eval {eval_seconds:.0f} s (a subprocess), score {time.time() - started:.0f} s")
  scored = {r.task: r for r in records.read(score_dir)}
  for task, r in evaluated.items():
    assert scored[task].metrics == r.metrics, task  # identical, not approximately equal
    assert (scored[task].step, scored[task].fingerprint) == (r.step, r.fingerprint)
    # The same examples, hashed by eval from its datasets and by score from the data root.
    assert scored[task].data == r.data and len(r.data) == 8, task
    assert scored[task].source == f"score:{task}-{SPLITS[task]}.jsonl"
  assert evaluated["fewclue_eprstmt_k0_rank"].metrics.keys() == {"accuracy"}
  assert {"em", "f1"} <= evaluated["clue_cmrc2018"].metrics.keys()

  # The first 2 examples (NUM_EXAMPLES) into the same folders: labelled as such, beside the
  # whole split's outputs, which they had overwritten and passed for.
  whole = {task: (eval_dir / f"{task}-000004.jsonl").read_text() for task in SPLITS}
  _run(_job("crosstask.eval", "runs/eval.gin", f"--gin.CHECKPOINT_PATH='{checkpoint}'",
            f"--gin.EVAL_OUTPUT_DIR='{eval_dir}'", "--gin.NUM_EXAMPLES=2"))
  _run(_job("crosstask.infer", "runs/infer.gin", f"--gin.CHECKPOINT_PATH='{checkpoint}'",
            f"--gin.INFER_OUTPUT_DIR='{infer_dir}'", "--gin.NUM_EXAMPLES=2"))
  # The sample's OutGen validation split holds 2 examples: read whole, and labelled so.
  label = {task: split if task == "lot_zh_outgen" else f"{split}[:2]"
           for task, split in SPLITS.items()}
  subset = {r.task: r for r in records.read(eval_dir)
            if r.split != SPLITS[r.task] or r.task == "lot_zh_outgen"}  # the newest, per task
  assert {task: r.split for task, r in subset.items()} == label
  # A subset's eval logs go to first_2/; OutGen's, whole, where the whole split's are.
  logged = {task: eval_dir / ("first_2" if label[task] != split else "") / f"{task}-000004.jsonl"
            for task, split in SPLITS.items()}
  for task, split in SPLITS.items():
    assert (eval_dir / f"{task}-000004.jsonl").read_text() == whole[task]
    assert len(logged[task].read_text().splitlines()) == 2
    assert len((infer_dir / records.inference_filename(task, label[task])).read_text()
               .splitlines()) == 2
  # A subset's file name is no glob to a shell; OutGen's, whole, is the whole split's.
  assert {p.name for p in infer_dir.glob("*_first2.jsonl")} == {
      f"{task}-{split}_first2.jsonl" for task, split in SPLITS.items() if task != "lot_zh_outgen"}
  assert not (infer_dir / "lot_zh_outgen-validation_first2.jsonl").exists()
  # An eval's log of a rank classification keeps no predictions: it is scored from infer's.
  logs = [str(logged[task]) for task in SPLITS if task != "fewclue_eprstmt_k0_rank"]
  infers = [str(infer_dir / records.inference_filename(task, label[task])) for task in SPLITS]
  with paths.use_data_dir(paths.SAMPLE_DIR):
    assert score.main([*logs, *infers, f"--output_dir={tmp_path / 'subset'}",
                       "--module=results_helpers"]) == 0
  rescored = records.read(tmp_path / "subset")
  assert len(rescored) == len(logs) + len(infers)
  for r in rescored:
    assert r.split == label[r.task]
    assert r.metrics == subset[r.task].metrics, r.where
    assert r.data == subset[r.task].data, r.where
  # A subset is other examples than its whole split (OutGen's 2 are its whole split).
  assert {t for t, r in subset.items() if r.data != evaluated[t].data} == set(SPLITS) - {
      "lot_zh_outgen"}
