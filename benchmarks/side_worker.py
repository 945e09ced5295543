"""One framework's side of a side-by-side benchmark, in its own process.

    python benchmarks/side_worker.py crosstask|hf [train]   (driven by benchmarks/harness.Worker)

Reads one JSON request per line on stdin, answers one JSON line on stdout:
  save_checkpoint {model, dir}: (hf) a seeded random T5 1.1 model saved as an HF checkpoint
  setup {workload, checkpoint}: builds the workload, warms it up (WARMUP_CALLS), returns its output
    (workload kinds: train, train_batches, encode, greedy, beam4; decodes with
    path 'inference' go through the runtime's Inference over a tf.data set)
  run: one timed repetition -> {seconds}
  rss: peak resident memory of this process so far -> {max_rss_mb}
Only the framework named on the command line is imported. crosstask's side makes the
malloc settings of its entry point: `python -m crosstask.train`'s with `train`, else
`python -m crosstask.infer`'s.
"""

import json
import os
import pathlib
import resource
import sys
import time
import traceback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

THREADS = int(os.environ.get("CROSSTASK_BENCH_THREADS", "0")) or os.cpu_count()
VOCAB = 32128
MODELS = {  # T5 1.1 shapes: d_model, d_ff, layers (enc = dec), heads, d_kv
    "tiny": dict(d_model=128, d_ff=512, num_layers=2, num_heads=4, d_kv=32),
    "small": dict(d_model=512, d_ff=1024, num_layers=8, num_heads=6, d_kv=64),
}
LR, WEIGHT_DECAY = 1e-4, 1e-4
# Untimed calls after a workload is built (and after the call that returns its output).
# HF's training step needs more than one: in a fresh process its first steps ran up to
# 1.7x slower than its later ones (tiny step: 0.76, 0.74, 0.73, 0.50, 0.45 s).
WARMUP_CALLS = 3
EOS = 1


def random_batch(workload: dict):
  """Random non-padding tokens (ids >= 2, so no EOS in the inputs), seeded."""
  import numpy as np
  rng = np.random.default_rng(0)
  b = workload["batch"]
  enc = rng.integers(2, VOCAB, (b, workload["input_len"])).astype(np.int32)
  tgt = rng.integers(2, VOCAB, (b, workload.get("target_len", 1))).astype(np.int32)
  dec = np.concatenate([np.zeros((b, 1), np.int32), tgt[:, :-1]], 1)
  return {"encoder_input_tokens": enc, "decoder_input_tokens": dec, "decoder_target_tokens": tgt}


def cut_at_eos(rows) -> list[list[int]]:
  """Each row up to and including its first EOS (HF and crosstask pad differently after)."""
  out = []
  for row in rows:
    row = [int(t) for t in row]
    out.append(row[:row.index(EOS) + 1] if EOS in row else row)
  return out


def encoder_sample(encoded) -> list[float]:
  """A corner of the encoder output ([first 2 examples, 4 tokens, 8 features]) to compare sides."""
  return [float(x) for x in encoded[:2, :4, :8].ravel()]


class _Side:
  """A framework's side: `setup` builds `self.fn` (one workload call); `run` times it."""

  fn = None

  def _ready(self, fn, output) -> dict:
    """Keeps `fn` for `run` after WARMUP_CALLS untimed calls; the reply to `setup`."""
    for _ in range(WARMUP_CALLS):
      fn()
    self.fn = fn
    return {"output": output}

  def run(self) -> dict:
    start = time.perf_counter()
    self.fn()
    return {"seconds": time.perf_counter() - start}


class HFSide(_Side):
  """transformers' T5ForConditionalGeneration: a train step with torch AdamW, and generate."""

  def __init__(self):
    import torch
    torch.set_num_threads(THREADS)
    self.torch = torch

  def save_checkpoint(self, model: str, dir: str, vocab: int = VOCAB) -> dict:
    import transformers
    self.torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=vocab, feed_forward_proj="gated-gelu",
                                   tie_word_embeddings=False, dropout_rate=0.0,
                                   decoder_start_token_id=0, eos_token_id=EOS, pad_token_id=0,
                                   **MODELS[model])
    hf = transformers.T5ForConditionalGeneration(config)
    # transformers 5 ties lm_head to the embedding; T5 1.1 has its own.
    hf.lm_head = self.torch.nn.Linear(config.d_model, vocab, bias=False)
    self.torch.nn.init.normal_(hf.lm_head.weight, std=config.d_model ** -0.5)
    hf.save_pretrained(dir)
    return {"params": sum(p.numel() for p in hf.parameters())}

  def _load(self, checkpoint: str):
    import transformers
    hf = transformers.T5ForConditionalGeneration.from_pretrained(checkpoint, dtype=self.torch.float32)
    hf.config.dropout_rate = 0.0
    return hf

  def setup(self, workload: dict, checkpoint: str) -> dict:
    torch = self.torch
    hf = self._load(checkpoint)
    if workload["kind"] != "train_batches":
      tb = {k: torch.tensor(v, dtype=torch.long) for k, v in random_batch(workload).items()}
      mask = torch.ones_like(tb["encoder_input_tokens"])
    output = None
    if workload["kind"] == "train_batches":  # prepared batches (dynamic padding), one pass
      import numpy as np
      hf.train()
      opt = torch.optim.AdamW(hf.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
      data = np.load(workload["path"])
      batches = [{k[len(f"{i}/"):]: torch.tensor(data[k], dtype=torch.long)
                  for k in data.files if k.startswith(f"{i}/")}
                 for i in range(workload["num_batches"])]

      def fn():
        for b in batches:
          hf(**b).loss.backward()
          opt.step()
          opt.zero_grad(set_to_none=True)
    elif workload["kind"] == "train":
      hf.train()
      opt = torch.optim.AdamW(hf.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

      def fn():
        out = hf(input_ids=tb["encoder_input_tokens"], attention_mask=mask,
                 decoder_input_ids=tb["decoder_input_tokens"], labels=tb["decoder_target_tokens"])
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    elif workload["kind"] == "encode":
      hf.eval()

      def fn():
        with torch.inference_mode():
          return hf.encoder(input_ids=tb["encoder_input_tokens"], attention_mask=mask
                            ).last_hidden_state
      output = encoder_sample(fn().numpy())
    else:
      hf.eval()
      beams = workload.get("beams", 1)

      def fn():
        with torch.no_grad():
          return hf.generate(input_ids=tb["encoder_input_tokens"], attention_mask=mask,
                             do_sample=False, num_beams=beams, max_new_tokens=workload["new_tokens"],
                             length_penalty=1.0, early_stopping=False, eos_token_id=EOS,
                             pad_token_id=0, decoder_start_token_id=0)
      output = cut_at_eos(fn()[:, 1:].tolist())
    return self._ready(fn, output)


class CrosstaskSide(_Side):
  """The runtime's Trainer.train_step, the model's decoding programs or Inference."""

  def __init__(self, training: bool = False):
    # As `python -m crosstask.train` or `crosstask.infer` does, before JAX starts.
    from crosstask.runtime.config import platform
    print(f"host malloc: {platform.prepare_host('train' if training else 'infer')}",
          file=sys.stderr, flush=True)
    import jax
    self.jax = jax

  def setup(self, workload: dict, checkpoint: str) -> dict:
    import types
    import jax
    import numpy as np
    import optax
    from crosstask.models import decoding
    from crosstask.models import hf_import
    from crosstask.models.model import EncoderDecoderModel
    from crosstask.models.network import Transformer
    from crosstask.runtime.config import platform
    from crosstask.runtime.config import run as run_lib
    from crosstask.runtime.state import trainer as trainer_lib

    config, params = hf_import.load_hf_checkpoint(checkpoint, dtype="float32")
    config = config.__class__(**{**config.__dict__, "dropout_rate": 0.0,
                                 **workload.get("config_overrides", {})})
    vocab = types.SimpleNamespace(eos_id=EOS)
    batch = random_batch(workload) if workload["kind"] != "train_batches" else None
    output = None
    if workload["kind"] == "train_batches":  # prepared packed batches, one pass
      data = np.load(workload["path"])
      batches = [{k[len(f"{i}/"):]: data[k] for k in data.files if k.startswith(f"{i}/")}
                 for i in range(workload["num_batches"])]
      batch = batches[0]
    if workload["kind"] in ("train", "train_batches"):
      model = EncoderDecoderModel(Transformer(config), vocab, vocab, z_loss=0.0,
                                  loss_normalizing_factor="NUM_REAL_TARGET_TOKENS")
      rows, inputs = batch["encoder_input_tokens"].shape
      run = run_lib.resolve(model, batch_size=rows, lengths={
          "inputs": inputs, "targets": batch["decoder_target_tokens"].shape[1]},
                            profile=platform.profile(
                                train_compiler_options=workload.get("compiler_options")))
      trainer = trainer_lib.Trainer(run, optax.adamw(LR, weight_decay=WEIGHT_DECAY),
                                    optax.constant_schedule(LR))
      state = trainer.state_from_params(jax.device_put(params))
      del params  # As the runtime: the imported weights live on only in the state.
      rng = jax.random.key(0)
      self.state = state
      if workload["kind"] == "train_batches":
        jbatches = [jax.device_put(b) for b in batches]

        def fn():
          for b in jbatches:
            self.state, metrics = trainer.train_step(self.state, b, rng)
          jax.block_until_ready((self.state, metrics))
      else:
        batch["decoder_loss_weights"] = np.ones_like(batch["decoder_target_tokens"], np.float32)
        jbatch = jax.device_put(batch)

        def fn():
          self.state, metrics = trainer.train_step(self.state, jbatch, rng)
          jax.block_until_ready((self.state, metrics))
    elif workload["kind"] == "encode":
      module = Transformer(config)
      # Compiled as decoding compiles it, so it bounds decoding's time from below.
      options = platform.profile().decoding_compiler_options("encoder")
      encode = jax.jit(lambda p, t: module.apply({"params": p}, t, method=module.encode),
                       compiler_options=options or None)
      params, tokens = jax.device_put(params), jax.device_put(batch["encoder_input_tokens"])

      def fn():
        return jax.block_until_ready(encode(params, tokens))
      output = encoder_sample(np.asarray(fn()))
    else:
      beams = workload.get("beams", 1)
      if beams == 1:
        model = EncoderDecoderModel(Transformer(config), vocab, vocab)
      else:  # HF's beam search: length_penalty 1.0, early_stopping False.
        model = EncoderDecoderModel(Transformer(config), vocab, vocab,
                                    decode_fn=decoding.beam_search,
                                    default_decoder_params={"alpha": 1.0, "length_penalty": "hf"})
      feats = {"encoder_input_tokens": batch["encoder_input_tokens"],
               "decoder_input_tokens": np.zeros((workload["batch"], workload["new_tokens"]),
                                                np.int32)}
      if workload.get("path") == "inference":
        fn = _inference_fn(model, params, feats, beams)
      else:
        params, jbatch = jax.device_put(params), jax.device_put(feats)
        fn = decoding_fn(model, params, jbatch, beams, platform.profile())
      output = cut_at_eos(fn().tolist())
    return self._ready(fn, output)


def decoding_fn(model, params, batch: dict, beams: int, profile):
  """The model's two decoding programs, each jitted with the profile's options for it
  (as the runtime's Inference does, without its dataset and mesh)."""
  import jax
  import numpy as np
  encode, loop = model.decoding_programs(num_decodes=beams)
  encode = jax.jit(encode, compiler_options=profile.decoding_compiler_options("encoder") or None)
  loop = jax.jit(loop, compiler_options=profile.decoding_compiler_options("loop") or None)
  rng = jax.random.PRNGKey(0)

  def fn():
    seqs, _ = loop(params, batch, *encode(params, batch), rng)
    return np.asarray(seqs[:, 0])
  return fn


def _inference_fn(model, params, feats: dict, beams: int):
  """Decoding as `python -m crosstask.infer` and evaluation run it: the runtime's
  Inference over an enumerated tf.data set of the batch's examples (one batch)."""
  import jax
  import numpy as np
  import tensorflow as tf
  from crosstask.runtime.predict import inference
  from crosstask.runtime.sharding import partitioning
  partitioner = partitioning.Partitioner()
  params = jax.device_put(params, partitioner.replicated)
  runner = inference.Inference(model, partitioner,
                               jax.tree.map(lambda _: partitioner.replicated, params),
                               batch_size=len(feats["encoder_input_tokens"]), num_decodes=beams)
  feats = {**feats, "decoder_target_tokens": feats["decoder_input_tokens"]}
  ds = tf.data.Dataset.from_tensor_slices(feats).enumerate().cache()

  def fn():
    return np.asarray([tokens for _, tokens in sorted(runner.predict(params, ds))])
  return fn


def main() -> None:
  if sys.argv[1] == "crosstask":
    side = CrosstaskSide(training=sys.argv[2:] == ["train"])
  else:
    side = HFSide()
  for line in sys.stdin:
    request = json.loads(line)
    op = request.pop("op")
    try:
      if op == "exit":
        print(json.dumps({"ok": True}), flush=True)
        return
      if op == "rss":
        reply = {"max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
      else:
        reply = getattr(side, op)(**request)
    except Exception as e:  # pylint: disable=broad-except  # reported to the parent
      traceback.print_exc()
      reply = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(reply), flush=True)


if __name__ == "__main__":
  main()
