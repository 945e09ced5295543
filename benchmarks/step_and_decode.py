"""CPU, crosstask vs HF PyTorch: training step, greedy and beam-4 decoding, peak memory.

Same T5 1.1 weights on both sides (a seeded random HF checkpoint that crosstask
imports), float32, dropout 0. Training: batch 8 x 256 input / 64 target tokens,
AdamW, through crosstask's runtime Trainer.train_step vs a torch AdamW step.
Decoding: 256 input tokens, up to 32 new ones, greedy and beam 4 (HF's length
penalty 1.0 / early_stopping False on both sides), batch 8 and 32, through
EncoderDecoderModel.predict_batch vs `generate`; the outputs must agree token
for token (checked and recorded). Greedy b32 and beam-4 b8 also run through the
runtime's Inference (as `crosstask.infer` and evaluation decode). The encoder
alone (batch 8 and 32 x 256, no goal, compiled as decoding compiles it) shows how
much of decoding is the encoder's batched matmuls. Each workload gets a fresh
process per framework; timed repetitions alternate between the two after a warm-up
(see harness.py).

    python benchmarks/step_and_decode.py [--quick] [--models tiny,small] [--reps 5]
"""

import argparse
import os
import sys
import tempfile

import flops
import harness

TRAIN = dict(kind="train", batch=8, input_len=256, target_len=64)
DECODES = [dict(kind="greedy", batch=b, input_len=256, new_tokens=32) for b in (8, 32)] + \
          [dict(kind="beam4", beams=4, batch=b, input_len=256, new_tokens=32) for b in (8, 32)]
# The same decodes as `python -m crosstask.infer` and evaluation run them: the runtime's
# Inference over a tf.data set (sharded jits, batching, padding), same goal.
INFERENCE_DECODES = [dict(DECODES[1], path="inference"), dict(DECODES[2], path="inference")]
# Diagnostic, no goal: the encoder alone, the part of decoding both sides run as
# batched matmuls. Its ratio bounds what a faster decoding loop can give (README).
ENCODES = [dict(kind="encode", batch=b, input_len=256) for b in (8, 32)]


def _units(w: dict) -> int:
  if w["kind"] == "train":
    return w["batch"] * (w["input_len"] + w["target_len"])
  if w["kind"] == "encode":
    return w["batch"] * w["input_len"]
  return w["batch"] * w["new_tokens"]


def model_gflop(model: str, w: dict) -> float:
  """Matmul GFLOP of one workload call at its nominal size (flops.py), for each side's GFLOP/s."""
  import types
  import side_worker
  m = side_worker.MODELS[model]
  cfg = types.SimpleNamespace(d_model=m["d_model"], d_ff=m["d_ff"], num_heads=m["num_heads"],
                              d_kv=m["d_kv"], num_encoder_layers=m["num_layers"],
                              num_decoder_layers=m["num_layers"], activations=("gelu", "linear"),
                              vocab_size=side_worker.VOCAB)
  if w["kind"] == "train":
    return flops.train_step(cfg, w["batch"], w["input_len"], w["target_len"]) / 1e9
  if w["kind"] == "encode":
    return w["batch"] * flops.encoder(cfg, w["input_len"]) / 1e9
  return flops.decode(cfg, w["batch"], w["input_len"], w["new_tokens"], w.get("beams", 1)) / 1e9


def _name(w: dict) -> str:
  via = " via Inference" if w.get("path") == "inference" else ""
  return f"{w['kind']} b{w['batch']}{via}"


def bench_model(model: str, workloads: list[dict], reps: int, threads: int, tmp: str) -> list[dict]:
  checkpoint = os.path.join(tmp, model)
  with harness.Worker("hf", threads) as maker:
    params = maker.call("save_checkpoint", model=model, dir=checkpoint)["params"]
  rows = []
  for w in workloads:
    # A fresh pair of processes for every workload, so no row depends on what ran
    # before it: HF's generate ran 1.23x faster in the process that had run its
    # training step (benchmarks/README.md). crosstask's worker makes the malloc
    # settings of the entry point that runs the workload (train or infer).
    with (harness.Worker("crosstask", threads, training=w["kind"] == "train") as ours,
          harness.Worker("hf", threads) as hf):
      outputs = {s.framework: s.call("setup", workload=w, checkpoint=checkpoint)["output"]
                 for s in (ours, hf)}
      times = harness.alternate([ours, hf], reps)
      units = {"train": "tokens (input + target)", "encode": "input tokens"}
      row = {"model": model, "params": params, "workload": _name(w), **w,
             "units": units.get(w["kind"], "generated tokens"),
             "crosstask": harness.summary(times["crosstask"], _units(w)),
             "hf": harness.summary(times["hf"], _units(w))}
      row["ratio"] = row["crosstask"]["per_s_median"] / row["hf"]["per_s_median"]
      row["gflop"] = model_gflop(model, w)
      for side in ("crosstask", "hf"):
        row[side]["gflop_per_s"] = row["gflop"] / row[side]["median_s"]
      if w["kind"] == "encode":
        a, b = outputs["crosstask"], outputs["hf"]
        row["max_abs_diff"] = max(abs(x - y) for x, y in zip(a, b))
        row["outputs_equal"] = row["max_abs_diff"] < 1e-3  # float32, different kernels
      elif w["kind"] != "train":
        a, b = outputs["crosstask"], outputs["hf"]
        row["outputs_equal"] = a == b
        row["rows_equal"] = sum(x == y for x, y in zip(a, b)) / len(a)
      if w["kind"] == "train":
        row["max_rss_mb"] = {s.framework: s.call("rss")["max_rss_mb"] for s in (ours, hf)}
      rows.append(row)
      print(f"  {model} {_name(w)}: crosstask {row['crosstask']['per_s_median']:.0f} "
            f"HF {row['hf']['per_s_median']:.0f} tokens/s, ratio {row['ratio']:.2f}"
            + (f", outputs equal: {row['outputs_equal']}" if "outputs_equal" in row else ""),
            flush=True)
  add_loop_free_bounds(rows)
  return rows


def add_loop_free_bounds(rows: list[dict]) -> None:
  """Decoding rows get the ratio they would reach if crosstask's decoding loop took no time.

  That is HF's decoding time over crosstask's encoder alone (same model, batch and
  run): a ceiling no faster loop can pass, since every decode runs the encoder first.
  """
  encoder_s = {(r["model"], r["batch"]): r["crosstask"]["median_s"]
               for r in rows if r["kind"] == "encode"}
  for r in rows:
    if r["kind"] in ("greedy", "beam4") and (r["model"], r["batch"]) in encoder_s:
      r["ratio_if_loop_free"] = r["hf"]["median_s"] / encoder_s[r["model"], r["batch"]]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true",
                      help="3 repetitions, tiny model, batch 8 decodes only (a smoke run)")
  parser.add_argument("--models", default="tiny,small", help="comma-separated: tiny,small")
  parser.add_argument("--reps", type=int, default=5, help="timed repetitions per framework")
  parser.add_argument("--only", default="",
                      help="comma-separated workload kinds: train,greedy,beam4,encode")
  parser.add_argument("--threads", type=int, default=harness.default_threads(),
                      help="intra-op threads for each framework (default: all cores)")
  parser.add_argument("--out", default=None,
                      help="JSON path (default benchmarks/results/...; --quick: a temp folder)")
  args = parser.parse_args(argv)
  models = [m.strip() for m in args.models.split(",") if m.strip()]
  workloads = [TRAIN] + DECODES + INFERENCE_DECODES + ENCODES
  if args.quick:
    args.reps, models = min(args.reps, 3), ["tiny"]
    workloads = [w for w in workloads if w["batch"] == 8]
  if args.only:
    kinds = set(args.only.split(","))
    workloads = [w for w in workloads if w["kind"] in kinds]
  start_load = os.getloadavg()
  with harness.Timer() as timer, tempfile.TemporaryDirectory() as tmp:
    rows = [r for m in models for r in bench_model(m, workloads, args.reps, args.threads, tmp)]
  peak = harness.cpu_peak_gflops(args.threads)
  print(f"\nfloat32 CPU, {args.threads} threads per framework, median of {args.reps} "
        f"(min-max); tokens/s; GFLOP/s from model_gflop (machine peak ~{peak or 0:.0f})")
  print(harness.table(
      [(r["model"], r["workload"], r["crosstask"]["per_s_median"],
        f"{r['crosstask']['per_s_worst']:.0f}-{r['crosstask']['per_s_best']:.0f}",
        r["hf"]["per_s_median"], f"{r['hf']['per_s_worst']:.0f}-{r['hf']['per_s_best']:.0f}",
        r["ratio"], {"train": "1.3", "encode": "-"}.get(r["kind"], "2.0"),
        r.get("outputs_equal", "-"), r["crosstask"]["gflop_per_s"], r["hf"]["gflop_per_s"])
       for r in rows],
      ["model", "workload", "crosstask", "range", "HF", "range", "ratio", "goal", "equal",
       "GFLOP/s ours", "GFLOP/s HF"]))
  for r in rows:
    if "max_rss_mb" in r:
      print(f"peak RSS {r['model']} train process: crosstask {r['max_rss_mb']['crosstask']:.0f} MB,"
            f" HF {r['max_rss_mb']['hf']:.0f} MB")
  harness.write("step_and_decode", {
      "setup": {"dtype": "float32", "optimizer": "adamw", "dropout": 0.0, "reps": args.reps,
                "processes": "a fresh pair (crosstask, HF) per workload",
                "cpu_peak_gflop_per_s": peak,
                "quick": args.quick, "vocab": 32128, "threads": args.threads},
      "results": rows, "total_seconds": timer.seconds}, args.threads, start_load, args.out,
      quick=args.quick)
  return 0


if __name__ == "__main__":
  sys.exit(main())
