"""The prepared GPU session script, end to end on the CPU with the tiny model, and the
GPU benchmark's rows it writes: every row kind, both sides (attention check, training,
decoding, the eval-only job), so the scripts are known to work before a GPU is lent:
with this venv's Python made to see only the packages the device image has or the
session carries (`gpu_image.py`), as run 9's eval-only rows found out the hard way.

One test, one run of `gpu_session.sh --quick`: it is the slowest thing the suite starts
(27 rows: the GPU's 32 less five that differ there only in batch, model or beam
search's kernel row; then `--quick-unrolled`'s one; on the GPU
each row has its own process, here the rows of one framework and XLA flags share one:
208 -> 122 s in the cold suite; HF's compiled rows through Dynamo and AOTAutograd's
eager backend, not Inductor's C++: 136 -> 83 s with torch's compile cache empty, as on a
fresh machine), and a module fixture shared by two tests would run it once per xdist
worker that draws one of them (`make test` is `-n 2`, load-balanced)."""

import json
import os
import pathlib
import subprocess
import tempfile

import numpy as np
import pytest

import flops
import gpu_crosstask
import gpu_image
import gpu_spec
import harness
import profile_step
import roofline
import runtime_subprocess
import test_benchmark_profile
import trace_categories
from gpu_workload import Lengths


# One place per user, not per run: torch.compile's cache (the HF rows) is keyed by where
# torch is imported from, and a new path each run compiled them again (+21 s).
IMAGE_ENV = pathlib.Path(tempfile.gettempdir()) / f"crosstask-gpu-image-{os.getuid()}"


@pytest.mark.slow(seconds=140)
def test_gpu_session_runs_every_row_kind_end_to_end_on_the_cpu(tmp_path):
  # What the next GPU session runs in one call, as --quick: both profiles with their raw
  # traces, crosstask's and HF's training rows, the decoding rows with rooflines and the
  # eval-only job, all under $OUT. Batches of 8 split over the entry points' virtual
  # CPU devices (2: this run cold 180 -> 162 s against conftest's 8).
  env = dict(os.environ, OUT=str(tmp_path / "out"), PYTHON=harness.sys.executable,
             XLA_FLAGS=runtime_subprocess.env()["XLA_FLAGS"],
             **gpu_image.write_env(IMAGE_ENV))
  proc = subprocess.run(["bash", str(harness.ROOT / "benchmarks" / "gpu_session.sh"), "--quick"],
                        capture_output=True, text=True, cwd=str(harness.ROOT), env=env,
                        timeout=3600)
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
  listed = json.loads((tmp_path / "out" / "gpu.json").read_text())["rows"]
  rows = {r["row"]: r for r in listed}
  assert len(rows) == len(listed), "a row was measured twice"  # --quick's sizes repeat rows
  _check_the_session(tmp_path / "out", rows)
  _check_the_rows_measure_what_they_name(rows)
  # The call of its own for the row whose GPU compile takes minutes: each stack
  # unrolled whole trains the scanned step.
  env["OUT"] = str(tmp_path / "unrolled")
  proc = subprocess.run(["bash", str(harness.ROOT / "benchmarks" / "gpu_session.sh"),
                         "--quick-unrolled"], capture_output=True, text=True,
                        cwd=str(harness.ROOT), env=env, timeout=1200)
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
  unrolled = {r["row"]: r for r in json.loads(
      (tmp_path / "unrolled" / "gpu.json").read_text())["rows"]}
  assert set(unrolled) == {"train:tiny:xla:dots_attention:8:scan:unrollfull"}
  whole = unrolled["train:tiny:xla:dots_attention:8:scan:unrollfull"]
  assert whole["status"] == "ok" and whole["settings"]["unroll"] == "full"
  assert whole["loss"] == pytest.approx(rows["train:tiny:xla:dots_attention:8:scan"]["loss"],
                                        rel=1e-4)


def _check_the_session(session, rows):
  """The files the session writes, and every row ok, with its HF twin and ratio."""
  assert {p.name for p in session.iterdir()} == {
      "profile_train.json", "profile_decode.json", "raw", "gpu.json", "log.txt"}
  # At most 8 files come back from the device machine, 2 folders down at most.
  assert len([p for p in session.rglob("*") if p.is_file()]) <= 8
  for kind in ("train", "decode"):
    profile = json.loads((session / f"profile_{kind}.json").read_text())
    assert set(profile["ops_ms_per_step"]) == set(trace_categories.CATEGORIES)
    assert profile["ops_ms_per_step"]["matmul"] > 0 and profile["top_ops"]
    assert (session / "raw" / f"{kind}.xplane.pb.gz").stat().st_size > 0
  assert profile["ms_per_token_step"] > 0  # the decode's: beam search's, the row furthest
  assert profile["row"] == "decode:tiny:4:8"  # from its roofline on the GPU
  # The train step's raw trace reads back to its breakdown and passes profile_step's
  # real-trace checks (the one train-step trace the suite takes).
  train = json.loads((session / "profile_train.json").read_text())
  again = profile_step.from_raw(str(session / "raw"), gpu_spec.parse(train["row"]),
                                Lengths(**train["lengths"]), train["steps"], top=100000)
  assert again["ops_ms_per_step"] == pytest.approx(train["ops_ms_per_step"])
  test_benchmark_profile.check_a_real_cpu_trace_splits_into_every_category(again)
  test_benchmark_profile.check_categories_agree_with_the_name_stack(again)
  assert "idle (span less busy)" in (session / "log.txt").read_text()
  failed = {k: r.get("reason") for k, r in rows.items() if r["status"] != "ok"}
  assert len(rows) == 27 and not failed and rows["check"]["ok"], failed
  assert {r["kind"] for r in rows.values()} == {
      "check", "train", "hf-train", "decode", "hf-decode", "infer", "hf-infer"}
  assert all(r["date"] and len(r["load_1_5_15min_at_start"]) == 3 for r in rows.values())
  for name, row in rows.items():
    if row["kind"] in ("decode", "hf-decode"):
      assert row["step_bytes"]["total"] > 0, name
    if row["framework"] == "crosstask" and row["kind"] != "check":
      assert row["hf_row"] in rows and row["ratio_vs_hf"] > 0, name
    if row["kind"] in ("decode", "infer"):  # against HF's row of the same batch and beams
      twin = rows[row["hf_row"]]
      assert (twin["batch"], twin.get("beams")) == (row["batch"], row.get("beams")), name
  infer = rows["infer:tiny:8:scan"]
  assert 0 < infer["outside_decode_share"] < 1 and infer["examples"] > 0
  assert infer["ratio_vs_hf"] == pytest.approx(
      infer["examples_per_s"] / rows["hf-infer:tiny:8"]["examples_per_s"])


def _check_the_rows_measure_what_they_name(rows):
  """The attention check, the training rows' FLOPs, speed, loss and HF ratio, and the
  decoding rows' bytes per step and HF ratio, each against a hand computation."""
  check = rows["check"]
  assert check["implementation"] == "dot_product" and check["ok"]
  assert check["worst_rel_err"] < 2e-2
  cfg = gpu_crosstask.model_config("tiny")
  train = rows["train:tiny:xla:dots_attention:8:scan"]
  adamw = rows["train:tiny:xla:dots_attention:8:scan:unroll2:adamw"]
  assert adamw["settings"]["optimizer"] == "adamw" and train["settings"]["optimizer"] == "adafactor"
  assert train["model_tflop"] == pytest.approx(flops.train_step(cfg, 8, 32, 16) / 1e12)
  assert train["tokens_per_s"] == pytest.approx(8 * 48 / train["step_s"])
  # Every ratio is against HF's fastest training row, whichever batch and setting.
  hf = [r for r in rows.values() if r["kind"] == "hf-train"]
  fastest = max(hf, key=lambda r: r["tokens_per_s"])
  assert rows["hf-train:tiny:8:adamw:ckpt"]["fused"] is False  # no fused AdamW on a CPU
  for r in (train, adamw):
    assert r["ratio_vs_hf"] == pytest.approx(r["tokens_per_s"] / fastest["tokens_per_s"])
    assert r["hf_row"] == fastest["row"]
    assert r["hf_setting"] == gpu_spec.parse(fastest["row"]).hf_setting()
  for r in (train, adamw):
    assert np.isfinite(r["loss"]) and r["loss"] > 0 and r["mfu"] is None
  # HF's compiled settings, captured by Dynamo as on the GPU, run the same computation
  # (Inductor's code generation is the GPU's alone: a CPU's would be C++, and slow).
  compiled, eager = rows["hf-train:tiny:8:adamw:compile"], rows["hf-train:tiny:8:adamw"]
  assert compiled["compile_backend"] == "aot_eager" and eager["compile_backend"] is None
  assert compiled["loss"] == pytest.approx(eager["loss"], rel=2e-3)
  assert rows["hf-decode:tiny:1:8:compile"]["compile_backend"] == "aot_eager"
  assert rows["hf-decode:tiny:1:8:compile"]["generated_tokens"] == rows["hf-decode:tiny:1:8"][
      "generated_tokens"]
  # Two layers a scan iteration (the GPU profile's default) train the same step as one.
  two = rows["train:tiny:xla:dots_attention:8:scan:unroll2"]
  assert two["settings"]["unroll"] == 2
  assert two["loss"] == pytest.approx(train["loss"], rel=1e-4)
  # Attention's projections of one input, and the gated MLP's two, as one matmul each:
  # the same step.
  for name in ("train:tiny:xla:dots_attention:8:scan:unroll2:fused_qkv",
               "train:tiny:xla:dots_attention:8:scan:unroll2:fused_qkv:fused_mlp"):
    assert rows[name]["settings"]["fused_qkv"] is True, name
    assert rows[name]["loss"] == pytest.approx(two["loss"], rel=1e-3), name
  # The attention row (cudnn_segments on the GPU; its XLA twin here) trains the same
  # step on the same data and parameters as the einsum row.
  fused = rows["train:tiny:dot_product:dots_attention:8:scan"]
  assert fused["settings"]["attention"] == "dot_product"
  assert fused["loss"] == pytest.approx(train["loss"], rel=2e-2)
  # The loop and its conditionals as CUDA graph nodes: XLA flags only, the same step.
  for name, twin in (("train:tiny:dot_product:dots_attention:8:scan:unroll2:graph_while", fused),
                     ("train:tiny:xla:dots_attention:8:scan:unroll2:graph_while", two)):
    graphed = rows[name]
    assert graphed["settings"]["flags"] == "graph_while", name
    assert "+CONDITIONAL" in gpu_spec.parse(name).xla_flags, name
    assert graphed["loss"] == pytest.approx(twin["loss"], rel=1e-4), name
  # Beside every decode row, the bytes a step reads (no bandwidth known for a CPU);
  # HF expands the encoder output per beam, crosstask shares it.
  for beams in (1, 4):
    decode = rows[f"decode:tiny:{beams}:8:scan"]
    assert 8 <= decode["generated_tokens"] <= 8 * 6  # the best decode of each example
    want = roofline.step_bytes(cfg, 8, 32, 3, beams=beams)
    assert decode["step_bytes"] == {**vars(want), "total": want.total}
    assert decode["roofline_ratio"] is None
    assert rows[f"hf-decode:tiny:{beams}:8"]["step_bytes"]["cross_cache"] == beams * decode[
        "step_bytes"]["cross_cache"]
  # The Pallas cross-attention kernel (interpreted here) decodes as many tokens.
  kernel = rows["decode:tiny:1:8:scan:pallas_cross"]
  assert kernel["settings"]["decode_cross_attention"] == "pallas"
  assert kernel["generated_tokens"] == rows["decode:tiny:1:8:scan"]["generated_tokens"]
  # So does a step's query, key and value as one matmul, greedy and beam 4.
  for beams in (1, 4):
    fused = rows[f"decode:tiny:{beams}:8:scan:fused_qkv"]
    assert fused["settings"]["fused_qkv"] is True
    assert fused["generated_tokens"] == rows[f"decode:tiny:{beams}:8:scan"]["generated_tokens"]
  # Beam search with its self-attention caches copied into each step's beam order (the
  # default leaves them in place) decodes as many tokens.
  copied = rows["decode:tiny:4:8:scan:beam_reorder"]
  assert copied["settings"]["beam_self_cache"] == "reorder"
  assert rows["decode:tiny:4:8:scan"]["settings"]["beam_self_cache"] == "indirect"
  assert copied["generated_tokens"] == rows["decode:tiny:4:8:scan"]["generated_tokens"]
  # The ratio is against HF's fastest twin: static, compiled or dynamic cache.
  decode = rows["decode:tiny:1:8:scan"]
  twins = [rows[f"hf-decode:tiny:1:8{cache}"] for cache in ("", ":compile", ":dynamic")]
  assert decode["ratio_vs_hf"] == pytest.approx(
      decode["tokens_per_s"] / max(r["tokens_per_s"] for r in twins))
