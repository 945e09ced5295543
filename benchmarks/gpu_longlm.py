"""GPU: LongLM-large training step in bfloat16, tokens/s and MFU, crosstask vs HF PyTorch.

Without a GPU it says so and exits 0. With one, each framework runs in its own
process (one after the other, so neither competes for the device): crosstask's
runtime Trainer step (compute bfloat16, float32 master weights, Adafactor, as
crosstask/gin/longlm/large.gin trains) and HF's T5ForConditionalGeneration of the same
shape under torch.autocast(bfloat16) with transformers' Adafactor. Goals: MFU >= 50%,
crosstask >= 1.5x HF.

MFU = model FLOPs per step / step time / the chip's published dense bf16 peak, with
model FLOPs = 3 x forward (backward = 2 x forward, no recomputation counted), and
forward = 2 x (matmul weights x tokens they see) + attention scores and values:
  encoder  L_e x [2 S (4 d h k + n d f + f d) + 4 S^2 h k]
  decoder  L_d x [2 T (8 d h k + n d f + f d) + 4 T^2 h k + 4 T S h k]  (self + cross)
           + 2 T d V (output layer); per example, times the batch
(d model width, h heads, k head width, f MLP width, n MLP input branches, V vocab,
S / T input / target length; the cross-attention K/V projections see S tokens:
they are counted as 2 S x 2 d h k per decoder layer).

    python benchmarks/gpu_longlm.py [--batch 8] [--inputs 512] [--targets 512] [--steps 10]
"""

import argparse
import json
import os
import subprocess
import sys

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


def model_flops(cfg, batch: int, s: int, t: int) -> float:
  d, h, k, f, v = cfg.d_model, cfg.num_heads, cfg.d_kv, cfg.d_ff, cfg.vocab_size
  n = len(cfg.activations)
  attn_w = 4 * d * h * k
  mlp_w = n * d * f + f * d
  enc = cfg.num_encoder_layers * (2 * s * (attn_w + mlp_w) + 4 * s * s * h * k)
  dec = cfg.num_decoder_layers * (2 * t * (2 * attn_w + mlp_w) - 2 * t * 2 * d * h * k
                                  + 2 * s * 2 * d * h * k
                                  + 4 * t * t * h * k + 4 * t * s * h * k)
  logits = 2 * t * d * v
  return 3.0 * batch * (enc + dec + logits)


def gpu_available() -> tuple[bool, str]:
  try:
    import jax
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
  except RuntimeError as e:
    return False, str(e)
  return (bool(gpus), gpus[0].device_kind if gpus else "no GPU among jax.devices()")


def _longlm_config():
  from crosstask.models import builder
  return builder.config_from_gin("crosstask/gin/longlm/large.gin",
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
  cfg = _longlm_config()
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
  return {"times": times, "device": jax.devices()[0].device_kind,
          "loss": float(m["loss"])}


def run_hf(args) -> dict:
  import time
  import torch
  import transformers
  from crosstask.models import hf_import
  cfg = _longlm_config()
  hf = transformers.T5ForConditionalGeneration(
      transformers.T5Config(**hf_import.hf_config_from(cfg))).cuda().train()
  opt = transformers.optimization.Adafactor(hf.parameters(), lr=1e-3, relative_step=False,
                                            scale_parameter=True, warmup_init=False)
  g = torch.Generator().manual_seed(0)
  b, s, t = args.batch, args.inputs, args.targets
  ids = torch.randint(2, cfg.vocab_size, (b, s), generator=g).cuda()
  labels = torch.randint(2, cfg.vocab_size, (b, t), generator=g).cuda()

  def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
      loss = hf(input_ids=ids, labels=labels).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
  for _ in range(2):
    step()
  torch.cuda.synchronize()
  times = []
  for _ in range(args.steps):
    start = time.perf_counter()
    step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - start)
  return {"times": times, "device": torch.cuda.get_device_name(0)}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--batch", type=int, default=8)
  parser.add_argument("--inputs", type=int, default=512)
  parser.add_argument("--targets", type=int, default=512)
  parser.add_argument("--steps", type=int, default=10)
  parser.add_argument("--side", choices=["crosstask", "hf"], help=argparse.SUPPRESS)
  parser.add_argument("--quick", action="store_true", help="3 timed steps")
  parser.add_argument("--out", default=None)
  args = parser.parse_args(argv)
  if args.quick:
    args.steps = 3
  if args.side:  # a child process: one framework, JSON on the last stdout line
    print(json.dumps((run_crosstask if args.side == "crosstask" else run_hf)(args)))
    return 0
  # The parent only looks: keep its JAX from reserving the memory the children need.
  os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
  ok, kind = gpu_available()
  if not ok:
    print(f"gpu_longlm: no GPU on this machine ({kind}); nothing to measure, skipping.")
    return 0
  start_load = os.getloadavg()
  sides = {}
  env = harness.thread_env(harness.default_threads())
  env.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)
  for side in ("crosstask", "hf"):
    proc = subprocess.run([sys.executable, __file__, f"--side={side}", f"--batch={args.batch}",
                           f"--inputs={args.inputs}", f"--targets={args.targets}",
                           f"--steps={args.steps}"], capture_output=True, text=True,
                          env=env, cwd=str(harness.ROOT))
    if proc.returncode:
      print(proc.stderr[-4000:], file=sys.stderr)
      raise SystemExit(f"gpu_longlm: the {side} side failed (exit {proc.returncode})")
    sides[side] = json.loads(proc.stdout.strip().splitlines()[-1])
  cfg = _longlm_config()
  flops = model_flops(cfg, args.batch, args.inputs, args.targets)
  peak = peak_flops(kind)
  tokens = args.batch * (args.inputs + args.targets)
  rows, payload = [], {}
  for side, r in sides.items():
    summ = harness.summary(r["times"], tokens)
    mfu = flops / summ["median_s"] / peak if peak else None
    payload[side] = {**summ, "mfu": mfu, "device": r["device"]}
    rows.append((side, summ["per_s_median"], summ["median_s"],
                 f"{100 * mfu:.1f}%" if mfu is not None else "peak unknown"))
  ratio = payload["crosstask"]["per_s_median"] / payload["hf"]["per_s_median"]
  print(f"\nLongLM-large ({cfg.num_encoder_layers}+{cfg.num_decoder_layers} layers, d {cfg.d_model}) "
        f"bf16 train step, batch {args.batch} x {args.inputs}/{args.targets}, on {kind} "
        f"(bf16 peak {peak / 1e12 if peak else float('nan'):.0f} TFLOP/s), "
        f"{flops / 1e12:.1f} TFLOP per step")
  print(harness.table(rows, ["side", "tokens/s", "step s", "MFU"]))
  print(f"ratio crosstask / HF {ratio:.2f} (goal 1.5); MFU goal 50%")
  harness.write("gpu_longlm", {
      "setup": {"batch": args.batch, "inputs": args.inputs, "targets": args.targets,
                "steps": args.steps, "device_kind": kind, "peak_bf16_flops": peak,
                "model_flops_per_step": flops},
      "results": payload, "ratio": ratio, "goals": {"mfu": 0.5, "ratio": 1.5}},
      harness.default_threads(), start_load, args.out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
