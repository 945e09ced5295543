"""The benchmark scripts' own logic: the GPU script's both sides (on the CPU), the
fine-tuning benchmark's unpacking, and the harness's alternation."""

import json
import subprocess
import sys

import numpy as np
import pytest

import finetune_csl
import flops
import gpu_longlm
import harness
import run_all


@pytest.mark.slow
def test_gpu_script_runs_both_sides_on_the_cpu(tmp_path):
  # The GPU benchmark has no GPU here; its CPU mode runs the same code on a tiny model,
  # so the script is known to work before a GPU is lent. Batch 8: the tests' 8 virtual
  # CPU devices (conftest) split it data-parallel.
  out = tmp_path / "gpu_longlm.json"
  gin = "crosstask/gin/t5_1_1/tiny.gin"
  proc = subprocess.run(
      [sys.executable, str(harness.ROOT / "benchmarks" / "gpu_longlm.py"), "--platform=cpu",
       f"--model_gin={gin}", "--batch=8", "--inputs=24", "--targets=8", "--steps=2",
       f"--out={out}"], capture_output=True, text=True, cwd=str(harness.ROOT), timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  result = json.loads(out.read_text())
  cfg = gpu_longlm._model_config(gin)
  assert result["setup"]["model_flops_per_step"] == flops.train_step(cfg, 8, 24, 8)
  for side in ("crosstask", "hf"):
    r = result["results"][side]
    assert r["reps"] == 2 and r["median_s"] > 0 and r["device"] == "cpu"
    assert np.isfinite(r["loss"]) and r["loss"] > 0
    assert r["mfu"] is None  # no published bf16 peak for a CPU
  assert result["ratio"] == (result["results"]["crosstask"]["per_s_median"]
                             / result["results"]["hf"]["per_s_median"])


def test_gpu_script_without_a_gpu_says_so_and_exits_0(capsys, monkeypatch):
  # Pinned, so that on a machine with a GPU this test never starts the real benchmark.
  monkeypatch.setattr(gpu_longlm, "gpu_available", lambda: (False, "no GPU among jax.devices()"))
  assert gpu_longlm.main([]) == 0
  assert "no GPU on this machine" in capsys.readouterr().out


def test_peak_lookup_takes_the_most_specific_name():
  assert gpu_longlm.peak_flops("NVIDIA H100 PCIe") == 756e12
  assert gpu_longlm.peak_flops("NVIDIA H100 80GB HBM3") == 989e12
  assert gpu_longlm.peak_flops("NVIDIA H200") == 989e12
  assert gpu_longlm.peak_flops("cpu") is None


def test_unpack_reads_each_example_back_out_of_a_packed_batch():
  # Row 0 holds examples 1 and 2; example 3 of row 1 is empty (no tokens) and skipped.
  batch = {
      "encoder_input_tokens": np.array([[5, 6, 1, 7, 1, 0], [8, 1, 0, 0, 0, 0]]),
      "encoder_segment_ids": np.array([[1, 1, 1, 2, 2, 0], [1, 1, 0, 0, 0, 0]]),
      "decoder_target_tokens": np.array([[9, 1, 4, 1], [3, 3, 1, 0]]),
      "decoder_segment_ids": np.array([[1, 1, 2, 2], [2, 2, 2, 0]]),
  }
  got = [(x.tolist(), y.tolist()) for x, y in finetune_csl.unpack(batch)]
  assert got == [([5, 6, 1], [9, 1]), ([7, 1], [4, 1]), ([8, 1], []), ([], [3, 3, 1])]


class _Recorder:
  def __init__(self, name, log):
    self.framework, self.log = name, log

  def call(self, op):
    self.log.append(self.framework)
    return {"seconds": float(len(self.log))}


def test_alternate_flips_the_order_every_round():
  log = []
  times = harness.alternate([_Recorder("a", log), _Recorder("b", log)], reps=3)
  assert log == ["a", "b", "b", "a", "a", "b"]
  assert times == {"a": [1.0, 4.0, 5.0], "b": [2.0, 3.0, 6.0]}
  s = harness.summary([3.0, 1.0, 2.0], units=6)
  assert (s["median_s"], s["min_s"], s["max_s"], s["per_s_median"]) == (2.0, 1.0, 3.0, 3.0)
  assert s["seconds"] == [3.0, 1.0, 2.0]  # each repetition, in the order it ran


def test_loop_free_bound_is_hf_decoding_over_our_encoder():
  import step_and_decode

  def row(model, kind, batch, ours, theirs):
    return {"model": model, "kind": kind, "batch": batch, "crosstask": {"median_s": ours},
            "hf": {"median_s": theirs}}
  rows = [row("small", "encode", 32, 2.0, 2.5), row("small", "greedy", 32, 5.0, 6.0),
          row("small", "beam4", 8, 3.0, 4.0), row("tiny", "greedy", 32, 1.0, 2.0)]
  step_and_decode.add_loop_free_bounds(rows)
  assert rows[1]["ratio_if_loop_free"] == 3.0  # HF 6.0 s over our encoder's 2.0 s
  assert "ratio_if_loop_free" not in rows[0]
  assert "ratio_if_loop_free" not in rows[2]  # no batch-8 encoder row measured
  assert "ratio_if_loop_free" not in rows[3]  # no tiny encoder row measured


def test_results_table_never_rounds_a_miss_up_to_the_goal():
  assert run_all.ratio_text(1.996, 2.0) == "1.996x"
  assert run_all.ratio_text(1.93, 2.0) == "1.93x"
  assert run_all.ratio_text(2.004, 2.0) == "2.00x"
  assert run_all.ratio_text(1.2999, 1.3) == "1.299x"


def test_cpu_model_tells_machines_with_the_same_name_apart():
  zen5 = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
          "model name\t: AMD EPYC\nflags\t\t: fpu sse avx2 fma avx512f avx512_bf16\n\n"
          "processor\t: 1\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n")
  older = zen5.replace("26", "25").replace(" avx512f avx512_bf16", "")
  assert harness.cpu_model(zen5) == "AMD EPYC (family 26, model 2, AVX-512)"
  assert harness.cpu_model(older) == "AMD EPYC (family 25, model 2, AVX2)"
  assert harness.cpu_model("model name\t: Some CPU\n") == "Some CPU"
