"""`make demo` end to end: vocabulary, datasets, baselines, a short training run, the table."""

import re
import subprocess
import sys

import pytest

import runtime_subprocess


@pytest.mark.slow
def test_demo_runs_end_to_end_on_the_bundled_sample(tmp_path):
  env = runtime_subprocess.env()
  env["CROSSTASK_DATA_DIR"] = str(tmp_path / "ignored")  # the demo pins the bundled sample
  proc = subprocess.run(
      [sys.executable, "-m", "crosstask.demo", "--steps=4", f"--output_dir={tmp_path}"],
      cwd=runtime_subprocess.REPO, env=env, capture_output=True, text=True, timeout=600)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  out = proc.stdout
  assert (tmp_path / "vocab" / "csl_sample.model").is_file()
  assert "csl/benchmark" not in out and "crosstask/data/sample" in out
  assert (tmp_path / "model" / "checkpoint_4").is_dir()
  rows = re.findall(r"^csl_zh_abstract_to_title\s+(lead|tiny T5 \(4 steps\))\s+"
                    r"([\d.]+)\s+([\d.]+)$", out, re.M)
  assert [r[0] for r in rows] == ["lead", "tiny T5 (4 steps)"], out[-2000:]
  lead = [float(x) for x in rows[0][1:]]
  assert 10 < lead[0] < 90  # the same lead baseline the CSL demo test pins down
