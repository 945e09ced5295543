"""CPU benchmark: training step (fwd + bwd + AdamW) and greedy decoding, crosstask vs HF.

Both frameworks run the same T5 1.1 config with the same weights (the HF model's,
imported), float32, dropout 0, batch 8 x 256 input / 64 target tokens, vocab 32128.
Repetitions alternate between the frameworks after a warm-up (which includes XLA
compilation). Decoding runs all 64 steps on both sides (no EOS). Prints a table and
writes benchmarks/results/step_and_decode.json.

Run it on a quiet machine: with other jobs on the 2 cores, PyTorch's spinning
intra-op threads slow down far more than XLA's, and ratios swing by several times
between runs (the JSON records the load average to judge this).

    python benchmarks/step_and_decode.py [--quick] [--models tiny,small]
"""

import argparse
import datetime
import functools
import json
import os
import pathlib
import platform
import statistics
import time
import sys
import types

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout

import jax
import jax.numpy as jnp
import numpy as np
import optax
import torch
import transformers

from crosstask.models import hf_import
from crosstask.models.model import EncoderDecoderModel
from crosstask.models.network import Transformer

MODELS = {  # T5 1.1 shapes: d_model, d_ff, layers (enc = dec), heads, d_kv
    "tiny": dict(d_model=128, d_ff=512, num_layers=2, num_heads=4, d_kv=32),
    "small": dict(d_model=512, d_ff=1024, num_layers=8, num_heads=6, d_kv=64),
}
BATCH, INPUT_LEN, TARGET_LEN, VOCAB, LR = 8, 256, 64, 32128, 1e-4
RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "step_and_decode.json"


def _hf_model(shape: dict) -> transformers.T5ForConditionalGeneration:
  torch.manual_seed(0)
  config = transformers.T5Config(vocab_size=VOCAB, feed_forward_proj="gated-gelu",
                                 tie_word_embeddings=False, dropout_rate=0.0,
                                 decoder_start_token_id=0, eos_token_id=1, pad_token_id=0, **shape)
  model = transformers.T5ForConditionalGeneration(config)
  model.generation_config.eos_token_id = None  # always decode TARGET_LEN steps
  return model


def _batch(rng: np.random.Generator) -> dict:
  enc = rng.integers(2, VOCAB, (BATCH, INPUT_LEN)).astype(np.int32)
  tgt = rng.integers(2, VOCAB, (BATCH, TARGET_LEN)).astype(np.int32)
  dec = np.concatenate([np.zeros((BATCH, 1), np.int32), tgt[:, :-1]], 1)
  return {"encoder_input_tokens": enc, "decoder_input_tokens": dec, "decoder_target_tokens": tgt,
          "decoder_loss_weights": np.ones_like(tgt, np.float32)}


def _timed(fn) -> float:
  start = time.perf_counter()
  fn()
  return time.perf_counter() - start


def bench(name: str, reps: int) -> dict:
  hf = _hf_model(MODELS[name])
  state = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
  config = hf_import.config_from_hf(hf.config.to_dict(), dtype="float32")
  params = jax.device_put(hf_import.params_from_hf_tensors(config, state))
  never = types.SimpleNamespace(eos_id=-1)  # no EOS: decode every step like HF
  model = EncoderDecoderModel(Transformer(config), never, never, z_loss=0.0,
                              loss_normalizing_factor="NUM_REAL_TARGET_TOKENS")
  batch = _batch(np.random.default_rng(0))
  jbatch = jax.device_put(batch)
  tx = optax.adamw(LR)
  opt_state = tx.init(params)

  # Params and optimizer state are donated, as the runtime's train step does.
  @functools.partial(jax.jit, donate_argnums=(0, 1))
  def train_step(p, s, b):
    (loss, _), grads = jax.value_and_grad(model.loss_fn, has_aux=True)(p, b, None)
    updates, s = tx.update(grads, s, p)
    return optax.apply_updates(p, updates), s, loss

  torch_opt = torch.optim.AdamW(hf.parameters(), lr=LR, weight_decay=1e-4)
  tb = {k: torch.tensor(v, dtype=torch.long) for k, v in batch.items() if "tokens" in k}
  mask = tb["encoder_input_tokens"] != 0

  def jax_train():
    nonlocal params, opt_state
    params, opt_state, loss = train_step(params, opt_state, jbatch)
    loss.block_until_ready()

  def torch_train():
    hf.train()
    out = hf(input_ids=tb["encoder_input_tokens"], attention_mask=mask,
             decoder_input_ids=tb["decoder_input_tokens"], labels=tb["decoder_target_tokens"])
    out.loss.backward()
    torch_opt.step()
    torch_opt.zero_grad(set_to_none=True)

  predict_batch = {"encoder_input_tokens": jbatch["encoder_input_tokens"],
                   "decoder_input_tokens": jnp.zeros((BATCH, TARGET_LEN), jnp.int32)}
  outputs = {}

  def jax_decode():
    outputs["jax"] = np.asarray(model.predict_batch(params, predict_batch))

  def torch_decode():
    hf.eval()
    with torch.no_grad():
      outputs["torch"] = hf.generate(input_ids=tb["encoder_input_tokens"], attention_mask=mask,
                                     do_sample=False, num_beams=1, max_new_tokens=TARGET_LEN,
                                     min_new_tokens=TARGET_LEN).numpy()[:, 1:]

  # Same weights before any update: greedy outputs must agree.
  jax_decode(), torch_decode()
  agree = float(np.mean(outputs["jax"] == outputs["torch"]))
  times = {k: [] for k in ("jax_train", "torch_train", "jax_decode", "torch_decode")}
  fns = {"jax_train": jax_train, "torch_train": torch_train, "jax_decode": jax_decode,
         "torch_decode": torch_decode}
  for fn in fns.values():  # warm-up (compilation for jax)
    fn()
  for _ in range(reps):
    for key, fn in fns.items():
      times[key].append(_timed(fn))
  train_tokens = BATCH * (INPUT_LEN + TARGET_LEN)
  decode_tokens = BATCH * TARGET_LEN
  row = {"model": name, "params": sum(p.numel() for p in hf.parameters()),
         "greedy_token_agreement": agree, "reps": reps}
  for key, ts in times.items():
    med = statistics.median(ts)
    tokens = train_tokens if "train" in key else decode_tokens
    row[f"{key}_s"] = med
    row[f"{key}_tokens_per_s"] = tokens / med
    # Best repetition: less sensitive to other jobs on a shared machine.
    row[f"{key}_best_tokens_per_s"] = tokens / min(ts)
  row["train_ratio_crosstask_over_hf"] = row["jax_train_tokens_per_s"] / row["torch_train_tokens_per_s"]
  row["decode_ratio_crosstask_over_hf"] = (row["jax_decode_tokens_per_s"]
                                           / row["torch_decode_tokens_per_s"])
  return row


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true", help="1 timed repetition instead of 3")
  parser.add_argument("--models", default="tiny,small", help="comma-separated: tiny,small")
  parser.add_argument("--out", default=str(RESULTS), help="JSON output path")
  args = parser.parse_args()
  names = [n.strip() for n in args.models.split(",") if n.strip()]
  for n in names:
    if n not in MODELS:
      raise SystemExit(f"--models: unknown model {n!r}; choose from {sorted(MODELS)}")
  reps = 1 if args.quick else 3
  start = time.perf_counter()
  rows = [bench(n, reps) for n in names]
  print(f"\nbatch {BATCH}, {INPUT_LEN} input / {TARGET_LEN} target tokens, vocab {VOCAB}, "
        f"float32, AdamW; median of {reps}; train tokens = input + target, decode = generated")
  header = (f"{'model':6} {'step crosstask':>15} {'step HF':>10} {'ratio':>6} "
            f"{'decode crosstask':>17} {'decode HF':>10} {'ratio':>6}  (tokens/s)")
  print(header)
  for r in rows:
    print(f"{r['model']:6} {r['jax_train_tokens_per_s']:15.0f} {r['torch_train_tokens_per_s']:10.0f} "
          f"{r['train_ratio_crosstask_over_hf']:6.2f} {r['jax_decode_tokens_per_s']:17.0f} "
          f"{r['torch_decode_tokens_per_s']:10.0f} {r['decode_ratio_crosstask_over_hf']:6.2f}")
  result = {
      "benchmark": "step_and_decode", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
      "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                  "torch_threads": torch.get_num_threads(), "jax_backend": jax.default_backend(),
                  # Other jobs on a shared machine skew both columns; recorded to judge that.
                  "load_average_1_5_15min_at_end": os.getloadavg()},
      "versions": {"jax": jax.__version__, "torch": torch.__version__,
                   "transformers": transformers.__version__},
      "setup": {"batch": BATCH, "input_len": INPUT_LEN, "target_len": TARGET_LEN, "vocab": VOCAB,
                "dtype": "float32", "optimizer": "adamw", "dropout": 0.0, "quick": args.quick},
      "results": rows, "total_seconds": time.perf_counter() - start,
  }
  out = pathlib.Path(args.out)
  out.parent.mkdir(parents=True, exist_ok=True)
  out.write_text(json.dumps(result, indent=2))
  print(f"wrote {out} ({result['total_seconds']:.0f} s)")


if __name__ == "__main__":
  main()
