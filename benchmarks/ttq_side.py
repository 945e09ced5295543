"""One side of the time-to-quality benchmark: a whole training run in its own process.

    python benchmarks/ttq_side.py crosstask|hf WORKDIR   (started by time_to_quality.py)

Reads WORKDIR/run.json (settings), WORKDIR/init (the shared initial weights as an HF
checkpoint) and WORKDIR/{train,val}_{inputs,targets}.npy (the example stream), trains
for run["steps"] steps and writes WORKDIR/<side>.json: the validation loss at every
evaluation point with the tokens seen and the seconds since this process started.

Why a process per side and a clock from the first line: the comparison is wall time
to a loss, imports, weight loading and compilation included, and neither framework
may share threads or caches with the other. Validation is timed apart and left out
of the training clock, because it measures the run rather than being part of it.
"""

import time

START = time.perf_counter()  # pylint: disable=wrong-import-position

import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def learning_rate(step: int, base: float, warmup: int, total: int) -> float:
  """Linear warm-up to `base` over `warmup` steps, then linear decay to 0 at `total`:
  the rate of update `step` (from 0), as optax's `schedules.linear_decay` gives it."""
  if step < warmup:
    return base * step / warmup
  return base * (1.0 - min((step - warmup) / max(total - warmup, 1), 1.0))


def batch_arrays(inputs: np.ndarray, targets: np.ndarray) -> dict[str, np.ndarray]:
  """The model's int32 features of some example rows: decoder inputs are the targets
  shifted right behind the start id 0."""
  targets = np.asarray(targets, np.int32)
  decoder_inputs = np.concatenate([np.zeros_like(targets[:, :1]), targets[:, :-1]], 1)
  return {"encoder_input_tokens": np.asarray(inputs, np.int32),
          "decoder_input_tokens": decoder_inputs, "decoder_target_tokens": targets}


def eval_steps(steps: int, every: int) -> list[int]:
  """Steps after which validation runs: 0 (the shared start), every `every`, the last."""
  return sorted(set(range(0, steps, every)) | {steps})


class CrosstaskSide:
  """The runtime's Trainer with optax AdamW, the model's loss for validation."""

  def __init__(self, run: dict, folder: pathlib.Path):
    import dataclasses
    from crosstask.runtime.config import platform
    platform.prepare_host("train")  # as `python -m crosstask.train`, before JAX starts
    import jax
    from crosstask.models import hf_import
    from crosstask.models.model import EncoderDecoderModel
    from crosstask.models.network import Transformer
    from crosstask.runtime.config import run as run_lib
    from crosstask.runtime.sharding import partitioning
    from crosstask.runtime.state import optimizers
    from crosstask.runtime.state import trainer as trainer_lib
    self.jax = jax
    config = hf_import.config_from_hf(json.loads((folder / "config.json").read_text()),
                                      dtype=run["dtype"])
    config = dataclasses.replace(config, dropout_rate=0.0, **run["crosstask_config"])
    # Mapped for the final config: scanned layer stacks take the stacked layout.
    params = hf_import.params_from_hf_tensors(config, hf_import.read_tensors(folder))
    # One device: a test session fakes 8 CPU devices; the benchmark is one chip.
    resolved = run_lib.resolve(
        EncoderDecoderModel(Transformer(config), None, None, z_loss=0.0,
                            loss_normalizing_factor="NUM_REAL_TARGET_TOKENS"),
        partitioning.Partitioner(num_partitions=1, devices=jax.devices()[:1]),
        batch_size=run["batch"],
        lengths={"inputs": run["inputs_length"], "targets": run["targets_length"]})
    platform.apply(resolved.profile)
    self.partitioner, model = resolved.partitioner, resolved.model
    self.config = model.module.config
    opt = run["optimizer"]
    schedule = optimizers.linear_decay(base_learning_rate=opt["lr"], total_steps=run["steps"],
                                       warmup_steps=opt["warmup_steps"])
    tx = optimizers.adamw(learning_rate=schedule, b1=opt["b1"], b2=opt["b2"], eps=opt["eps"],
                          weight_decay=opt["weight_decay"])
    self.trainer = trainer_lib.Trainer(resolved, tx, schedule)
    self.state = self.trainer.state_from_params(jax.device_put(params, jax.devices()[0]))
    self.rng = jax.random.key(0)
    self.losses = []
    self.evaluate = jax.jit(lambda p, b: model.loss_fn(p, b, None)[1])
    self.device = jax.devices()[0].device_kind

  def describe(self) -> dict:
    return {"device": self.device, "attention": self.config.attention,
            "remat": self.config.remat_policy, "scan_layers": self.config.scan_layers,
            "dtype": self.config.dtype,
            "residual_dtype": str(self.config.residual_stream_dtype)}

  def step(self, batch: dict[str, np.ndarray]) -> None:
    self.state, metrics = self.trainer.train_step(self.state, batch, self.rng)
    self.losses.append(metrics["loss"])

  def sync(self) -> None:
    self.jax.block_until_ready(self.state)

  def take_losses(self) -> list[float]:
    losses, self.losses = [float(x) for x in self.jax.device_get(self.losses)], []
    return losses

  def loss_sum(self, batch: dict[str, np.ndarray]) -> tuple[float, float]:
    with self.partitioner.context():
      metrics = self.jax.device_get(self.evaluate(self.state["params"], batch))
    count = float(metrics["nonpadding_tokens"])
    return float(metrics["loss"]) * count, count


class HFSide:
  """transformers' T5ForConditionalGeneration with torch AdamW (fused on CUDA)."""

  def __init__(self, run: dict, folder: pathlib.Path):
    import os
    import torch
    import transformers
    from crosstask.models import hf_import
    self.torch = torch
    torch.set_num_threads(int(os.environ.get("CROSSTASK_BENCH_THREADS", "0")) or os.cpu_count())
    self.device = run["device"]
    self.autocast = run["dtype"] == "bfloat16"
    try:
      hf = transformers.T5ForConditionalGeneration.from_pretrained(
          folder, dtype=torch.float32, attn_implementation="sdpa")
    except (ValueError, ImportError):
      hf = transformers.T5ForConditionalGeneration.from_pretrained(folder, dtype=torch.float32)
    if hf.lm_head.weight.data_ptr() == hf.shared.weight.data_ptr():
      # transformers 5 may tie lm_head to the embedding; T5 1.1 trains them apart.
      head = torch.nn.Linear(hf.config.d_model, hf.config.vocab_size, bias=False)
      head.weight.data.copy_(torch.from_numpy(hf_import.read_tensors(folder)["lm_head.weight"]))
      hf.lm_head = head
    self.attention = hf.config._attn_implementation  # pylint: disable=protected-access
    self.hf = hf.to(self.device).train()
    opt = run["optimizer"]
    # Every parameter decays, as optax.adamw (no mask) decays every leaf.
    self.opt = torch.optim.AdamW(self.hf.parameters(), lr=opt["lr"], betas=(opt["b1"], opt["b2"]),
                                 eps=opt["eps"], weight_decay=opt["weight_decay"],
                                 fused=self.device == "cuda")
    self.schedule = torch.optim.lr_scheduler.LambdaLR(
        self.opt, lambda s: learning_rate(s, 1.0, opt["warmup_steps"], run["steps"]))
    self.losses = []

  def describe(self) -> dict:
    name = self.torch.cuda.get_device_name(0) if self.device == "cuda" else "cpu"
    return {"device": name, "attention": self.attention, "fused_adamw": self.device == "cuda",
            "dtype": "bfloat16 autocast, float32 parameters" if self.autocast else "float32"}

  def _loss(self, batch: dict[str, np.ndarray]):
    torch = self.torch
    feats = {k: torch.from_numpy(v).long().to(self.device, non_blocking=True)
             for k, v in batch.items()}
    enc, target = feats["encoder_input_tokens"], feats["decoder_target_tokens"]
    with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.autocast):
      return self.hf(input_ids=enc, attention_mask=(enc != 0).long(),
                     decoder_input_ids=feats["decoder_input_tokens"],
                     labels=target.masked_fill(target == 0, -100)).loss

  def step(self, batch: dict[str, np.ndarray]) -> None:
    loss = self._loss(batch)
    loss.backward()
    self.opt.step()
    self.schedule.step()
    self.opt.zero_grad(set_to_none=True)
    self.losses.append(loss.detach())

  def sync(self) -> None:
    if self.device == "cuda":
      self.torch.cuda.synchronize()

  def take_losses(self) -> list[float]:
    losses, self.losses = [float(x) for x in self.losses], []
    return losses

  def loss_sum(self, batch: dict[str, np.ndarray]) -> tuple[float, float]:
    self.hf.eval()
    with self.torch.no_grad():
      loss = float(self._loss(batch))
    self.hf.train()
    count = float((batch["decoder_target_tokens"] > 0).sum())
    return loss * count, count


def validation_loss(side, inputs: np.ndarray, targets: np.ndarray, batch: int) -> float:
  """Mean loss per target token over the whole validation set."""
  total = count = 0.0
  for start in range(0, len(inputs), batch):
    s, n = side.loss_sum(batch_arrays(inputs[start:start + batch], targets[start:start + batch]))
    total, count = total + s, count + n
  return total / count


def train(side, run: dict, data: dict[str, np.ndarray]) -> dict:
  """Runs every step; at each evaluation point records tokens, training seconds and losses."""
  b, checkpoints = run["batch"], set(eval_steps(run["steps"], run["eval_every"]))
  tokens_per_step = b * (run["inputs_length"] + run["targets_length"])
  points, eval_s, first_step_s = [], 0.0, None
  for step in range(run["steps"] + 1):
    if step in checkpoints:
      side.sync()
      wall = time.perf_counter() - START - eval_s
      began = time.perf_counter()
      losses = side.take_losses()
      points.append({"step": step, "tokens": step * tokens_per_step, "wall_s": round(wall, 3),
                     "val_loss": validation_loss(side, data["val_inputs"], data["val_targets"], b),
                     "train_loss": float(np.mean(losses)) if losses else None})
      eval_s += time.perf_counter() - began
    if step < run["steps"]:
      side.step(batch_arrays(data["train_inputs"][step * b:(step + 1) * b],
                             data["train_targets"][step * b:(step + 1) * b]))
      if step == 0:
        side.sync()
        first_step_s = time.perf_counter() - START - eval_s
  later_steps = max(run["steps"] - 1, 1)  # after the first, which compiles
  return {"points": points, "first_step_done_s": round(first_step_s, 3),
          "seconds_per_step_after_first": (points[-1]["wall_s"] - first_step_s) / later_steps,
          "validation_s": round(eval_s, 3), **side.describe()}


def main() -> None:
  name, work = sys.argv[1], pathlib.Path(sys.argv[2])
  run = json.loads((work / "run.json").read_text())
  data = {k: np.load(work / f"{k}.npy", mmap_mode="r")
          for k in ("train_inputs", "train_targets", "val_inputs", "val_targets")}
  side = {"crosstask": CrosstaskSide, "hf": HFSide}[name](run, work / "init")
  (work / f"{name}.json").write_text(json.dumps(train(side, run, data), indent=1) + "\n")


if __name__ == "__main__":
  main()
