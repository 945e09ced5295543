"""Memory: peak host RSS of the T5 1.1 small training step (crosstask vs HF), and the
compiled memory of a LongLM-large training step at batch 8 x 512/512 per remat policy.

The RSS part runs each framework's step in a fresh process (benchmarks/side_worker.py)
and reads its peak resident set over 20 steps; goal: crosstask <= HF. The
LongLM-large part only lowers and compiles the step on abstract shapes
(`jax.jit(...).lower(...).compile().memory_analysis()`), so it needs no 1B-parameter
weights nor the memory to run them: it shows what `remat_policy` saves.

    python benchmarks/memory.py [--quick] [--policies none,full] [--schedulers xla_default,memory]
"""

import argparse
import json
import os
import sys
import tempfile

import harness

sys.path.insert(0, str(harness.ROOT))

from crosstask.runtime.config import platform  # pylint: disable=wrong-import-position

TRAIN = dict(kind="train", batch=8, input_len=256, target_len=64)
# "memory": the CPU profile's train-step options (XLA:CPU's memory-optimized
# scheduler); "xla_default": `train_compiler_options={}`, XLA's own scheduler.
SCHEDULERS = {"xla_default": {}, "memory": dict(platform.PROFILES["cpu"].train_compiler_options)}
# crosstask settings measured against HF's one (no gradient checkpointing in HF).
RSS_VARIANTS = {
    "default": {},  # the Trainer's defaults: on CPU, the memory-optimized scheduler
    "xla_default_scheduler": {"compiler_options": {}},
    "default+remat_full": {"config_overrides": {"remat_policy": "full"}},
}


def _positive_int(text: str) -> int:
  if not text.isdigit() or int(text) < 1:
    raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
  return int(text)


def peak_rss(threads: int, steps: int, variants: dict[str, dict]
             ) -> tuple[dict[str, float], dict[str, list[float]]]:
  """Peak RSS (MB) per crosstask variant and for HF, each in a fresh process, and the
  peak so far after each timed step (a jump shows when a later step grew the heap)."""
  with tempfile.TemporaryDirectory() as tmp:
    with harness.Worker("hf", threads) as hf:
      hf.call("save_checkpoint", model="small", dir=tmp)
    runs = [(f"crosstask:{name}", "crosstask", {**TRAIN, **extra})
            for name, extra in variants.items()] + [("hf", "hf", TRAIN)]
    result, by_step = {}, {}
    for label, framework, workload in runs:  # one at a time: a fresh process each
      with harness.Worker(framework, threads, training=True) as w:
        w.call("setup", workload=workload, checkpoint=tmp)
        by_step[label] = []
        for _ in range(steps):
          w.call("run")
          peak = w.call("rss")["max_rss_mb"]
          by_step[label].append(round(peak))
        result[label] = peak
  return result, by_step


def compiled_memory(policy: str, batch: int, length: int, scheduler: str = "memory",
                    model_gin: str = "crosstask/gin/longlm/large.gin") -> dict[str, float]:
  """Bytes XLA plans for one LongLM step of the runtime's Trainer (Adafactor, as the gin files).

  `Trainer.compile_train_step` on abstract state and batch: the step a run
  executes (gradients, update, non-finite guard), compiled but never run.
  """
  import jax
  import jax.numpy as jnp
  from crosstask.runtime.config import model_gin as gin_models
  from crosstask.models.model import EncoderDecoderModel
  from crosstask.models.network import Transformer
  from crosstask.runtime.config import run as run_lib
  from crosstask.runtime.state import optimizers
  from crosstask.runtime.state import trainer as trainer_lib

  config = gin_models.config_from_gin(model_gin,
                                   [f"config.TransformerConfig.remat_policy = '{policy}'"])
  run = run_lib.resolve(EncoderDecoderModel(Transformer(config), None, None),
                        batch_size=batch, lengths={"inputs": length, "targets": length},
                        profile=platform.profile(train_compiler_options=SCHEDULERS[scheduler]))
  tx, schedule = optimizers.create_optimizer(optimizers.adafactor, 1e-3,
                                             param_axes=run.param_axes)
  trainer = trainer_lib.Trainer(run, tx, schedule)
  tokens = jax.ShapeDtypeStruct((batch, length), jnp.int32)
  batch_spec = {"encoder_input_tokens": tokens, "decoder_input_tokens": tokens,
                "decoder_target_tokens": tokens}
  with harness.Timer() as t:
    compiled = trainer.compile_train_step(trainer.abstract_state(), batch_spec,
                                          jax.random.key(0))
  m = compiled.memory_analysis()
  gib = 1024 ** 3
  return {"policy": policy, "scheduler": scheduler, "model": model_gin, "dtype": config.dtype,
          "compile_s": t.seconds,
          "arguments_gib": m.argument_size_in_bytes / gib,
          "outputs_gib": m.output_size_in_bytes / gib,
          "temporaries_gib": m.temp_size_in_bytes / gib,
          "aliased_gib": m.alias_size_in_bytes / gib,
          "peak_estimate_gib": (m.argument_size_in_bytes + m.output_size_in_bytes
                                - m.alias_size_in_bytes + m.temp_size_in_bytes) / gib,
          "params": gin_models.param_count(config)}


def _carry_skipped_parts(payload: dict, out: str | None) -> None:
  """A part skipped this run keeps its last measured result, labelled with that run's date.

  (The LongLM-large compiles take minutes each; re-measuring RSS alone should not drop them.)
  """
  previous = harness.RESULTS / "memory.json" if out is None else None
  if previous is None or not previous.exists():
    return
  old = json.loads(previous.read_text())
  for part in ("small_train_peak_rss_mb", "longlm_large_compiled_step"):
    if part not in payload and part in old:
      payload[part] = {"measured_in_run": old["date"], "machine": old["machine"], **old[part]}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true", help="2 steps; remat none and full only")
  parser.add_argument("--policies", default="none,full", help="remat policies: none,full,minimal")
  parser.add_argument("--schedulers", default="memory",
                      help="XLA:CPU schedulers to compile with: xla_default, memory (comma-separated)")
  parser.add_argument("--model_gin", default="crosstask/gin/longlm/large.gin")
  parser.add_argument("--skip_compiled", action="store_true")
  # The tuned heap (one arena, no trimming) can grow by one block of step temporaries
  # at a later step and then hold (benchmarks/README.md), so the peak is read over 20.
  parser.add_argument("--steps", type=_positive_int, default=20,
                      help="timed steps whose peak RSS is read (at least 1)")
  parser.add_argument("--threads", type=int, default=harness.default_threads())
  parser.add_argument("--skip_rss", action="store_true")
  parser.add_argument("--out", default=None)
  args = parser.parse_args(argv)
  policies = args.policies.split(",")
  if args.quick:
    args.steps, policies = 2, [p for p in policies if p in ("none", "full")]
  start_load = os.getloadavg()
  payload = {}
  if not args.skip_rss:
    rss, by_step = peak_rss(args.threads, args.steps, RSS_VARIANTS)
    hf_mb = rss["hf"]
    payload["small_train_peak_rss_mb"] = {
        "hf": hf_mb, "goal": "crosstask <= hf", "steps": args.steps,
        "after_each_step": by_step,
        "variants": {name: {"crosstask": rss[f"crosstask:{name}"], "settings": extra,
                            "ratio_crosstask_over_hf": rss[f"crosstask:{name}"] / hf_mb,
                            "goal_met": rss[f"crosstask:{name}"] <= hf_mb}
                     for name, extra in RSS_VARIANTS.items()}}
    print("peak RSS, T5 1.1 small train step (batch 8, 256/64), MB")
    print(harness.table([(name, rss[f"crosstask:{name}"], hf_mb, rss[f"crosstask:{name}"] / hf_mb)
                         for name in RSS_VARIANTS], ["crosstask", "MB", "HF MB", "ratio"]))
  if not args.skip_compiled:
    rows = [compiled_memory(p, 8, 512, sched, args.model_gin)
            for sched in args.schedulers.split(",") for p in policies]
    payload["longlm_large_compiled_step"] = {"batch": 8, "input_len": 512, "target_len": 512,
                                             "optimizer": "adafactor", "model": args.model_gin,
                                             "policies": rows}
    print(f"\n{args.model_gin} train step, batch 8 x 512/512, compiled memory (GiB, XLA CPU)")
    print(harness.table([(r["policy"], r["scheduler"], r["params"] / 1e6, r["arguments_gib"],
                          r["temporaries_gib"], r["peak_estimate_gib"], r["compile_s"]) for r in rows],
                        ["remat", "scheduler", "params (M)", "arguments", "temporaries", "peak",
                         "compile s"]))
  _carry_skipped_parts(payload, args.out)
  harness.write("memory", payload, args.threads, start_load, args.out, quick=args.quick)
  return 0


if __name__ == "__main__":
  sys.exit(main())
