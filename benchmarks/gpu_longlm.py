"""GPU: LongLM-large training step in bfloat16, tokens/s and MFU, crosstask vs HF PyTorch.

Without a GPU it says so and exits 0. With one, each framework runs in its own
process (one after the other, so neither competes for the device): crosstask's
runtime Trainer step (compute bfloat16, float32 master weights, Adafactor, as
crosstask/gin/longlm/large.gin trains) and HF's T5ForConditionalGeneration of the same
shape under torch.autocast(bfloat16) with transformers' Adafactor. Goals: MFU >= 50%,
crosstask >= 1.5x HF.

MFU = model FLOPs per step / step time / the chip's published dense bf16 peak, with
model FLOPs = 3 x the forward pass's matmul FLOPs (flops.train_step: backward = 2 x
forward, no recomputation counted):
  encoder  L_e x [2 S (4 d h k + n d f + f d) + 4 S^2 h k]
  decoder  L_d x [2 T (6 d h k + n d f + f d) + 4 S d h k + 4 T^2 h k + 4 T S h k]
           + 2 T d V (output layer); per example, times the batch
(d model width, h heads, k head width, f MLP width, n MLP input branches, V vocab,
S / T input / target length; the cross-attention keys and values are projected
from the S encoder tokens).

    python benchmarks/gpu_longlm.py [--batch 8] [--inputs 512] [--targets 512] [--steps 10]

`--platform cpu --model_gin crosstask/gin/t5_1_1/tiny.gin` runs both sides on the CPU
(no MFU: a CPU has no bf16 tensor-core peak); tests/benchmarks use it to keep this
script working on machines without a GPU.
"""

import argparse
import json
import os
import subprocess
import sys

import flops
import harness

sys.path.insert(0, str(harness.ROOT))

# Published dense (no sparsity) bf16 tensor-core peaks, FLOP/s.
PEAK_BF16 = {"H200": 989e12, "H100 SXM": 989e12, "H100 PCIe": 756e12, "H100": 989e12,
             "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10": 125e12, "V100": 125e12}


def peak_flops(device_kind: str) -> float | None:
  kind = device_kind.upper()
  for name, peak in PEAK_BF16.items():  # most specific first (dict order)
    if all(part in kind for part in name.upper().split()):
      return peak
  return None


def gpu_available() -> tuple[bool, str]:
  try:
    import jax
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
  except RuntimeError as e:
    return False, str(e)
  return (bool(gpus), gpus[0].device_kind if gpus else "no GPU among jax.devices()")


def _model_config(model_gin: str):
  from crosstask.runtime import model_gin as gin_models
  return gin_models.config_from_gin(model_gin,
                                 ["config.TransformerConfig.dtype = 'bfloat16'",
                                  "config.TransformerConfig.dropout_rate = 0.0"])


def run_crosstask(args) -> dict:
  import jax
  import numpy as np
  import time
  from crosstask.models.model import EncoderDecoderModel
  from crosstask.models.network import Transformer
  from crosstask.runtime import optimizers, partitioning
  from crosstask.runtime import trainer as trainer_lib
  cfg = _model_config(args.model_gin)
  model = EncoderDecoderModel(Transformer(cfg), None, None, z_loss=1e-4)
  tx, schedule = optimizers.create_optimizer(optimizers.adafactor, learning_rate=1e-3)
  rng = np.random.default_rng(0)
  b, s, t = args.batch, args.inputs, args.targets
  tgt = rng.integers(2, cfg.vocab_size, (b, t)).astype(np.int32)
  batch = {"encoder_input_tokens": rng.integers(2, cfg.vocab_size, (b, s)).astype(np.int32),
           "decoder_input_tokens": np.concatenate([np.zeros((b, 1), np.int32), tgt[:, :-1]], 1),
           "decoder_target_tokens": tgt}
  trainer = trainer_lib.Trainer(model, partitioning.Partitioner(), tx, schedule,
                                {k: v.shape for k, v in batch.items()})
  state = trainer.init_state(0)
  jb = jax.device_put(batch)
  key = jax.random.key(0)
  for _ in range(2):
    state, m = trainer.train_step(state, jb, key)
  jax.block_until_ready(m)
  times = []
  for _ in range(args.steps):
    start = time.perf_counter()
    state, m = trainer.train_step(state, jb, key)
    jax.block_until_ready(m)
    times.append(time.perf_counter() - start)
  return {"times": times, "device": jax.devices()[0].device_kind, "loss": float(m["loss"])}


def run_hf(args) -> dict:
  import time
  import torch
  import transformers
  from crosstask.models import hf_import
  cfg = _model_config(args.model_gin)
  device = "cuda" if args.platform == "gpu" else "cpu"
  torch.manual_seed(0)
  hf = transformers.T5ForConditionalGeneration(
      transformers.T5Config(**hf_import.hf_config_from(cfg))).to(device).train()
  opt = transformers.optimization.Adafactor(hf.parameters(), lr=1e-3, relative_step=False,
                                            scale_parameter=True, warmup_init=False)
  g = torch.Generator().manual_seed(0)
  b, s, t = args.batch, args.inputs, args.targets
  ids = torch.randint(2, cfg.vocab_size, (b, s), generator=g).to(device)
  labels = torch.randint(2, cfg.vocab_size, (b, t), generator=g).to(device)
  sync = torch.cuda.synchronize if device == "cuda" else lambda: None

  def step():
    with torch.autocast(device, dtype=torch.bfloat16):
      loss = hf(input_ids=ids, labels=labels).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss
  for _ in range(2):
    step()
  sync()
  times = []
  for _ in range(args.steps):
    start = time.perf_counter()
    loss = step()
    sync()
    times.append(time.perf_counter() - start)
  name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
  return {"times": times, "device": name, "loss": float(loss)}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--batch", type=int, default=8)
  parser.add_argument("--inputs", type=int, default=512)
  parser.add_argument("--targets", type=int, default=512)
  parser.add_argument("--steps", type=int, default=10)
  parser.add_argument("--model_gin", default="crosstask/gin/longlm/large.gin")
  parser.add_argument("--platform", choices=["gpu", "cpu"], default="gpu",
                      help="cpu: a smoke run of both sides without a GPU (no MFU)")
  parser.add_argument("--side", choices=["crosstask", "hf"], help=argparse.SUPPRESS)
  parser.add_argument("--quick", action="store_true", help="3 timed steps")
  parser.add_argument("--out", default=None,
                      help="JSON path (default benchmarks/results/gpu_longlm.json; cpu runs write "
                           "only when given)")
  args = parser.parse_args(argv)
  if args.quick:
    args.steps = 3
  if args.side:  # a child process: one framework, JSON on the last stdout line
    print(json.dumps((run_crosstask if args.side == "crosstask" else run_hf)(args)))
    return 0
  # The parent only looks: keep its JAX from reserving the memory the children need.
  os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
  if args.platform == "gpu":
    ok, kind = gpu_available()
    if not ok:
      print(f"gpu_longlm: no GPU on this machine ({kind}); nothing to measure, skipping.")
      return 0
  else:
    kind = "cpu"
  start_load = os.getloadavg()
  sides = {}
  env = harness.thread_env(harness.default_threads())
  env.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)
  if args.platform == "cpu":
    env["JAX_PLATFORMS"] = "cpu"
  for side in ("crosstask", "hf"):
    proc = subprocess.run([sys.executable, __file__, f"--side={side}", f"--batch={args.batch}",
                           f"--inputs={args.inputs}", f"--targets={args.targets}",
                           f"--steps={args.steps}", f"--model_gin={args.model_gin}",
                           f"--platform={args.platform}"], capture_output=True, text=True,
                          env=env, cwd=str(harness.ROOT))
    if proc.returncode:
      print(proc.stderr[-4000:], file=sys.stderr)
      raise SystemExit(f"gpu_longlm: the {side} side failed (exit {proc.returncode})")
    sides[side] = json.loads(proc.stdout.strip().splitlines()[-1])
  cfg = _model_config(args.model_gin)
  step_flops = flops.train_step(cfg, args.batch, args.inputs, args.targets)
  peak = peak_flops(kind) if args.platform == "gpu" else None
  tokens = args.batch * (args.inputs + args.targets)
  rows, payload = [], {}
  for side, r in sides.items():
    summ = harness.summary(r["times"], tokens)
    mfu = step_flops / summ["median_s"] / peak if peak else None
    payload[side] = {**summ, "mfu": mfu, "device": r["device"], "loss": r["loss"]}
    rows.append((side, summ["per_s_median"], summ["median_s"],
                 f"{100 * mfu:.1f}%" if mfu is not None else "peak unknown"))
  ratio = payload["crosstask"]["per_s_median"] / payload["hf"]["per_s_median"]
  print(f"\n{args.model_gin} ({cfg.num_encoder_layers}+{cfg.num_decoder_layers} layers, d {cfg.d_model}) "
        f"bf16 train step, batch {args.batch} x {args.inputs}/{args.targets}, on {kind} "
        f"(bf16 peak {peak / 1e12 if peak else float('nan'):.0f} TFLOP/s), "
        f"{step_flops / 1e12:.1f} TFLOP per step")
  print(harness.table(rows, ["side", "tokens/s", "step s", "MFU"]))
  print(f"ratio crosstask / HF {ratio:.2f} (goal 1.5); MFU goal 50%")
  if args.platform == "cpu" and not args.out:
    return 0  # a smoke run: results/gpu_longlm.json is for GPU measurements only
  harness.write("gpu_longlm", {
      "setup": {"model_gin": args.model_gin, "platform": args.platform, "batch": args.batch,
                "inputs": args.inputs, "targets": args.targets, "steps": args.steps,
                "device_kind": kind, "peak_bf16_flops": peak, "model_flops_per_step": step_flops},
      "results": payload, "ratio": ratio, "goals": {"mfu": 0.5, "ratio": 1.5}},
      harness.default_threads(), start_load, args.out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
