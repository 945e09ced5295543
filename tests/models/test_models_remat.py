"""remat_policy changes what the backward pass keeps, never the numbers."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer

CFG = TransformerConfig(vocab_size=64, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=2, num_decoder_layers=2, activations=("gelu", "linear"),
                        logits_via_embedding=False, dropout_rate=0.1, dtype="float32",
                        relative_attention_num_buckets=8, relative_attention_max_distance=16)


@functools.cache
def _loss_and_grads(policy):
  cfg = dataclasses.replace(CFG, remat_policy=policy)
  model = Transformer(cfg)
  rng = np.random.default_rng(0)
  enc = jnp.asarray(rng.integers(2, 64, (2, 8)), jnp.int32)
  dec = jnp.asarray(rng.integers(2, 64, (2, 6)), jnp.int32)
  params = Transformer(CFG).init(jax.random.PRNGKey(0), enc, dec)["params"]

  def loss(p):  # dropout on: remat must replay the same masks
    logits = model.apply({"params": p}, enc, dec, dec, enable_dropout=True,
                         rngs={"dropout": jax.random.PRNGKey(1)})
    return jnp.mean(jax.nn.logsumexp(logits, -1))
  return jax.jit(jax.value_and_grad(loss))(params)


@pytest.mark.parametrize("policy", ["full", "minimal"])
def test_remat_keeps_loss_and_gradients(policy):
  ref_loss, ref_grads = _loss_and_grads("none")
  loss, grads = _loss_and_grads(policy)
  np.testing.assert_allclose(loss, ref_loss, rtol=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7), grads, ref_grads)


def test_unknown_remat_policy_is_named():
  with pytest.raises(ValueError, match="remat_policy"):
    dataclasses.replace(CFG, remat_policy="dots")
