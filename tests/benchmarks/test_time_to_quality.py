"""The time-to-quality benchmark: its arithmetic, its example stream, and (slow) the
whole pipeline with the tiny model on the CPU, crosstask against HF PyTorch."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import harness
import time_to_quality as ttq
import ttq_data
import ttq_side
from crosstask.tasks.common import readers


def _curve(losses, seconds, step=10, tokens=100):
  return [{"step": i * step, "tokens": i * tokens, "val_loss": l, "wall_s": s}
          for i, (l, s) in enumerate(zip(losses, seconds))]


def test_gap_is_the_largest_relative_one_after_warm_up():
  theirs = _curve([6.0, 4.0, 3.0, 2.0], [1, 2, 3, 4])
  ours = _curve([6.0, 5.0, 3.3, 2.1], [1, 2, 3, 4])
  # Step 10 (gap 0.25) is inside the warm-up; of the rest step 20 has 0.3/3.0.
  assert ttq.max_rel_loss_gap(ours, theirs, warmup_steps=10) == (pytest.approx(0.1), 20)
  assert ttq.max_rel_loss_gap(ours, theirs, warmup_steps=0) == (pytest.approx(0.25), 10)
  with pytest.raises(ValueError, match="not comparable"):
    ttq.max_rel_loss_gap(ours, [dict(p, tokens=p["tokens"] + 1) for p in theirs], 0)
  with pytest.raises(ValueError, match="no evaluation point after"):
    ttq.max_rel_loss_gap(ours, theirs, warmup_steps=30)


def test_time_ratio_interpolates_the_crossing_of_hf_s_final_loss():
  theirs = _curve([6.0, 4.0, 3.0, 2.0], [10, 20, 30, 40])
  # Ours crosses 2.0 between 4 s (2.5) and 6 s (1.5): at 5 s; HF took 40 s.
  ours = _curve([6.0, 2.5, 1.5, 1.0], [2, 4, 6, 8])
  assert ttq.time_ratio(ours, theirs, rtol=0.0) == (pytest.approx(5 / 40), None)
  # Within rtol of HF's final loss counts as reached: 2.002 at 8 s.
  close = _curve([6.0, 3.0, 2.5, 2.002], [2, 4, 6, 8])
  assert ttq.time_ratio(close, theirs, rtol=1e-3) == (pytest.approx(8 / 40), None)
  ratio, why = ttq.time_ratio(close, theirs, rtol=0.0)
  assert ratio is None and "never came within 0 of HF's final validation loss 2.00000" in why
  assert "its lowest: 2.00200" in why


def test_the_two_sides_schedules_agree_at_every_step():
  from crosstask.runtime.state import optimizers
  steps, warmup, lr = 50, 7, 3e-3
  schedule = optimizers.linear_decay(base_learning_rate=lr, total_steps=steps,
                                     warmup_steps=warmup)
  want = np.asarray([schedule(s) for s in range(steps + 3)], np.float64)
  got = [ttq_side.learning_rate(s, lr, warmup, steps) for s in range(steps + 3)]
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
  assert got[0] == 0.0 and got[warmup] == lr and got[steps] == 0.0


def test_evaluation_points_start_at_the_shared_weights_and_end_at_the_last_step():
  assert ttq_side.eval_steps(20, 8) == [0, 8, 16, 20]
  batch = ttq_side.batch_arrays(np.array([[5, 6, 1]], np.uint16), np.array([[7, 8, 1]], np.uint16))
  assert batch["decoder_input_tokens"].tolist() == [[0, 7, 8]]
  assert {v.dtype for v in batch.values()} == {np.dtype(np.int32)}


def _write_benchmarks(root):
  (root / "bench_a").mkdir(parents=True)
  (root / "bench_b" / "sub").mkdir(parents=True)
  (root / "bench_a" / "dev.tsv").write_text(
      "to title\t水运工程项目作为我国航运和水利的重要组成部分\tA title in English words\n")
  (root / "bench_a" / "few.json").write_text(  # JSON lines under a .json name (FewCLUE)
      '{"sentence": "为何农民工每天日夜加班却没有收入", "label": "news_entertainment", "id": 3}\n'
      '{"sentence": "为何农民工每天日夜加班却没有收入", "label": "news_car", "id": 4}\n')
  (root / "bench_b" / "sub" / "whole.json").write_text(json.dumps(
      {"data": [{"context": "A whole JSON document holds this passage.", "id": "DEV_0_QUERY"}]}))
  (root / "bench_b" / "lines.jsonl").write_text(
      '{"source": ["Each sentence of a source list counts.", "short"]}\n')
  (root / "bench_b" / "labels.txt").write_text("a label file is not benchmark text\n")


def test_benchmark_texts_reads_every_format_once_per_distinct_text(tmp_path):
  _write_benchmarks(tmp_path)
  texts, stats = ttq_data.benchmark_texts(tmp_path)
  assert texts == ["水运工程项目作为我国航运和水利的重要组成部分", "A title in English words",
                   "为何农民工每天日夜加班却没有收入", "Each sentence of a source list counts.",
                   "A whole JSON document holds this passage."]
  assert stats["bench_a"] == {"files": 2, "texts": 3, "bytes": sum(
      len(t.encode()) for t in texts[:3])}
  assert stats["bench_b"]["files"] == 2 and stats["bench_b"]["texts"] == 2


def test_benchmark_texts_name_the_file_and_line_of_bad_json(tmp_path):
  _write_benchmarks(tmp_path)
  (tmp_path / "bench_b" / "lines.jsonl").write_text('{"source": "fine text here, ok"}\n{"bad": \n')
  with pytest.raises(readers.DataError, match=r"lines\.jsonl:2: invalid JSON"):
    ttq_data.benchmark_texts(tmp_path)


def test_byte_ids_are_the_byte_vocabulary_s():
  from crosstask import vocabularies
  text = "SciTLDR 与 CSL: 摘要->标题"
  assert ttq_data.byte_ids(text).tolist() == vocabularies.get("bytes").encode(text)


def test_example_stream_is_seeded_span_corrupted_and_holds_out_whole_texts():
  # Text i repeats one letter of its own, so a token tells which text it came from.
  rng = np.random.default_rng(0)
  letters = [chr(c) for c in range(ord("!"), ord("~") + 1)]
  texts = [letter * int(n) for letter, n in zip(letters, rng.integers(20, 60, len(letters)))]
  a = ttq_data.example_stream(texts, num_train=64, num_val=8, raw_length=70, seed=1)
  b = ttq_data.example_stream(texts, num_train=64, num_val=8, raw_length=70, seed=1)
  c = ttq_data.example_stream(texts, num_train=64, num_val=8, raw_length=70, seed=2)
  assert all(np.array_equal(a[k], b[k]) for k in a)
  assert not np.array_equal(a["train_inputs"], c["train_inputs"])
  inputs, targets = 70 - 10 + 3 + 1, 10 + 3 + 1  # 10 noise tokens in 3 spans, EOS
  assert a["train_inputs"].shape == (64, inputs) and a["train_targets"].shape == (64, targets)
  assert a["val_inputs"].shape == (8, inputs) and a["val_targets"].shape == (8, targets)
  assert (a["train_inputs"][:, -1] == ttq_data.EOS).all()
  assert (a["val_targets"][:, 0] == ttq_data.VOCAB_SIZE - 1).all()

  def letters_of(split):
    tokens = np.concatenate([a[f"{split}_inputs"].ravel(), a[f"{split}_targets"].ravel()])
    return set(tokens[(tokens > ttq_data.EOS) & (tokens < 259)].tolist())
  # 64 rows of 70 tokens take more than one pass over the ~3,600 training tokens,
  # and never a letter of a validation text.
  assert letters_of("val") and letters_of("train")
  assert not letters_of("val") & letters_of("train")
  assert len(letters_of("val") | letters_of("train")) == len(texts)
  with pytest.raises(ValueError, match="too few"):
    ttq_data.example_stream(texts[:3], num_train=8, num_val=8, raw_length=70)


@pytest.mark.skipif(os.path.exists("/dev/nvidia0"), reason="a GPU is here: the run would start")
def test_without_a_gpu_the_default_run_says_so_and_writes_nothing(tmp_path, capsys):
  assert ttq.main([f"--out={tmp_path}"]) == 0
  assert "no GPU here" in capsys.readouterr().out and not list(tmp_path.iterdir())


@pytest.mark.slow(seconds=16)  # Trains the tiny model in both frameworks, each in its own process.
def test_pipeline_trains_both_sides_alike_on_the_cpu(tmp_path):
  # float32 on both sides: the two frameworks then differ only in summation order
  # (~1e-7 relative per op); their validation curves stayed within 0.7-1.4e-6 on these
  # settings, so 1e-5 leaves 7x room and still fails an HF side without weight decay
  # (2.9e-5) or with its schedule one step ahead (1.7e-2). bfloat16 keeps 8 mantissa
  # bits (2**-8 ~ 4e-3 per rounding; the same run in bf16 gave 2.5e-4): a bf16 run is
  # held to the GPU goal's 0.02 instead.
  steps, warmup = 30, 3
  proc = subprocess.run(
      [sys.executable, str(harness.ROOT / "benchmarks" / "time_to_quality.py"), "--device=cpu",
       "--model=tiny", "--dtype=float32", f"--steps={steps}", "--batch=8", "--lengths=64/16",
       "--eval_every=6", f"--warmup={warmup}", "--val_batches=2", "--threads=1",
       "--residual_dtype=float32",  # a no-op in float32; passed through and recorded
       f"--out={tmp_path}"],
      capture_output=True, text=True, cwd=str(harness.ROOT), timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  result = json.loads((tmp_path / "time_to_quality.json").read_text())
  assert (tmp_path / "time_to_quality.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert result["device"] == "cpu" and "CPU guard" in result["note"]
  assert result["settings"]["optimizer"]["warmup_steps"] == warmup
  assert result["settings"]["crosstask_config"]["residual_dtype"] == "float32"
  assert result["curves"]["crosstask"]["residual_dtype"] == "float32"
  assert result["corpus"]["texts"] > 0 and result["machine"]["cpu_model"]
  curves = {name: result["curves"][name]["points"] for name in ("crosstask", "hf")}
  for name, points in curves.items():
    assert [p["step"] for p in points] == [0, 6, 12, 18, 24, 30], name
    losses = [p["val_loss"] for p in points]
    assert losses[-1] < losses[0] - 0.5 and losses[-1] <= min(losses[:-1]) + 1e-3, (name, losses)
    seconds = [p["wall_s"] for p in points]
    assert seconds == sorted(seconds) and seconds[0] > 0, (name, seconds)
  # One starting point: the same weights and validation set give the same first loss.
  assert curves["crosstask"][0]["val_loss"] == pytest.approx(curves["hf"][0]["val_loss"], rel=1e-6)
  gap, step = ttq.max_rel_loss_gap(curves["crosstask"], curves["hf"], warmup)
  assert result["max_rel_loss_gap"] == pytest.approx(gap) and result["max_rel_loss_gap_at_step"] == step
  assert gap < 1e-5, gap
  ratio, why = ttq.time_ratio(curves["crosstask"], curves["hf"])
  assert result["time_ratio"] == (pytest.approx(ratio) if ratio is not None else None)
  assert result["time_ratio_reason"] == why and (ratio is None) == (why is not None)
  assert result["time_ratio_at_equal_steps"] == pytest.approx(
      curves["crosstask"][-1]["wall_s"] / curves["hf"][-1]["wall_s"])
