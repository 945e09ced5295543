"""The embedding and pair-scoring engines: sharded, length-bucketed, order-preserving."""

import types

import flax.linen as nn
import jax
import numpy as np
import pytest

from crosstask.models.config import TransformerConfig
from crosstask.models.model import EncoderDecoderModel
from crosstask.models.network import Transformer
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.jobs import embedding
from crosstask.runtime.jobs import relevance_lib
from crosstask.runtime.sharding import partitioning

CFG = TransformerConfig(vocab_size=48, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=2, num_decoder_layers=1, dropout_rate=0.0,
                        dtype="float32", relative_attention_num_buckets=8,
                        relative_attention_max_distance=16)
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=48)


@pytest.fixture(scope="module")
def setup():
  model = EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB)
  shapes = {"encoder_input_tokens": (1, 8), "decoder_input_tokens": (1, 4)}
  # Jitted: one compile where the eager init compiled each of its ~150 ops.
  params = jax.jit(lambda key: model.get_initial_variables(key, shapes))(
      jax.random.PRNGKey(0))["params"]
  part = partitioning.Partitioner()
  shardings = jax.tree.map(lambda _: part.replicated, params)
  rng = np.random.default_rng(0)
  texts = [list(rng.integers(2, 48, n)) + [1] for n in (3, 40, 7, 19, 2, 9)]
  return model, params, part, shardings, texts


def _padded(texts, length):
  out = np.zeros((len(texts), length), np.int32)
  for i, t in enumerate(texts):
    out[i, :len(t)] = t
  return out


def test_bucket_lengths():
  assert [embedding.bucket_length(n, 512) for n in (1, 16, 17, 300, 600)] == [
      16, 16, 32, 512, 512]


@pytest.mark.parametrize("pooling", ["mean", "first"])
def test_embedder_equals_model_embed_on_one_padded_batch(setup, pooling):
  model, params, part, shardings, texts = setup
  got = embedding.Embedder(model, part, shardings, batch_size=4, pooling=pooling).embed(
      params, texts, max_length=64)
  assert got.shape == (len(texts), 32) and got.dtype == np.float32
  # One batch padded to 48 vs the embedder's sorted batches padded to 16 / 64:
  # input order kept, padding changes nothing.
  want = np.asarray(jax.jit(model.embed, static_argnames="pooling")(
      params, {"encoder_input_tokens": _padded(texts, 48)}, pooling=pooling))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_target_scorer_equals_score_batch(setup):
  model, params, part, shardings, texts = setup
  target = [7, 9, 1]
  got = relevance_lib.TargetScorer(model, part, shardings, batch_size=4).score(
      params, texts, target, max_length=64)
  n = len(texts)
  batch = {"encoder_input_tokens": _padded(texts, 48),
           "decoder_input_tokens": np.array([[0, 7, 9]] * n, np.int32),
           "decoder_target_tokens": np.array([target] * n, np.int32),
           "decoder_loss_weights": np.ones((n, 3), np.int32)}
  np.testing.assert_allclose(got, np.asarray(jax.jit(model.score_batch)(params, batch)),
                             atol=1e-4)
  assert np.all(got < 0)


def test_unknown_pooling_is_refused(setup):
  model, _, part, shardings, _ = setup
  with pytest.raises(ValueError, match="pooling"):
    embedding.Embedder(model, part, shardings, 4, pooling="cls")


def test_run_param_template_has_the_initialized_shapes_with_their_shardings(setup):
  model, params, part, _, _ = setup
  params = nn.unbox(params)
  run = run_lib.resolve(model, part, batch_size=2, lengths={"inputs": 16, "targets": 8},
                        pads_batch=True)
  abstract, shardings = run.abstract_params()
  assert jax.tree.structure(abstract) == jax.tree.structure(params)
  assert jax.tree.structure(shardings) == jax.tree.structure(params)
  jax.tree.map(lambda a, p, sh: (a.shape, a.dtype, a.sharding) == (p.shape, p.dtype, sh) or
               pytest.fail(f"{a} vs {p.shape} {p.dtype} {sh}"), abstract, params, shardings)
