"""The benchmark scripts' own logic: the GPU rows' parsing, ratios and tables (the rows
themselves run on the CPU in test_benchmark_session.py), the fine-tuning benchmark's
unpacking, the beam-cache comparison, and the harness's alternation."""

import json
import pathlib
import types

import numpy as np
import pytest

import beam_cache
import finetune_csl
import gpu
import gpu_crosstask
import gpu_spec
import gpu_workload
import harness
import run_all


def test_rows_parse_once_into_typed_settings():
  row = gpu_spec.parse("train:longlm_large:cudnn:dots:64:lhs:scan:adamw")
  assert (row.model, row.attention, row.remat, row.batch, row.flags, row.scan, row.optimizer) == (
      "longlm_large", "cudnn", "dots", 64, "lhs", True, "adamw")
  assert row.xla_flags == gpu_spec.XLA_FLAG_SETS["lhs"] and row.framework == "crosstask"
  whole = gpu_spec.parse("train:longlm_large:cudnn:dots_attention:64:scan:unrollfull")
  assert (whole.unroll, whole.settings()["unroll"]) == ("full", "full")
  assert gpu_crosstask.row_config(whole).scan_unroll == "full"
  beams = gpu_spec.parse("decode:longlm_large:4:32:scan:beam_reorder")
  assert gpu_crosstask.row_config(beams).beam_self_cache == "reorder"
  assert gpu_crosstask.row_config(gpu_spec.parse("decode:longlm_large:4:32:scan")
                                  ).beam_self_cache == "indirect"
  old = gpu_spec.parse("train:longlm_large:cudnn:none:16:default:scan")  # gpu.json's rows
  assert (old.flags, old.scan, old.optimizer) == ("default", True, "adafactor")
  hf = gpu_spec.parse("hf-train:t5_1_1_base:32:ckpt:adamw:compile")
  assert (hf.batch, hf.optimizer, hf.checkpointing, hf.compiled) == (32, "adamw", True, True)
  assert hf.hf_setting() == ("batch 32, AdamW (fused on CUDA), gradient checkpointing, "
                             "torch.compile")
  dec = gpu_spec.parse("hf-decode:longlm_large:4:32:dynamic")
  assert (dec.beams, dec.batch, dec.cache, dec.work) == (4, 32, "dynamic", "decode")
  assert dec.settings() == {"model": "longlm_large", "batch": 32, "beams": 4,
                            "cache": "dynamic", "compiled": False}
  for bad, words in [("train:tiny:xla:none", "needs MODEL:ATTENTION:REMAT:BATCH"),
                     ("train:tiny:xla:none:8:fast", "no option 'fast'"),
                     ("decode:tiny:two:8", "beams must be a positive integer"),
                     ("hf-decode:tiny:1:8:dynamic:compile", "needs the static cache"),
                     ("train:gpt2:xla:none:8", "unknown model 'gpt2'"),
                     ("tune:tiny", "unknown kind 'tune'")]:
    with pytest.raises(ValueError, match=words) as e:
      gpu_spec.parse(bad)
    assert repr(bad) in str(e.value)


def test_gpu_script_without_a_gpu_says_so_and_exits_0(capsys):
  # conftest pins JAX to the CPU, so this never starts the real benchmark.
  assert gpu.main(["--rows", "check"]) == 0
  assert "no GPU on this machine" in capsys.readouterr().out


def test_a_row_named_twice_is_measured_once_where_first_named():
  texts = ["decode:tiny:1:8", "train:tiny:xla:none:8", "decode:tiny:1:8", "check",
           "train:tiny:xla:none:8"]
  assert [r.text for r in gpu.requested(texts)] == [
      "decode:tiny:1:8", "train:tiny:xla:none:8", "check"]
  with pytest.raises(ValueError):
    gpu.requested(["check", "train:tiny"])


def test_shared_processes_group_rows_by_framework_and_xla_flags():
  texts = ["train:tiny:xla:none:8", "hf-train:tiny:8", "decode:tiny:1:8:graph_while",
           "check", "hf-decode:tiny:1:8", "decode:tiny:1:8"]
  specs = [gpu_spec.parse(t) for t in texts]
  assert [[r.text for r in g] for g in gpu.process_groups(specs, share=False)] == [
      [t] for t in texts]
  assert [[r.text for r in g] for g in gpu.process_groups(specs, share=True)] == [
      ["train:tiny:xla:none:8", "check", "decode:tiny:1:8"],
      ["hf-train:tiny:8", "hf-decode:tiny:1:8"], ["decode:tiny:1:8:graph_while"]]


def test_a_child_s_finished_objects_survive_its_crash_and_its_time_limit():
  code = ("import json, sys, time\n"
          "print(json.dumps({'n': 1})); print('{not json'); print(json.dumps({'n': 2}))\n"
          "sys.stdout.flush()\n")
  env = dict(harness.os.environ)
  ok = harness.run_child_lines([harness.sys.executable, "-c", code], env, 60)
  assert ok == ([{"n": 1}, {"n": 2}], None)
  assert harness.run_child([harness.sys.executable, "-c", code], env, 60) == {"n": 2}
  crash, error = harness.run_child_lines(
      [harness.sys.executable, "-c", code + "sys.exit('row 3 broke')"], env, 60)
  assert crash == [{"n": 1}, {"n": 2}] and error["status"] == "failed"
  assert error["error"].startswith("exit 1 after") and "row 3 broke" in error["error"]
  late, error = harness.run_child_lines(
      [harness.sys.executable, "-c", code + "time.sleep(60)"], env, 1)
  assert late == [{"n": 1}, {"n": 2}] and error["status"] == "timeout"
  # A last line that is not a JSON object is a failure, whatever came before it.
  _, error = harness.run_child_lines(
      [harness.sys.executable, "-c", code + "print('done')"], env, 60)
  assert error["status"] == "failed"


def test_rows_after_a_shared_process_s_crash_are_not_run_not_failed(monkeypatch):
  rows = [gpu_spec.parse(t) for t in ("check", "decode:tiny:1:8", "train:tiny:xla:none:8")]
  first = {"raw": {"ok": True, "worst_rel_err": 0.0}, "date": "2026-11-27T00:00:00+00:00",
           "wall_s": 1.5, "load_1_5_15min_at_start": [0, 0, 0],
           "load_1_5_15min_at_end": [0, 0, 0]}
  crashed = {"error": "exit -11 after 9 s: Segmentation fault", "status": "failed"}
  monkeypatch.setattr(harness, "run_child_lines", lambda cmd, env, timeout: ([first], crashed))
  args = gpu.parse_args(["--platform=cpu", "--lengths=32/16", "--new_tokens=6", "--steps=1"])
  check, decode, train = gpu.measure(rows, args, 60)
  assert (check["status"], check["ok"], check["wall_s"]) == ("ok", True, 1.5)
  assert (decode["status"], decode["reason"]) == ("failed", crashed["error"])
  assert train["status"] == "not_run" and train["reason"] == (
      "not run: its process ended on decode:tiny:1:8")
  assert all(r["date"] and len(r["load_1_5_15min_at_end"]) == 3 for r in (decode, train))


def test_beam_cache_times_both_settings_on_the_same_tokens(tmp_path, monkeypatch, capsys):
  # A --quick run without --out writes to the smoke runs' folder, not over results/.
  monkeypatch.setattr(harness, "QUICK_RESULTS", tmp_path)
  measured = harness.RESULTS / "beam_cache.json"
  before = measured.read_bytes()
  assert beam_cache.main(["--quick"]) == 0
  assert measured.read_bytes() == before
  result = json.loads((tmp_path / "beam_cache.json").read_text())
  assert result["same_tokens"] and result["generated_tokens"] > 8
  assert set(result["rows"]) == {"reorder", "indirect"}
  for row in result["rows"].values():
    assert row["reps"] == 2 and row["per_s_best"] == pytest.approx(
        result["generated_tokens"] / row["min_s"])
  assert result["indirect_speedup"] == pytest.approx(
      result["rows"]["reorder"]["min_s"] / result["rows"]["indirect"]["min_s"])
  assert "same tokens: True" in capsys.readouterr().out


def test_peak_lookup_takes_the_most_specific_name():
  assert gpu.peak_flops("NVIDIA H100 PCIe") == 756e12
  assert gpu.peak_flops("NVIDIA H100 80GB HBM3") == 989e12
  assert gpu.peak_flops("NVIDIA H200") == 989e12
  assert gpu.peak_flops("cpu") is None


def test_packed_rows_look_like_the_packing_converter_s():
  batch = gpu_workload.packed_batch(3, 20, 10, 50)
  for name in ("encoder", "decoder"):
    seg, pos = batch[f"{name}_segment_ids"], batch[f"{name}_positions"]
    assert (seg >= 1).all() and (np.diff(seg, axis=1) >= 0).all()  # full rows, in order
    starts = np.concatenate([np.ones((3, 1), bool), np.diff(seg, axis=1) > 0], 1)
    assert ((pos == 0) == starts).all()  # positions restart with each example
  dec, tgt = batch["decoder_input_tokens"], batch["decoder_target_tokens"]
  assert (dec[batch["decoder_positions"] == 0] == 0).all()
  inner = batch["decoder_positions"][:, 1:] > 0
  assert (dec[:, 1:][inner] == tgt[:, :-1][inner]).all()  # shifted right within an example


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


def test_results_table_takes_the_gpu_best_from_the_rows():
  # gpu.py's JSON carries rows only; the table's best training ratio comes from them.
  rows = [{"kind": "train", "tokens_per_s": 300.0}, {"kind": "hf-train", "tokens_per_s": 100.0},
          {"kind": "hf-train", "tokens_per_s": 150.0}, {"kind": "decode", "tokens_per_s": 999.0}]
  assert run_all._best_train(rows) == {"crosstask": 300.0, "hf": 150.0, "ratio": 2.0}
  assert run_all._best_train(rows[:1])["ratio"] == 0.0  # no HF row ran


def test_results_table_keeps_a_decode_line_measured_beside_hf_and_shows_the_eval_job(
    monkeypatch):
  machine = {"cpu_model": "cpu", "cpu_count": 16, "threads_per_framework": 16,
             "load_average_1_5_15min_at_start": [1.0], "load_average_1_5_15min_at_end": [1.0]}
  runs = [{"run": n, "date": f"day {n}", "machine": machine, "gpu": f"gpu {n}"} for n in (1, 2)]

  def row(text, run, **fields):
    return {"row": text, "kind": text.split(":")[0], "model": "longlm_large",
            "status": "ok", "run": run, **fields}
  train = dict(tokens_per_s=100.0, mfu=0.3, batch=64, lengths="512/512",
               settings={"attention": "cudnn", "remat": "dots"})
  decode = dict(beams=1, batch=32, lengths="512->128", tokens_per_s=50.0, roofline_ratio=3.0)
  gpu_json = {"date": "day 2", "machine": machine, "runs": runs, "rows": [
      row("train:longlm_large:cudnn:dots:64", 1, **train),
      row("decode:longlm_large:1:32", 1, ratio_vs_hf=2.5, **decode),
      # A later run of another chip with no HF decoding: the line keeps run 1's.
      row("decode:longlm_large:1:32", 2, **{**decode, "tokens_per_s": 60.0}),
      row("infer:longlm_large:32", 2, batch=32, examples_per_s=95.4, outside_decode_share=0.035),
      row("hf-infer:longlm_large:32", 2, batch=32, examples_per_s=5.36)]}
  monkeypatch.setattr(run_all, "_load", lambda name: gpu_json if name == "gpu" else None)
  lines = {line.split(" | ")[0]: line for line in run_all.results_table().splitlines()}
  greedy = next(v for k, v in lines.items() if "greedy decoding, batch 32" in k)
  assert "2.50x (50 tokens/s)" in greedy and "day 1, gpu 1" in greedy
  job = next(v for k, v in lines.items() if "eval-only job" in k)
  assert "95.4 examples/s; HF's loop 5.36 (run 2" in job and "| <= 0.20 | yes |" in job


def test_a_quick_make_bench_runs_each_script_small_and_leaves_gpu_to_its_session(
    monkeypatch, capsys):
  # `make bench BENCH_ARGS=--quick`: every CPU script with --quick (each then writes to
  # harness.QUICK_RESULTS); gpu.py, which has no smoke size, is skipped with a pointer.
  ran = []
  monkeypatch.setattr(run_all.subprocess, "run",
                      lambda cmd, **kw: ran.append(cmd[1:]) or types.SimpleNamespace(returncode=0))
  monkeypatch.setattr(run_all, "write_readme", lambda: None)
  monkeypatch.setenv("CROSSTASK_DATA_DIR", "/nonexistent")
  assert run_all.main(["--quick"]) == 0
  assert [pathlib.Path(cmd[0]).stem for cmd in ran] == [
      name for name in run_all.BENCHMARKS if name != "gpu"]
  assert all(cmd[1:] == ["--quick"] for cmd in ran)
  assert "gpu_session.sh --quick" in capsys.readouterr().out
