"""The prepared GPU session script, end to end on the CPU with the tiny model."""

import json
import os
import subprocess

import pytest

import harness
import trace_categories


@pytest.mark.slow
def test_gpu_session_runs_end_to_end_on_the_cpu(tmp_path):
  # What the next GPU session runs in one call, as --quick: the profile, the fair HF
  # rows, the decoding rows with rooflines and the eval-only job, all under $OUT.
  env = dict(os.environ, OUT=str(tmp_path), PYTHON=harness.sys.executable)
  proc = subprocess.run(["bash", str(harness.ROOT / "benchmarks" / "gpu_session.sh"), "--quick"],
                        capture_output=True, text=True, cwd=str(harness.ROOT), env=env,
                        timeout=3600)
  assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
  assert {p.name for p in tmp_path.iterdir()} >= {
      "profile_step.json", "profile_step.txt", "gpu.json", "gpu.txt"}
  profile = json.loads((tmp_path / "profile_step.json").read_text())
  assert set(profile["ops_ms_per_step"]) == set(trace_categories.CATEGORIES)
  assert profile["ops_ms_per_step"]["matmul"] > 0 and profile["top_ops"]
  assert "idle (span less busy)" in (tmp_path / "profile_step.txt").read_text()
  rows = {r["row"]: r for r in json.loads((tmp_path / "gpu.json").read_text())["rows"]}
  failed = {k: r.get("reason") for k, r in rows.items() if r["status"] != "ok"}
  assert len(rows) == 18 and not failed and rows["check"]["ok"], failed
  for name, row in rows.items():
    if row["kind"] in ("decode", "hf-decode"):
      assert row["step_bytes"]["total"] > 0, name
    if row["framework"] == "crosstask" and row["kind"] != "check":
      assert row["hf_row"] in rows and row["ratio_vs_hf"] > 0, name
  infer = rows["infer:tiny:8:scan"]
  assert 0 < infer["outside_decode_share"] < 1 and infer["examples"] > 0
  assert infer["ratio_vs_hf"] == pytest.approx(
      infer["examples_per_s"] / rows["hf-infer:tiny:8"]["examples_per_s"])
