"""Early stopping decided afterwards: the best kept checkpoint by a validation metric."""

import json

import pytest

from crosstask.runtime.jobs import best_checkpoint


def _run(tmp_path, rows, kept):
  (tmp_path / "inference_eval").mkdir()
  with open(tmp_path / "inference_eval" / "metrics.jsonl", "w") as f:
    for step, task, metrics in rows:
      f.write(json.dumps({"step": step, "task": task, "metrics": metrics}) + "\n")
  for step in kept:
    (tmp_path / f"checkpoint_{step}").mkdir()
  return tmp_path


def test_best_step_averages_tasks_and_skips_deleted_checkpoints(tmp_path, capsys):
  run = _run(tmp_path, [
      (10, "a", {"accuracy": 40.0}), (10, "b", {"title/rougeL": 10.0}),
      (20, "a", {"accuracy": 60.0}), (20, "b", {"x/accuracy": 50.0}),
      (30, "a", {"accuracy": 90.0}),
      (40, "a", {"accuracy": 55.0}), (40, "b", {"x/accuracy": 55.0}),
  ], kept=[10, 20, 40])
  assert best_checkpoint.scores_by_step(run, "accuracy") == {10: 40.0, 20: 55.0, 30: 90.0, 40: 55.0}
  assert best_checkpoint.best_step(run, "accuracy") == (20, 55.0)  # 30 is gone; tie -> earliest
  assert best_checkpoint.best_step(run, "accuracy", lower_is_better=True) == (10, 40.0)
  path = best_checkpoint.main([f"--model_dir={run}", "--metric=rougeL"])
  assert path.endswith("checkpoint_10") and capsys.readouterr().out.strip().endswith(path)
  with pytest.raises(ValueError, match=r"no metric 'bleu'.*'title/rougeL'"):
    best_checkpoint.scores_by_step(run, "bleu")


def test_clear_errors(tmp_path):
  with pytest.raises(FileNotFoundError, match="EVAL_PERIOD > 0"):
    best_checkpoint.scores_by_step(tmp_path, "accuracy")
  run = _run(tmp_path, [(10, "a", {"accuracy": 1.0})], kept=[])
  with pytest.raises(FileNotFoundError, match="CHECKPOINTS_TO_KEEP=None"):
    best_checkpoint.best_step(run, "accuracy")
