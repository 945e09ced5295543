"""Time to quality: T5 1.1 pretrained from scratch by crosstask and by HF PyTorch.

    python benchmarks/time_to_quality.py                       # T5 1.1 small on a GPU
    python benchmarks/time_to_quality.py --device cpu --model tiny --dtype float32 \
        --steps 30 --batch 8 --lengths 64/16 --eval_every 6 --threads 1  # the CPU guard

Both sides start from the same weights (crosstask's initialisation exported with
`hf_import.save_hf_checkpoint`), train on the same span-corrupted examples in the same
order (benchmarks/ttq_data.py, made once here), with the same AdamW (optax.adamw;
torch.optim.AdamW, fused on CUDA), lr, betas, eps and weight decay, one schedule
(linear warm-up, then linear decay to 0 at the last step), the same compute dtype
(float32 parameters on both; bf16 is crosstask's config dtype and torch's autocast),
no dropout, no z-loss, the same number of steps. Weight-decay masks match by having
none: optax.adamw without a mask decays every leaf, torch's single parameter group
every parameter (norm scales and the relative-position tables included).

Each side runs in its own process (benchmarks/ttq_side.py) whose clock starts at its
first line: imports, weight loading and compilation count, validation does not. The
validation loss (mean per target token over fixed held-out texts) is recorded at step
0 and every --eval_every steps against tokens seen and against those seconds.

Writes time_to_quality.json and time_to_quality.png (loss vs tokens, loss vs seconds)
to --out (benchmarks/results): both curves, machine, date and settings,
`max_rel_loss_gap` (the largest |crosstask - HF| / HF between the validation curves at
equal tokens after warm-up) and `time_ratio` (crosstask's seconds to come within
REACH_RTOL of HF's final validation loss, interpolated between evaluation points, over
HF's seconds for all its steps; null with the reason if it never does). Goals on a
GPU: gap <= 0.02, ratio <= 1/3. `time_ratio_at_equal_steps` (the two sides' seconds for
all steps) and each side's seconds per step after its first tell compilation from speed.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from collections.abc import Sequence

import numpy as np

import harness

sys.path.insert(0, str(harness.ROOT))

import ttq_data  # pylint: disable=wrong-import-position
from crosstask import paths  # pylint: disable=wrong-import-position
from crosstask.tasks.common import span_corruption  # pylint: disable=wrong-import-position

GOALS = {"max_rel_loss_gap": 0.02, "time_ratio": 1 / 3}
MODELS = {"tiny": "t5_1_1/tiny.gin", "t5_1_1_small": "t5_1_1/small.gin"}
EMBEDDINGS = 384  # the byte vocabulary's 359 ids, padded to a multiple of 128
SIDES = ("hf", "crosstask")
# A validation loss within this fraction of HF's final one counts as reaching it: more
# than float32 parity leaves (~1e-6), far less than bf16's rounding (2**-8) or the goal.
REACH_RTOL = 1e-3
SIDE_SCRIPT = pathlib.Path(__file__).resolve().with_name("ttq_side.py")


def max_rel_loss_gap(ours: Sequence[dict], theirs: Sequence[dict], warmup_steps: int
                     ) -> tuple[float, int]:
  """(largest |ours - theirs| / theirs over points after warm-up, the step where it is).

  Points pair up by step, which must mean the same tokens on both sides.
  """
  theirs_at = {p["step"]: p for p in theirs}
  gaps = []
  for p in ours:
    q = theirs_at.get(p["step"])
    if q is None or p["step"] <= warmup_steps:
      continue
    if p["tokens"] != q["tokens"]:
      raise ValueError(f"step {p['step']}: {p['tokens']} tokens on one side, {q['tokens']} on "
                       "the other; the curves are not comparable")
    gaps.append((abs(p["val_loss"] - q["val_loss"]) / q["val_loss"], p["step"]))
  if not gaps:
    raise ValueError(f"no evaluation point after the {warmup_steps} warm-up steps on both "
                     "sides; lower --eval_every or raise --steps")
  return max(gaps)


def seconds_to_reach(points: Sequence[dict], target: float) -> float | None:
  """Training seconds at which the validation loss first falls to `target`, linearly
  interpolated between the two evaluation points around the crossing; None if never."""
  previous = None
  for p in points:
    if p["val_loss"] <= target:
      if previous is None:
        return p["wall_s"]
      fall = (previous["val_loss"] - target) / (previous["val_loss"] - p["val_loss"])
      return previous["wall_s"] + fall * (p["wall_s"] - previous["wall_s"])
    previous = p
  return None


def time_ratio(ours: Sequence[dict], theirs: Sequence[dict], rtol: float = REACH_RTOL
               ) -> tuple[float | None, str | None]:
  """(our seconds to reach their final validation loss / their seconds for every step,
  None or why the ratio is null).

  A loss within `rtol` of theirs counts as reached: two runs that agree step for step
  end a rounding error apart, and which side that error falls on says nothing about speed.
  """
  target = theirs[-1]["val_loss"] * (1 + rtol)
  reached = seconds_to_reach(ours, target)
  if reached is None:
    return None, (f"crosstask never came within {rtol:g} of HF's final validation loss "
                  f"{theirs[-1]['val_loss']:.5f} (its lowest: "
                  f"{min(p['val_loss'] for p in ours):.5f})")
  return reached / theirs[-1]["wall_s"], None


def _parse_lengths(text: str) -> tuple[int, int]:
  try:
    inputs, targets = (int(x) for x in text.split("/"))
  except ValueError:
    raise argparse.ArgumentTypeError(f"--lengths {text!r}: expected INPUTS/TARGETS, e.g. 512/114")
  return inputs, targets


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--model", choices=sorted(MODELS), default="t5_1_1_small")
  p.add_argument("--steps", type=int, default=1000)
  p.add_argument("--batch", type=int, default=64)
  p.add_argument("--lengths", type=_parse_lengths, default=(512, 114),
                 help="INPUTS/TARGETS after span corruption (T5: 512/114)")
  p.add_argument("--eval_every", type=int, default=50)
  p.add_argument("--val_batches", type=int, default=4)
  p.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
  p.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16",
                 help="compute dtype of both sides (parameters stay float32)")
  p.add_argument("--lr", type=float, default=1e-3)
  p.add_argument("--warmup", type=int, default=None, help="warm-up steps (10%% of --steps)")
  p.add_argument("--weight_decay", type=float, default=0.01)
  p.add_argument("--remat", default="auto", help="crosstask's remat policy (auto: the profile's)")
  p.add_argument("--residual_dtype", choices=("float32",), default=None,
                 help="crosstask's residual stream in float32, as HF's under bf16 autocast "
                      "(default: the compute dtype, as T5X)")
  p.add_argument("--scan", action="store_true",
                 help="crosstask's layer stacks as one nn.scan each (compiles one layer)")
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--data", type=pathlib.Path, default=None,
                 help=f"data root (${paths.DATA_DIR_ENV}, else the bundled sample)")
  p.add_argument("--threads", type=int, default=harness.default_threads())
  p.add_argument("--out", type=pathlib.Path, default=harness.RESULTS)
  args = p.parse_args(argv)
  if args.warmup is None:
    args.warmup = args.steps // 10
  return args


def initial_checkpoint(model: str, dtype: str, seed: int, folder: pathlib.Path) -> dict:
  """crosstask's seeded initial weights saved as an HF checkpoint; the model's settings."""
  import flax.linen as nn
  import jax
  from crosstask.models import hf_import
  from crosstask.models.model import EncoderDecoderModel
  from crosstask.models.network import Transformer
  from crosstask.runtime.config import model_gin
  config = model_gin.config_from_gin(MODELS[model], [
      f"config.TransformerConfig.vocab_size = {EMBEDDINGS}",
      "config.TransformerConfig.dropout_rate = 0.0",
      f"config.TransformerConfig.dtype = '{dtype}'"])
  shapes = {"encoder_input_tokens": (1, 8), "decoder_input_tokens": (1, 8)}
  network = EncoderDecoderModel(Transformer(config), None, None)
  init = jax.jit(lambda key: network.get_initial_variables(key, shapes)["params"])
  key = jax.random.key(seed)
  # Run once, outside both clocks: XLA's backend optimisations would only lengthen its
  # compile (half its 20 s on a busy 2-core machine), whatever weights come out are shared.
  params = init.lower(key).compile({"xla_backend_optimization_level": 0})(key)
  hf_import.save_hf_checkpoint(folder, config, jax.device_get(nn.meta.unbox(params)))
  return {"gin": MODELS[model], "parameters": model_gin.param_count(config),
          "d_model": config.d_model, "layers": config.num_encoder_layers,
          "vocab_rows": config.vocab_size}


def run_side(name: str, work: pathlib.Path, args: argparse.Namespace) -> dict:
  env = harness.thread_env(args.threads)
  env["JAX_PLATFORMS"] = "cuda" if args.device == "cuda" else "cpu"
  proc = subprocess.run([sys.executable, "-u", str(SIDE_SCRIPT), name,
                         str(work)], env=env, cwd=str(harness.ROOT), check=False)
  if proc.returncode:
    raise RuntimeError(f"the {name} side failed (exit code {proc.returncode}); its stderr is above")
  return json.loads((work / f"{name}.json").read_text())


def plot(curves: dict[str, dict], path: pathlib.Path, title: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, (by_tokens, by_time) = plt.subplots(1, 2, figsize=(11, 4))
  for name, label in (("crosstask", "crosstask (JAX)"), ("hf", "HF PyTorch")):
    points = curves[name]["points"]
    losses = [p["val_loss"] for p in points]
    by_tokens.plot([p["tokens"] for p in points], losses, marker=".", label=label)
    by_time.plot([p["wall_s"] for p in points], losses, marker=".", label=label)
  by_tokens.set_xlabel("tokens seen")
  by_time.set_xlabel("seconds since the run started (validation excluded)")
  for ax in (by_tokens, by_time):
    ax.set_ylabel("validation loss per target token")
    ax.grid(alpha=0.3)
    ax.legend()
  fig.suptitle(title)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
  args = parse_args(argv)
  if args.device == "cuda" and not os.path.exists("/dev/nvidia0"):
    print("time_to_quality: no GPU here (/dev/nvidia0 absent); run with --device cpu "
          "--model tiny for the CPU guard")
    return 0
  start_load = os.getloadavg()
  # This process only initialises the weights: on the CPU, so that no device memory is
  # held here while the sides train (each side's process names its own platform).
  os.environ["JAX_PLATFORMS"] = "cpu"
  root = args.data or paths.data_dir() or paths.SAMPLE_DIR
  texts, corpus = ttq_data.benchmark_texts(root)
  inputs_length, targets_length = args.lengths
  raw = span_corruption.raw_length(inputs_length, targets_length)
  stream = ttq_data.example_stream(texts, args.steps * args.batch,
                                   args.val_batches * args.batch, raw, args.seed)
  run = {"steps": args.steps, "batch": args.batch, "eval_every": args.eval_every,
         "device": args.device, "dtype": args.dtype,
         "inputs_length": stream["train_inputs"].shape[1],
         "targets_length": stream["train_targets"].shape[1],
         "crosstask_config": {**({} if args.remat == "auto" else {"remat_policy": args.remat}),
                              **({"scan_layers": True} if args.scan else {}),
                              **({"residual_dtype": args.residual_dtype}
                                 if args.residual_dtype else {})},
         "optimizer": {"name": "AdamW", "lr": args.lr, "warmup_steps": args.warmup,
                       "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": args.weight_decay}}
  with tempfile.TemporaryDirectory(prefix="ttq_") as tmp:
    work = pathlib.Path(tmp)
    model = initial_checkpoint(args.model, args.dtype, args.seed, work / "init")
    for name, array in stream.items():
      np.save(work / f"{name}.npy", array)
    (work / "run.json").write_text(json.dumps(run))
    curves = {name: run_side(name, work, args) for name in SIDES}
  ours, theirs = curves["crosstask"]["points"], curves["hf"]["points"]
  gap, gap_step = max_rel_loss_gap(ours, theirs, args.warmup)
  ratio, why = time_ratio(ours, theirs)
  payload = {
      "device": args.device,
      "note": ("CPU guard run (regression check of the pipeline), not a GPU result"
               if args.device == "cpu" else "GPU run"),
      "settings": {**run, "model": args.model, **model, "seed": args.seed,
                   "lengths_requested": list(args.lengths), "raw_text_tokens": raw,
                   "span_corruption": {"noise_density": span_corruption.NOISE_DENSITY,
                                       "mean_span_length": span_corruption.MEAN_SPAN_LENGTH,
                                       "sentinels": ttq_data.SENTINELS},
                   "vocabulary": "bytes (seqio.ByteVocabulary ids) + 100 sentinels",
                   "val_examples": len(stream["val_inputs"]),
                   "schedule": "linear warm-up to lr, linear decay to 0 at the last step",
                   "weight_decay_mask": "none on either side: every parameter decays "
                                        "(optax.adamw without mask, torch AdamW on all params)",
                   "loss": "mean cross-entropy per target token, no z-loss, no dropout",
                   "tokens": "input + target tokens trained on (no padding: every example "
                             "fills both lengths exactly)",
                   "wall_s": "seconds since the side's process started (imports, weight "
                             "loading, compilation included), validation time excluded"},
      "corpus": {"root": str(root), "texts": len(texts), "benchmarks": corpus},
      "curves": curves, "goals": GOALS,
      "max_rel_loss_gap": gap, "max_rel_loss_gap_at_step": gap_step,
      "time_ratio": ratio, "time_ratio_reason": why, "time_ratio_rtol": REACH_RTOL,
      "time_ratio_at_equal_steps": ours[-1]["wall_s"] / theirs[-1]["wall_s"],
  }
  args.out.mkdir(parents=True, exist_ok=True)
  harness.write("time_to_quality", payload, args.threads, start_load,
                out=str(args.out / "time_to_quality.json"))
  plot(curves, args.out / "time_to_quality.png",
       f"{args.model}, {args.device}, {args.dtype}, batch {args.batch} x "
       f"{run['inputs_length']}/{run['targets_length']}"
       + (" (CPU guard run, not a GPU result)" if args.device == "cpu" else ""))
  rows = [(p["step"], p["tokens"], q["val_loss"], p["val_loss"], q["wall_s"], p["wall_s"])
          for p, q in zip(ours, theirs)]
  print(harness.table(rows, ["step", "tokens", "HF val loss", "crosstask val loss", "HF s",
                             "crosstask s"]))
  for name in SIDES:
    side = curves[name]
    print(f"{name}: {side['device']}, first step done at {side['first_step_done_s']:.1f} s, "
          f"then {side['seconds_per_step_after_first'] * 1e3:.1f} ms/step")
  print(f"max_rel_loss_gap {gap:.2e} (step {gap_step}); time_ratio "
        f"{'null: ' + why if ratio is None else f'{ratio:.3f}'}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
