"""Re-scoring a SentencePiece run's outputs with no override: infer's file and the training
run's own inference log give the eval's numbers, under its fingerprint, in its column."""

import subprocess
import sys

import pytest

import runtime_subprocess as rs
from crosstask import demo
from crosstask import paths
from crosstask import records
from crosstask import score
from crosstask.results import table

TASK = "csl_zh_title_to_category"
COPY = f"{TASK}.csl_sample"  # the task registered for the demo's vocabulary
STEPS = 20


def _run(cmd):
  env = {**rs.env(), paths.DATA_DIR_ENV: str(paths.SAMPLE_DIR)}
  res = subprocess.run(cmd, cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=600)
  assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
  return res.stdout


def _score(capsys, *args) -> str:
  """`python -m crosstask.score ARGS` (in this process: no second TensorFlow start-up)."""
  with paths.use_data_dir(paths.SAMPLE_DIR):
    assert score.main([str(a) for a in args]) == 0, capsys.readouterr().err
  return capsys.readouterr().out


@pytest.mark.slow
def test_rescoring_a_sentencepiece_run_needs_no_override(tmp_path, capsys):
  with paths.use_data_dir(paths.SAMPLE_DIR):
    vocab = demo.train_vocabulary(tmp_path)
  model_dir, infer_dir = tmp_path / "model", tmp_path / "infer"
  model = ["--gin.NUM_EMBEDDINGS=2400", f"--gin.VOCABULARY_PATH='{vocab}'",
           f"--gin.MIXTURE_OR_TASK_NAME='{TASK}'",
           "--gin.MIXTURE_OR_TASK_MODULE='crosstask.tasks.csl'",
           f"--gin.TASK_FEATURE_LENGTHS={demo.TRAIN_LENGTHS!r}"]
  _run([sys.executable, "-m", "crosstask.train", f"--gin_file={demo.DEMO_GIN}", *model,
        f"--gin.MODEL_DIR='{model_dir}'", f"--gin.TRAIN_STEPS={STEPS}",
        f"--gin.EVAL_PERIOD={STEPS}", f"--gin.CHECKPOINT_PERIOD={STEPS}"])
  _run([sys.executable, "-m", "crosstask.infer", "--gin_file=t5_1_1/tiny.gin",
        "--gin_file=runs/infer.gin", *model, f"--gin.CHECKPOINT_PATH='{model_dir}'",
        f"--gin.INFER_OUTPUT_DIR='{infer_dir}'"])
  (evaluated,) = records.read(model_dir / "inference_eval")
  assert (evaluated.task, evaluated.step, evaluated.source) == (COPY, STEPS, "eval")

  log = model_dir / "inference_eval" / f"{COPY}-{STEPS:06d}.jsonl"
  inferred = infer_dir / f"{COPY}-validation.jsonl"
  for path in (inferred, log):  # no --task, --split, --step, --vocabulary or --module
    out = _score(capsys, path)
    assert "definition changed" not in out
    *_, scored = records.read(path.parent)
    assert (scored.task, scored.step, scored.split, scored.fingerprint) == (
        COPY, STEPS, "validation", evaluated.fingerprint)
    assert scored.metrics == pytest.approx(evaluated.metrics, abs=1e-9), path
    assert scored.source == f"score:{path.name}"
  # The plain name with --task scores the vocabulary's copy, not another definition.
  _score(capsys, inferred, f"--task={TASK}", f"--output_dir={tmp_path / 'plain'}")
  (plain,) = records.read(tmp_path / "plain")
  assert (plain.task, plain.fingerprint) == (COPY, evaluated.fingerprint)

  # The re-scored record replaces the eval's in the run's own column, with its interval.
  result = table.build([model_dir, infer_dir], paper="none", all_metrics=True)
  assert {c.name for c in result.columns} == {COPY} and not result.conflicts()
  for column in result.columns:
    for row in result.rows:
      cell = row.cells[column]
      assert cell["mean"] == pytest.approx(evaluated.metrics[column.metric])
      low, high = cell["ci95"]
      assert low <= cell["mean"] <= high and low < high
