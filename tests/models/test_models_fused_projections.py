"""Projections that read one input as one matmul (`fused_qkv`, `fused_mlp`) compute the
same network: the same loss and gradients in training, the same tokens in decoding,
with fewer matmuls in the program. Parameters keep their kernels apart."""

import dataclasses
import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numpy_params
from crosstask.models import decoding
from crosstask.models import layers
from crosstask.models import model as model_lib
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer

# Gated (T5 1.1's two input branches), so the MLP has something to fuse.
CFG = TransformerConfig(vocab_size=48, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=2, num_decoder_layers=2, dropout_rate=0.0,
                        activations=("gelu", "linear"), dtype="float32",
                        relative_attention_num_buckets=8, relative_attention_max_distance=16)
FUSED = dataclasses.replace(CFG, fused_qkv=True, fused_mlp=True)
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=48)


def _batch(b=3, enc_len=10, dec_len=7):
  rng = np.random.default_rng(3)
  enc = rng.integers(2, 48, (b, enc_len)).astype(np.int32)
  enc[1, 6:] = 0
  dec_in = rng.integers(2, 48, (b, dec_len)).astype(np.int32)
  dec_in[:, 0] = 0
  return {"encoder_input_tokens": enc, "decoder_input_tokens": dec_in,
          "decoder_target_tokens": np.roll(dec_in, -1, axis=1)}


@functools.cache
def _params():
  b = _batch()
  params = numpy_params.random_params(Transformer(CFG), b["encoder_input_tokens"],
                                      b["decoder_input_tokens"])
  # Scaled up from the init's draws: the greedy decode then varies its tokens.
  return jax.tree.map(lambda x: x * 1.37, params)


def _loss(cfg, attention="xla"):
  net = Transformer(dataclasses.replace(cfg, attention=attention))
  b = _batch()
  weights = np.random.default_rng(0).normal(size=(3, 7, 48)).astype(np.float32)

  def loss(params):
    logits = net.apply({"params": params}, b["encoder_input_tokens"],
                       b["decoder_input_tokens"], b["decoder_target_tokens"])
    return jnp.sum(logits * weights)
  return loss


@pytest.mark.parametrize("attention", ["xla", "dot_product"])
def test_fused_projections_train_the_same_loss_and_gradients(attention):
  want, want_grads = jax.jit(jax.value_and_grad(_loss(CFG, attention)))(_params())
  got, grads = jax.jit(jax.value_and_grad(_loss(FUSED, attention)))(_params())
  np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
  assert jax.tree.structure(grads) == jax.tree.structure(want_grads)  # kernels apart
  for (path, g), w in zip(jax.tree_util.tree_flatten_with_path(grads)[0],
                          jax.tree.leaves(want_grads)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4,
                               atol=1e-5 * float(np.abs(w).max()), err_msg=str(path))


def _dots(fn, *args) -> int:
  return str(jax.make_jaxpr(fn)(*args)).count("dot_general[")


def test_fused_projections_run_fewer_matmuls():
  # A layer: self-attention 3 -> 1, cross-attention's keys and values 2 -> 1, the gated
  # MLP's inputs 2 -> 1; the encoder's 2 layers and the decoder's 2.
  saved = 2 * (2 + 1) + 2 * (2 + 1 + 1)
  assert _dots(_loss(CFG), _params()) - _dots(_loss(FUSED), _params()) == saved


@pytest.mark.parametrize("decode_fn,num_decodes", [(decoding.temperature_sample, 1),
                                                   (decoding.beam_search, 3)])
def test_fused_projections_decode_the_same_tokens_from_kernels_stacked_once(
    decode_fn, num_decodes):
  extra = {"temperature": 0.0} if num_decodes == 1 else {}

  batch = {**_batch(), "decoder_input_tokens": np.zeros((3, 7), np.int32),
           "decoder_target_tokens": np.zeros((3, 7), np.int32)}

  def decode(cfg):
    model = model_lib.EncoderDecoderModel(Transformer(cfg), VOCAB, VOCAB, decode_fn=decode_fn)
    return np.asarray(model.predict_batch(_params(), batch, decoder_params=extra,
                                          num_decodes=num_decodes))
  plain = decode(CFG)
  np.testing.assert_array_equal(decode(FUSED), plain)
  assert (plain > 1).any()
  stacked = model_lib.params_for_decoding(_params(), jnp.float32, fused_mlp=True)
  mlp = stacked["decoder"]["layers_1"]["mlp"]
  assert sorted(mlp) == [layers.FUSED_MLP, "wo"] and mlp[layers.FUSED_MLP].shape == (32, 64, 2)
  np.testing.assert_array_equal(mlp[layers.FUSED_MLP][:, :, 1],
                                _params()["decoder"]["layers_1"]["mlp"]["wi_1"])


def test_an_ungated_mlp_has_nothing_to_fuse():
  relu = dataclasses.replace(CFG, activations=("relu",))
  params = numpy_params.random_params(Transformer(relu), _batch()["encoder_input_tokens"],
                                      _batch()["decoder_input_tokens"])
  stacked = model_lib.params_for_decoding(params, jnp.float32, fused_mlp=True)
  assert sorted(stacked["decoder"]["layers_0"]["mlp"]) == ["wi", "wo"]
