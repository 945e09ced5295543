"""`make bench`: every benchmark in turn, then the table in benchmarks/README.md.

    python benchmarks/run_all.py [--quick] [--only step_and_decode,metrics_speed,...]
    python benchmarks/run_all.py --report_only   # rebuild the README table from results/

Benchmarks on real data need CROSSTASK_DATA_DIR; when it is unset and ../shared/data
(next to the checkout, as in CI) exists, that folder is used. About 40 minutes on a
2-core machine (two LongLM-large compiles in memory.py take a third of it); --quick
is a smoke run of a few minutes that writes its JSON to a temporary folder
(harness.QUICK_RESULTS), so the measured results/ and the README table stay as they are.
"""

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys

import gpu_spec
import harness

BENCHMARKS = ["step_and_decode", "metrics_speed", "finetune_csl", "memory", "gpu"]
README = harness.ROOT / "benchmarks" / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def _load(name: str) -> dict | None:
  path = harness.RESULTS / f"{name}.json"
  return json.loads(path.read_text()) if path.exists() else None


def _load_note(r: dict) -> str:
  m = r["machine"]
  return (f"{r['date']}, {m['gpu'] + ' + ' if m.get('gpu') else ''}{m['cpu_model']}, {m['cpu_count']} cores, "
          f"{m['threads_per_framework']} threads/framework, load {m['load_average_1_5_15min_at_start'][0]:.1f}"
          f" -> {m['load_average_1_5_15min_at_end'][0]:.1f}")


def _best_train(rows: list[dict]) -> dict:
  """crosstask's and HF's fastest training rows (tokens/s) and their ratio."""
  best = {side: max((r["tokens_per_s"] for r in rows if r["kind"] == kind), default=0.0)
          for side, kind in (("crosstask", "train"), ("hf", "hf-train"))}
  return {**best, "ratio": best["crosstask"] / best["hf"] if best["hf"] else 0.0}


def _run_of(result: dict, part: str) -> dict:
  """The run a part was measured in: its own (carried over from an earlier run) or the file's."""
  p = result[part]
  return {**result, "date": p.get("measured_in_run", result["date"]),
          "machine": p.get("machine", result["machine"])}


def ratio_text(ratio: float, goal: float) -> str:
  """`1.23x`; a miss that two decimals would round up to its goal keeps three, cut down."""
  if ratio < goal <= round(ratio, 2):
    return f"{math.floor(ratio * 1000) / 1000:.3f}x"
  return f"{ratio:.2f}x"


def results_table() -> str:
  """Markdown: one line per target, the measured ratio next to its goal."""
  lines = ["| target | measured | goal | met | run |", "|---|---|---|---|---|"]

  def add(target, measured, goal, met, r):
    lines.append(f"| {target} | {measured} | {goal} | {'yes' if met else 'no'} | {_load_note(r)} |")

  sd = _load("step_and_decode")
  if sd:
    for row in sd["results"]:
      if row["kind"] == "encode":  # diagnostic: what decoding's encoder share allows
        lines.append(f"| {row['model']} encoder alone {row['workload'].split()[-1]} x "
                     f"{row['input_len']}, tokens/s vs HF (no goal) | {row['ratio']:.2f}x "
                     f"({row['crosstask']['per_s_median']:.0f} vs {row['hf']['per_s_median']:.0f}), "
                     f"outputs equal: {'yes' if row['outputs_equal'] else 'no'} "
                     f"(max abs diff {row['max_abs_diff']:.1e}) | - | - | {_load_note(sd)} |")
        continue
      goal = 1.3 if row["kind"] == "train" else 2.0
      extra = ""
      if row["kind"] != "train":
        equal = "yes" if row["outputs_equal"] else "no ({:.0%} of rows)".format(row["rows_equal"])
        extra = f", outputs equal: {equal}"
        if "ratio_if_loop_free" in row:
          extra += f"; at most {row['ratio_if_loop_free']:.1f}x with a free decoding loop"
      add(f"{row['model']} {row['workload']} tokens/s vs HF",
          f"{ratio_text(row['ratio'], goal)} ({row['crosstask']['per_s_median']:.0f} vs "
          f"{row['hf']['per_s_median']:.0f}){extra}", f">= {goal}x", row["ratio"] >= goal, sd)
  ms = _load("metrics_speed")
  if ms:
    r = ms["rouge_l_char"]
    add(f"char ROUGE-L, {r['pairs']} CSL abstract pairs",
        f"{r['crosstask']['median_s']:.2f} s (rouge-score ~{r['rouge_score_seconds_extrapolated']:.0f} s;"
        f" equal: {'yes' if r['equal_on_subset'] else 'no'})", "< 2 s", r["goal_met"], ms)
    labels = {"lot": "LOT NLPCC OutGen scorer on the shared val generations",
              "cmrc": "CMRC 2018 EM/F1 on the dev set"}
    for name, o in ms.get("official_scorers", {}).items():
      goal = "as fast as the official script or faster, equal values"
      if "not_run" in o:
        lines.append(f"| {labels[name]} | not run: {o['not_run']} | {goal} | - | - |")
        continue
      note = f"; {o['tokenizer']}" if "punkt_tab absent" in o.get("tokenizer", "") else ""
      add(labels[name], f"{o['speedup']:.1f}x the official script's speed ({o['crosstask']['median_s']:.2f}"
          f" vs {o['official']['median_s']:.2f} s; equal: {'yes' if o['equal'] else 'no'}{note})",
          goal, o["speedup"] >= 1 and o["equal"], ms)
  ft = _load("finetune_csl")
  if ft:
    f = ft["finetune"]
    pad = f["padding_fraction"]
    add(f"CSL abstract->title fine-tuning, non-padding tokens/s (T5 1.1 {ft['setup']['model']})",
        f"{ratio_text(f['ratio'], 2)} ({f['crosstask']['per_s_median']:.0f} vs "
        f"{f['hf']['per_s_median']:.0f}; "
        f"padding {pad['crosstask']:.0%} packed vs {pad['hf']:.0%} HF)", ">= 2x", f["ratio"] >= 2, ft)
    p = ft["input_pipeline"]
    add(f"packed CSL batches/s vs the T5 1.1 {ft['setup']['model']} train step's",
        f"{p['ratio']:.1f}x ({p['batches_per_s']:.1f} vs {p['step_batches_per_s']:.2f})", ">= 5x",
        p["ratio"] >= 5, ft)
  mem = _load("memory")
  if mem:
    if "small_train_peak_rss_mb" in mem:
      r = mem["small_train_peak_rss_mb"]
      for name, v in r.get("variants", {"default": r}).items():
        add(f"peak RSS, small train step process ({name})",
            f"{v['crosstask']:.0f} MB vs HF {r['hf']:.0f} MB", "<= HF", v["goal_met"],
            _run_of(mem, "small_train_peak_rss_mb"))
    if "longlm_large_compiled_step" in mem:
      pol = mem["longlm_large_compiled_step"]["policies"]
      add("LongLM-large step 8 x 512/512, compiled memory by remat",
          "; ".join(f"{p['policy']}{' (' + p['scheduler'] + ')' if p.get('scheduler') else ''}: "
                    f"{p['peak_estimate_gib']:.1f} GiB (temps {p['temporaries_gib']:.1f})"
                    for p in pol), "reported", True,
          _run_of(mem, "longlm_large_compiled_step"))
  gpu = _load("gpu")
  if gpu:
    runs = {run["run"]: run for run in gpu.get("runs", [])}

    def run_of(row):  # the call a row was measured in, with its own date and machine
      run = runs.get(row.get("run"))
      if run is None:
        return gpu
      return {"date": run["date"], "machine": {**run["machine"], "gpu": run.get("gpu")}}
    rows = [r for r in gpu["rows"] if r.get("tokens_per_s") and r.get("model") == "longlm_large"]
    train = max((r for r in rows if r["kind"] == "train"), key=lambda r: r["mfu"] or 0)
    best = gpu.get("best_train_tokens_per_s") or _best_train(rows)
    setting = {**train.get("settings", {}), **train}
    unroll = setting.get("unroll", 1)
    per_iteration = (", each layer stack unrolled whole" if unroll == "full" else
                     f", {unroll} layers per scan iteration" if unroll > 1 else "")
    add(f"GPU LongLM-large bf16 train step, best MFU ({train['batch']} x {train['lengths']}, "
        f"{setting['attention']}, remat {setting['remat']}{per_iteration}); best tokens/s vs "
        "HF's fastest",
        f"MFU {100 * (train['mfu'] or 0):.1f}%, {best['ratio']:.2f}x", ">= 50%, >= 3x",
        (train["mfu"] or 0) >= 0.5 and best["ratio"] >= 3, run_of(train))
    latest = {}  # rows are kept in run order: the last ok default row of each decode
    for r in rows:  # measured beside an HF row (or given one of its device) wins
      ratio = r.get("ratio_vs_hf") or (r.get("hf_reference") or {}).get("ratio")
      if (r["kind"] == "decode" and r.get("status", "ok") == "ok" and ratio
          and _default_decoding(gpu_spec.parse(r["row"]))):
        latest[(r["beams"], r["batch"])] = r
    for (beams, batch), r in sorted(latest.items()):
      ref = r.get("hf_reference")
      ratio = r.get("ratio_vs_hf") or (ref or {}).get("ratio")
      name, goal = ("greedy", 2) if beams == 1 else (f"beam {beams}", 3)
      against = f"; HF from run {ref['run']}" if ref and not r.get("ratio_vs_hf") else ""
      roof = r.get("roofline_ratio")
      add(f"GPU LongLM-large {name} decoding, batch {batch}, {r['lengths']}: vs HF generate's "
          f"fastest; step time over the HBM roofline",
          f"{ratio_text(ratio, goal)} ({r['tokens_per_s']:.0f} tokens/s{against}); "
          f"{roof:.2f}x roofline", f">= {goal}x, <= 1.5x",
          ratio >= goal and roof is not None and roof <= 1.5, run_of(r))
    infer = [r for r in gpu["rows"] if r["kind"] == "infer" and r.get("status") == "ok"
             and r.get("model") == "longlm_large"]
    if infer:
      r = infer[-1]
      hf = [h for h in gpu["rows"] if h["kind"] == "hf-infer" and h.get("status") == "ok"
            and h.get("batch") == r["batch"]]
      beside = (f"; HF's loop {hf[-1]['examples_per_s']:.2f} (run {hf[-1].get('run')}, "
                f"{gpu_spec.parse(hf[-1]['row']).hf_setting()})" if hf else "")
      add(f"GPU eval-only job (crosstask.infer's path), LongLM-large shape, CSL dev, batch "
          f"{r['batch']}: examples/s; share of the job outside decoding",
          f"{r['examples_per_s']:.1f} examples/s{beside}; {r['outside_decode_share']:.3f}",
          "<= 0.20", r["outside_decode_share"] <= 0.20, run_of(r))
    ttq = _load("time_to_quality")
    if ttq and ttq.get("device") == "cuda":
      ratio, goals = ttq["time_ratio"], ttq["goals"]
      reached = (f"{ratio:.2f}" if ratio is not None else
                 f"never reached ({ttq['time_ratio_reason']}); at equal steps "
                 f"{ttq['time_ratio_at_equal_steps']:.2f}")
      add(f"GPU time to quality, {ttq['settings']['model']} pretrained by both from the same "
          "weights and examples: max relative validation-loss gap; time ratio",
          f"{ttq['max_rel_loss_gap']:.3f}; {reached}",
          f"<= {goals['max_rel_loss_gap']}, <= {goals['time_ratio']:.2f}",
          ttq["max_rel_loss_gap"] <= goals["max_rel_loss_gap"] and ratio is not None
          and ratio <= goals["time_ratio"], ttq)
  else:
    lines.append("| GPU LongLM-large bf16 step | not run: no GPU on the benchmark machine | "
                 ">= 50% MFU, >= 3x | - | - |")
  return "\n".join(lines)


def _default_decoding(row: gpu_spec.Row) -> bool:
  """Whether a decode row runs as crosstask decodes by default (no XLA flag or cache
  layout under trial)."""
  return (row.flags == "default" and row.cross_keys_last and row.unroll == 1
          and row.decode_cross_attention == "einsum" and not row.fused_qkv
          and not row.fused_mlp and row.beam_self_cache == "indirect")


def write_readme() -> None:
  text = README.read_text()
  head, rest = text.split(BEGIN, 1)
  _, tail = rest.split(END, 1)
  README.write_text(f"{head}{BEGIN}\n{results_table()}\n{END}{tail}")
  print(f"updated {README.relative_to(harness.ROOT)}")


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--only", default=",".join(BENCHMARKS))
  parser.add_argument("--report_only", action="store_true")
  args = parser.parse_args(argv)
  if not args.report_only:
    env = harness.thread_env(harness.default_threads())
    # ../shared/data next to the checkout (CI), or two levels up for a git worktree.
    for shared in (harness.ROOT.parent / "shared" / "data",
                   harness.ROOT.parent.parent / "shared" / "data"):
      if not env.get("CROSSTASK_DATA_DIR") and shared.is_dir():
        env["CROSSTASK_DATA_DIR"] = str(shared)
    failed = []
    for name in args.only.split(","):
      print(f"\n=== {name} ===", flush=True)
      if name in ("metrics_speed", "finetune_csl") and not env.get("CROSSTASK_DATA_DIR"):
        print(f"{name}: skipped, CROSSTASK_DATA_DIR is not set")
        continue
      if name == "gpu" and args.quick:  # gpu.py has no smoke size of its own
        print("gpu: skipped under --quick (its CPU smoke run: benchmarks/gpu_session.sh --quick)")
        continue
      cmd = [sys.executable, str(harness.ROOT / "benchmarks" / f"{name}.py")]
      if args.quick:
        cmd.append("--quick")
      if subprocess.run(cmd, env=env, cwd=str(harness.ROOT)).returncode:
        failed.append(name)
    if failed:
      print(f"failed: {', '.join(failed)}")
  write_readme()
  return 0 if args.report_only or not failed else 1


if __name__ == "__main__":
  sys.exit(main())
