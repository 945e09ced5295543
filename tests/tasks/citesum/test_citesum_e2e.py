"""DONE-WHEN: a tiny model trained on the CiteSum fixture, then `crosstask.eval` zero-shot on
SciTLDR with the "This paper" decoder prompt and REF postprocessing, as real subprocesses."""

import json
import subprocess
import sys

import pytest

import runtime_subprocess as rs
from crosstask import metrics as ev
from crosstask import paths
from crosstask.tasks.citesum import readers
from crosstask.tasks.citesum import ref

TASK = "scitldr_a_abstract_to_tldr_prompt_this_paper"
MAX_TARGET = 40


def _run(cmd):
  env = {**rs.env(), "CROSSTASK_DATA_DIR": str(paths.SAMPLE_DIR)}
  res = subprocess.run(cmd, cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=400)
  assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
  return res


@pytest.mark.slow(seconds=17)
def test_train_on_citesum_then_zero_shot_scitldr_with_prompt(tmp_path):
  model_dir, eval_dir = tmp_path / "model", tmp_path / "eval"
  _run([sys.executable, "-m", "crosstask.train", f"--gin_file={rs.TINY}",
        "--gin_file=runs/finetune.gin", f"--gin.MODEL_DIR='{model_dir}'",
        "--gin.MIXTURE_OR_TASK_MODULE='crosstask.tasks.citesum'",
        "--gin.MIXTURE_OR_TASK_NAME='citesum_abstract_to_tldr'",
        "--gin.TASK_FEATURE_LENGTHS={'inputs': 256, 'targets': 64}",
        "--gin.TRAIN_STEPS=3", "--gin.BATCH_SIZE=8", "--gin.EVAL_PERIOD=0",
        "--gin.CHECKPOINT_PERIOD=3", "--gin.LEARNING_RATE=0.01"])
  assert (model_dir / "checkpoint_3").is_dir()

  _run([sys.executable, "-m", "crosstask.eval", f"--gin_file={rs.TINY}",
        "--gin_file=citesum/scitldr_zeroshot_prompt.gin",
        f"--gin.CHECKPOINT_PATH='{model_dir}'", f"--gin.EVAL_OUTPUT_DIR='{eval_dir}'",
        "--gin.EVAL_SPLIT='validation'", "--gin.BATCH_SIZE=8",
        f"--gin.TASK_FEATURE_LENGTHS={{'inputs': 256, 'targets': {MAX_TARGET}}}"])
  (line,) = [json.loads(l) for l in (eval_dir / "metrics.jsonl").open()]
  assert line["task"] == TASK and line["step"] == 3
  keys = {f"{p}rouge{n}" for p in ("", "author_", "mean_") for n in ("1", "2", "L")}
  assert set(line["metrics"]) == keys

  rows = [json.loads(l) for l in (eval_dir / f"{TASK}-000003.jsonl").open()]
  dev = list(readers.read_scitldr("validation", paths.SAMPLE_DIR))
  assert len(rows) == len(dev) == 3
  for row, record in zip(rows, dev):
    # The decode starts from the forced prompt, which counts inside the length limit
    # (byte vocabulary: one id per byte, plus EOS).
    assert row["output"].startswith("This paper")
    assert len(row["output"].encode()) + 1 <= MAX_TARGET
    assert row["prediction"] == ref.strip_ref(row["output"])  # the paper's REF rule
    assert row["target"] == record["references"]  # every TLDR reaches the metric
  # The metric is SciTLDR's multi-reference rule over those postprocessed predictions.
  expected = ev.rouge_multi([r["target"] for r in rows], [r["prediction"] for r in rows])
  assert line["metrics"] == pytest.approx(expected)
