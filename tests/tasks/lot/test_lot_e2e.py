"""LongLM end to end, as subprocesses: pretrain on the demo corpus, fine-tune on
OutGen, sample with a fixed seed, and score with the LOT metrics."""

import json
import re
import subprocess
import sys

import pytest

import runtime_subprocess as rs

SAMPLE = rs.REPO / "crosstask" / "data" / "sample"
LENGTHS = "--gin.TASK_FEATURE_LENGTHS={'inputs': 64, 'targets': 64}"


def _run(cmd, data_dir):
  # 70 training steps over LongLM's 32,640-piece vocabulary: XLA's optimised code pays
  # for its longer compile (this test cold: 107-118 s under the compile-speed flags, 81-97 without).
  env = rs.env(compile_speed=False)
  env["CROSSTASK_DATA_DIR"] = str(data_dir)
  res = subprocess.run(cmd, cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=300)
  assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
  return res


@pytest.mark.slow(seconds=70)
def test_pretrain_finetune_sample_and_score(tmp_path, official_data):
  vocab = f"--gin.VOCABULARY_PATH='{official_data / 'vocab' / 'sentencepiece_cn.model'}'"
  model = "--gin_file=lot/demo_tiny.gin"
  pre_dir, tuned_dir, eval_dir = tmp_path / "pre", tmp_path / "tuned", tmp_path / "eval"

  # 1. Pretraining on the demo corpus (C3 passages from the data root), both objectives.
  pre = _run([sys.executable, "-m", "crosstask.train", model, "--gin_file=runs/pretrain_longlm.gin",
              vocab, LENGTHS, f"--gin.MODEL_DIR='{pre_dir}'", "--gin.TRAIN_STEPS=40",
              "--gin.BATCH_SIZE=8", "--gin.LEARNING_RATE=0.01", "--gin.EVAL_PERIOD=0",
              "--gin.CHECKPOINT_PERIOD=40", "--gin.LOG_EVERY=10"], official_data)
  per_token = [float(x) for x in re.findall(r"^step \d+/40  loss ([\d.]+)/token  ",
                                            pre.stdout, re.M)]
  # ln(32,640) = 10.4 nats at the start; the unigram statistics alone are worth ~3.
  assert len(per_token) == 4 and per_token[-1] < per_token[0] - 1.0, pre.stdout[-2000:]

  # 2. Fine-tuning on the bundled OutGen fixture from the pretrained parameters,
  #    then sampling (top-k 40, T 0.7, fixed seed) and scoring at the last step.
  _run([sys.executable, "-m", "crosstask.train", model, "--gin_file=lot/finetune_outgen.gin",
        vocab, LENGTHS, f"--gin.MODEL_DIR='{tuned_dir}'", "--gin.TRAIN_STEPS=30",
        "--gin.BATCH_SIZE=8", "--gin.LEARNING_RATE=0.01", "--gin.EVAL_PERIOD=30",
        "--gin.EVAL_STEPS=1", "--gin.CHECKPOINT_PERIOD=30",
        f"--gin.INITIAL_CHECKPOINT_PATH='{pre_dir}/checkpoint_40'"], SAMPLE)

  # 3. crosstask.eval on the fine-tuned checkpoint writes every LOT metric.
  _run([sys.executable, "-m", "crosstask.eval", model, "--gin_file=runs/eval.gin",
        "--gin_file=longlm/sampling.gin", vocab, LENGTHS,
        "--gin.MIXTURE_OR_TASK_NAME='lot_zh_outgen'",
        "--gin.MIXTURE_OR_TASK_MODULE='crosstask.tasks.lot'",
        f"--gin.CHECKPOINT_PATH='{tuned_dir}/checkpoint_30'",
        f"--gin.EVAL_OUTPUT_DIR='{eval_dir}'", "--gin.BATCH_SIZE=8"], SAMPLE)
  [line] = [json.loads(l) for l in (eval_dir / "metrics.jsonl").open()]
  metrics = line["metrics"]
  # The run used LOT's tasks registered for the model's vocabulary (README "Vocabularies").
  assert line["task"] == "lot_zh_outgen.sentencepiece_cn" and line["step"] == 30
  for name in ("bleu-1", "bleu-2", "distinct-1", "distinct-2", "coverage", "order", "overall"):
    assert 0.0 <= metrics[name] <= 100.0, (name, metrics)
  assert metrics["distinct-1"] > 0 and metrics["order"] > 0  # real text was generated

  # The same checkpoint sampled twice (in training, and by crosstask.eval) with the
  # same fixed seed gives the same stories, hence the same scores.
  in_train = [json.loads(l) for l in (tuned_dir / "inference_eval" / "metrics.jsonl").open()]
  assert in_train[-1]["step"] == 30
  assert in_train[-1]["metrics"] == pytest.approx(metrics, abs=1e-9)
