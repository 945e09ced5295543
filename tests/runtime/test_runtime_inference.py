"""The runtime's Inference over a tf.data eval set: every example decoded once, the
last batch padded and cut, and the set read without tf.data's autotuning thread
(which held up the end of a pass until its next scheduled wake)."""

import types

import flax.linen as nn
import jax
import numpy as np
import tensorflow as tf

from crosstask.models import model as model_lib
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer
from crosstask.runtime.predict import inference
from crosstask.runtime.sharding import partitioning

CFG = TransformerConfig(vocab_size=300, d_model=32, d_ff=64, num_heads=2, d_kv=16,
                        num_encoder_layers=1, num_decoder_layers=1, dropout_rate=0.0,
                        dtype="float32")
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=300)


def test_a_partial_last_batch_decodes_like_the_model_and_autotuning_is_off(monkeypatch):
  model = model_lib.EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB)
  # Under jit: one compile instead of one per operation of an eager init.
  boxed = jax.jit(lambda rng: model.get_initial_variables(rng, {
      "encoder_input_tokens": (1, 12), "decoder_input_tokens": (1, 6)})["params"])(
          jax.random.key(0))
  params = nn.unbox(boxed)
  rng = np.random.default_rng(0)
  n = 11  # one full batch of 8 and 3 rows padded to 8
  feats = {"encoder_input_tokens": rng.integers(2, 300, (n, 12)).astype(np.int32),
           "decoder_input_tokens": np.zeros((n, 6), np.int32),
           "decoder_target_tokens": np.zeros((n, 6), np.int32)}
  ds = tf.data.Dataset.from_tensor_slices(feats).enumerate()
  read, original = [], inference._without_autotuning

  def recording(batched):
    out = original(batched)
    read.append(out.options().autotune.enabled)
    return out

  monkeypatch.setattr(inference, "_without_autotuning", recording)
  partitioner = partitioning.Partitioner(devices=jax.devices()[:1])
  runner = inference.Inference(model, partitioner, partitioner.logical_to_sharding(boxed),
                               batch_size=8)
  out = runner.predict(params, ds)
  assert read == [False]  # the one pass over the set, without autotuning
  assert ds.options().autotune.enabled is not False  # the caller's dataset is unchanged
  assert [i for i, _ in out] == list(range(n))
  want = np.asarray(jax.jit(model.predict_batch)(params, {k: feats[k] for k in (
      "encoder_input_tokens", "decoder_input_tokens")}))
  assert [t for _, t in out] == want.tolist()
  scores = runner.score(params, ds)
  assert [i for i, _ in scores] == list(range(n)) and len(read) == 2 and not read[1]


def test_each_batch_samples_with_its_own_key_and_a_pass_repeats():
  # Row j of every batch drew the same noise when all batches shared one key: eight
  # copies of one input, in two batches of four, gave four distinct samples, not eight.
  model = model_lib.EncoderDecoderModel(
      Transformer(CFG), VOCAB, VOCAB, default_decoder_params={"temperature": 1.0})
  boxed = jax.jit(lambda rng: model.get_initial_variables(rng, {
      "encoder_input_tokens": (1, 8), "decoder_input_tokens": (1, 6)})["params"])(
          jax.random.key(0))
  params = nn.unbox(boxed)
  partitioner = partitioning.Partitioner(devices=jax.devices()[:1])
  runner = inference.Inference(model, partitioner, partitioner.logical_to_sharding(boxed),
                               batch_size=4)
  feats = {"encoder_input_tokens": np.tile(np.arange(2, 10, dtype=np.int32), (8, 1)),
           "decoder_input_tokens": np.zeros((8, 6), np.int32),
           "decoder_target_tokens": np.zeros((8, 6), np.int32)}
  batches = [(np.arange(s, s + 4), {k: v[s:s + 4] for k, v in feats.items()}) for s in (0, 4)]
  out, aux = runner.predict_batches(params, batches)
  samples = [tuple(t) for _, t in out]
  assert len(set(samples)) == 8, samples  # 300 tokens at temperature 1: no two alike
  assert runner.predict_batches(params, batches) == (out, aux)  # the same keys each pass
