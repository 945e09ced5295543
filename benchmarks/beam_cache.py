"""Beam search's self-attention caches left in place against copied into each step's beam
order (`TransformerConfig.beam_self_cache`), side by side in one process.

The same weights (side_worker's T5 1.1 small, or tiny with --quick), the same batch, beam 4,
both settings compiled first, then timed repetitions alternating between them; the two
must decode the same tokens (checked and recorded). The GPU twin is gpu.py's
`decode:...:4:32:scan` row against its `:beam_reorder` row.

    python benchmarks/beam_cache.py [--quick] [--batch 32] [--new_tokens 128] [--reps 3]
"""

import argparse
import dataclasses
import os
import sys
import time
import types

import harness

sys.path.insert(0, str(harness.ROOT / "tests"))

SETTINGS = ("reorder", "indirect")


def _decoders(model: str, batch: int, input_len: int, new_tokens: int, beams: int):
  """({setting: jitted decode}, params, batch) for one of side_worker's model shapes."""
  import jax
  import numpy_params
  import side_worker
  from crosstask.models import decoding
  from crosstask.models import model as model_lib
  from crosstask.models.config import TransformerConfig
  from crosstask.models.network import Transformer
  s = side_worker.MODELS[model]
  cfg = TransformerConfig(vocab_size=side_worker.VOCAB, d_model=s["d_model"], d_ff=s["d_ff"],
                          num_heads=s["num_heads"], d_kv=s["d_kv"],
                          num_encoder_layers=s["num_layers"], num_decoder_layers=s["num_layers"],
                          activations=("gelu", "linear"), logits_via_embedding=False,
                          dropout_rate=0.0, dtype="float32")
  vocab = types.SimpleNamespace(eos_id=side_worker.EOS, vocab_size=side_worker.VOCAB)
  data = side_worker.random_batch({"batch": batch, "input_len": input_len,
                                   "target_len": new_tokens})
  enc, dec = data["encoder_input_tokens"], data["decoder_input_tokens"]
  params = numpy_params.random_params(Transformer(cfg), enc[:1, :8], dec[:1, :4])
  fns = {}
  for setting in SETTINGS:
    m = model_lib.EncoderDecoderModel(
        Transformer(dataclasses.replace(cfg, beam_self_cache=setting)), vocab, vocab,
        decode_fn=decoding.beam_search)
    fns[setting] = jax.jit(lambda p, b, m=m: m.predict_batch_with_aux(p, b, num_decodes=beams))
  return fns, params, data


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true", help="tiny model, batch 8, 16 tokens")
  parser.add_argument("--batch", type=int, default=32)
  parser.add_argument("--input_len", type=int, default=256)
  parser.add_argument("--new_tokens", type=int, default=128)
  parser.add_argument("--reps", type=int, default=3)
  parser.add_argument("--out", default=None,
                      help="JSON path (default benchmarks/results/...; --quick: a temp folder)")
  args = parser.parse_args(argv)
  model = "tiny" if args.quick else "small"
  if args.quick:
    args.batch, args.input_len, args.new_tokens, args.reps = 8, 32, 16, min(args.reps, 2)
  start_load = os.getloadavg()
  import jax
  import numpy as np
  fns, params, data = _decoders(model, args.batch, args.input_len, args.new_tokens, 4)
  outputs, compile_s = {}, {}
  for setting, fn in fns.items():
    t = time.perf_counter()
    outputs[setting] = jax.device_get(jax.block_until_ready(fn(params, data)))
    compile_s[setting] = time.perf_counter() - t
  same = bool((outputs["reorder"][0] == outputs["indirect"][0]).all())
  seconds = {setting: [] for setting in fns}
  for _ in range(args.reps):
    for setting, fn in fns.items():
      t = time.perf_counter()
      jax.block_until_ready(fn(params, data))
      seconds[setting].append(time.perf_counter() - t)
  generated = int(np.count_nonzero(outputs["indirect"][0]))
  rows = {setting: {**harness.summary(seconds[setting], generated),
                    "first_call_s": compile_s[setting]} for setting in fns}
  speedup = rows["reorder"]["min_s"] / rows["indirect"]["min_s"]
  print(harness.table([[s, r["min_s"], r["median_s"], r["per_s_best"]] for s, r in rows.items()],
                      ["self caches", "best s", "median s", "tokens/s"]))
  print(f"in place over copied: {speedup:.3f}x; same tokens: {same}")
  harness.write("beam_cache", {
      "device": jax.devices()[0].device_kind, "model": model, "batch": args.batch,
      "beams": 4, "input_len": args.input_len, "new_tokens": args.new_tokens,
      "generated_tokens": generated, "same_tokens": same, "rows": rows,
      "indirect_speedup": speedup}, harness.default_threads(), start_load, args.out,
      quick=args.quick)
  return 0 if same else 1


if __name__ == "__main__":
  sys.exit(main())
