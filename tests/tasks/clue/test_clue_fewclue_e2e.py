"""FewCLUE protocol end to end, as subprocesses: train on train_0, select on dev_0,
report test_public with rank classification, write the leaderboard file for test."""

import json
import shutil
import subprocess
import sys

import pytest

import runtime_subprocess as rs
from crosstask import paths
from crosstask.metrics import rank_classification
from crosstask.runtime.config import saved_run
from crosstask.runtime.jobs import best_checkpoint
from crosstask.tasks.clue import submissions

TASK = "fewclue_eprstmt_rank"
FLAGS = [f"--gin.MIXTURE_OR_TASK_NAME='{TASK}'", "--gin.MIXTURE_OR_TASK_MODULE='crosstask.tasks.clue'",
         "--gin.TASK_FEATURE_LENGTHS={'inputs': 96, 'targets': 8}"]


def _data_root(tmp_path):
  """train_0/dev_0: the real FewCLUE files when the data root has them, else the fixtures;
  test_public/test: the fixtures (the labelled test_public is not in the shared data)."""
  root = tmp_path / "data"
  folder = root / "fewclue" / "eprstmt"
  folder.mkdir(parents=True)
  sample = paths.SAMPLE_DIR / "fewclue" / "eprstmt"
  real = paths.data_dir() / "fewclue" / "eprstmt" if paths.data_dir() else None
  for name in ("train_0", "dev_0", "test_public", "test"):
    source = real / f"{name}.json" if real and name in ("train_0", "dev_0") else None
    shutil.copy(source if source and source.is_file() else sample / f"{name}.json",
                folder / f"{name}.json")
  return root


def _run(cmd, root):
  env = {**rs.env(), paths.DATA_DIR_ENV: str(root)}
  res = subprocess.run(cmd, cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=300)
  assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
  return res


def _entry(module, run_gin, *flags):
  return [sys.executable, "-m", module, f"--gin_file={rs.TINY}", f"--gin_file={run_gin}",
          *FLAGS, *flags]


@pytest.mark.slow(seconds=30)
def test_fewclue_protocol_with_rank_classification(tmp_path, capsys):
  root = _data_root(tmp_path)
  model_dir = tmp_path / "model"
  _run(_entry("crosstask.train", "runs/finetune.gin", f"--gin.MODEL_DIR='{model_dir}'",
              "--gin.TRAIN_STEPS=16", "--gin.BATCH_SIZE=8", "--gin.CHECKPOINT_PERIOD=8",
              "--gin.EVAL_PERIOD=8", "--gin.EVAL_STEPS=2", "--gin.LEARNING_RATE=0.01",
              "--gin.TRAIN_SPLIT='train_0'", "--gin.EVAL_SPLIT='dev_0'"), root)
  # Selection on dev_0: rank-classification accuracy of every checkpoint, the best kept.
  dev = [json.loads(l) for l in (model_dir / "inference_eval" / "metrics.jsonl").open()]
  n_dev = sum(1 for _ in (root / "fewclue" / "eprstmt" / "dev_0.json").open())
  assert [(m["step"], m["task"]) for m in dev] == [(8, TASK), (16, TASK)]
  for m in dev:  # accuracy over questions, not over (question, option) rows
    assert round(m["metrics"]["accuracy"] * n_dev / 100, 6).is_integer()
  best, _ = best_checkpoint.best_step(str(model_dir), "accuracy")  # ties: the earliest
  assert best == max(dev, key=lambda m: (m["metrics"]["accuracy"], -m["step"]))["step"]
  checkpoint = model_dir / f"checkpoint_{best}"
  # What the test_public guard reads (a checkpoint of a CLUE-trained run would be refused).
  assert saved_run.trained_on(checkpoint) == [TASK]

  eval_dir = tmp_path / "eval"
  _run(_entry("crosstask.eval", "runs/eval.gin", f"--gin.CHECKPOINT_PATH='{checkpoint}'",
              f"--gin.EVAL_OUTPUT_DIR='{eval_dir}'", "--gin.EVAL_SPLIT='test_public'"), root)
  (report,) = [json.loads(l) for l in (eval_dir / "metrics.jsonl").open()]
  assert (report["step"], report["task"]) == (best, TASK)
  assert report["metrics"]["accuracy"] in {0.0, 25.0, 50.0, 75.0, 100.0}  # 4 fixture questions

  infer_dir = tmp_path / "infer"
  _run(_entry("crosstask.infer", "runs/infer.gin", f"--gin.CHECKPOINT_PATH='{checkpoint}'",
              f"--gin.INFER_OUTPUT_DIR='{infer_dir}'", "--gin.INFER_SPLIT='test'"), root)
  predictions = infer_dir / f"{TASK}-test.jsonl"
  rows = [json.loads(l) for l in predictions.open()]
  assert [r["targets"] for r in rows] == ["正面", "负面"] * 2  # every option of both questions
  with paths.use_data_dir(root):  # the writer's command line, run in this process
    submissions.main([f"--task={TASK}", "--split=test", f"--predictions={predictions}",
                      f"--output_dir={tmp_path / 'submit'}"])
  path = tmp_path / "submit" / "eprstmt_predict.json"
  assert str(path) in capsys.readouterr().out
  lines = [json.loads(l) for l in path.open()]
  # The chosen labels are the best-scored options of the infer rows.
  chosen = rank_classification.rank_choices(
      [(i // 2, i % 2, False) for i in range(4)], [r["target_score"] for r in rows])
  assert lines == [{"id": q, "label": ("Positive", "Negative")[chosen[q][0]]} for q in (0, 1)]
