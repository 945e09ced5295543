"""The prepared GPU session script, end to end on the CPU with the tiny model."""

import json
import os
import subprocess

import pytest

import harness
import trace_categories


@pytest.mark.slow
def test_gpu_session_runs_end_to_end_on_the_cpu(tmp_path):
  # What the next GPU session runs in one call, as --quick: both profiles with their raw
  # traces, crosstask's training rows, HF's fastest candidates and the decoding rows.
  env = dict(os.environ, OUT=str(tmp_path), PYTHON=harness.sys.executable)
  proc = subprocess.run(["bash", str(harness.ROOT / "benchmarks" / "gpu_session.sh"), "--quick"],
                        capture_output=True, text=True, cwd=str(harness.ROOT), env=env,
                        timeout=3600)
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
  assert {p.name for p in tmp_path.iterdir()} == {
      "profile_train.json", "profile_decode.json", "raw", "gpu.json", "log.txt"}
  # At most 8 files come back from the device machine, 2 folders down at most.
  assert len([p for p in tmp_path.rglob("*") if p.is_file()]) <= 8
  for kind in ("train", "decode"):
    profile = json.loads((tmp_path / f"profile_{kind}.json").read_text())
    assert set(profile["ops_ms_per_step"]) == set(trace_categories.CATEGORIES)
    assert profile["ops_ms_per_step"]["matmul"] > 0 and profile["top_ops"]
    assert (tmp_path / "raw" / f"{kind}.xplane.pb.gz").stat().st_size > 0
  assert profile["ms_per_token_step"] > 0  # the decode's
  assert "idle (span less busy)" in (tmp_path / "log.txt").read_text()
  listed = json.loads((tmp_path / "gpu.json").read_text())["rows"]
  rows = {r["row"]: r for r in listed}  # (--quick's T5 1.1 large row is the tiny model's)
  failed = {k: r.get("reason") for k, r in rows.items() if r["status"] != "ok"}
  assert len(listed) == 10 and not failed, failed
  for name, row in rows.items():
    if row["kind"] in ("decode", "hf-decode"):
      assert row["step_bytes"]["total"] > 0, name
  # Ratios only against HF rows of the same work: every training row has one, and the
  # greedy decode at the batch HF decoded.
  for name, row in rows.items():
    if row["framework"] == "crosstask" and (row["kind"] == "train" or name == "decode:tiny:1:8:scan"):
      assert row["hf_row"] in rows and row["ratio_vs_hf"] > 0, name
  assert "ratio_vs_hf" not in rows["decode:tiny:4:8:scan"]
