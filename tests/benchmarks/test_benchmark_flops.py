"""flops.py (the GFLOP/s and MFU yardstick) against a hand count and the dot products of
the traced model."""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flops
from crosstask.models.config import TransformerConfig
from crosstask.models.model import EncoderDecoderModel
from crosstask.models.network import Transformer


def _dot_flops(jaxpr) -> int:
  """2 x multiply-adds of every dot_general in a jaxpr, nested jaxprs included."""
  total = 0
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "dot_general":
      (lhs_contract, _), _ = eqn.params["dimension_numbers"]
      lhs = eqn.invars[0].aval.shape
      out = eqn.outvars[0].aval.shape
      total += 2 * math.prod(out) * math.prod(lhs[i] for i in lhs_contract)
    for value in eqn.params.values():
      for sub in value if isinstance(value, (tuple, list)) else (value,):
        inner = getattr(sub, "jaxpr", sub)
        if hasattr(inner, "eqns"):
          total += _dot_flops(inner)
  return total


def test_forward_and_train_counts_equal_a_hand_count():
  """A count written out by hand for one tiny shape, independent of flops.py's formulas.

  d=4, h=2, k=3 (hk=6), f=5, gated MLP (n=2), V=10, one encoder and one decoder
  layer, one example of S=3 input and T=2 target tokens; multiply-adds (MACs):
    encoder, per token: q, k, v, o 4*d*hk = 96, MLP n*d*f + f*d = 60 -> 156 x S = 468;
      attention: scores S*S*hk = 54 and weighted values 54 -> 108;    encoder 576
    cross-attention keys and values, once: S * 2*d*hk = 144;               144
    decoder, per token: self q, k, v, o 96 + cross q, o 48 + MLP 60 = 204;
      self-attention over the T targets 2*T*hk = 24, cross over S 2*S*hk = 36;
      logits d*V = 40 -> 304 x T = 608;                                  608
  1328 MACs = 2656 FLOPs forward; training 3x: 7968.
  """
  cfg = TransformerConfig(vocab_size=10, d_model=4, d_ff=5, num_heads=2, d_kv=3,
                          num_encoder_layers=1, num_decoder_layers=1,
                          activations=("gelu", "linear"))
  assert flops.encoder(cfg, 3) == 2 * 576
  assert flops.cross_keys_values(cfg, 3) == 2 * 144
  assert flops.forward(cfg, 1, 3, 2) == 2 * (576 + 144 + 608) == 2656
  assert flops.train_step(cfg, 1, 3, 2) == 7968
  assert flops.forward(cfg, 5, 3, 2) == 5 * 2656  # examples add up


@pytest.mark.parametrize("tied,activations,remat", [
    (False, ("gelu", "linear"), "none"), (True, ("relu",), "full")])
def test_forward_count_equals_the_traced_dots(tied, activations, remat):
  # Odd, unequal sizes so that a swapped term in the formula shows.
  cfg = TransformerConfig(vocab_size=53, d_model=24, d_ff=40, num_heads=3, d_kv=7,
                          num_encoder_layers=2, num_decoder_layers=3, activations=activations,
                          logits_via_embedding=tied, dropout_rate=0.0, dtype="float32",
                          remat_policy=remat)
  model = EncoderDecoderModel(Transformer(cfg), None, None)
  b, s, t = 2, 11, 5
  # Shapes are all the trace needs: nothing is initialised or compiled.
  params = jax.eval_shape(lambda: nn.unbox(model.get_initial_variables(
      jax.random.key(0), {"encoder_input_tokens": (b, s), "decoder_input_tokens": (b, t)})["params"]))
  batch = {"encoder_input_tokens": jnp.ones((b, s), jnp.int32),
           "decoder_input_tokens": jnp.ones((b, t), jnp.int32),
           "decoder_target_tokens": jnp.ones((b, t), jnp.int32)}
  traced = jax.make_jaxpr(lambda p: model._logits(p, batch))(params)
  assert _dot_flops(traced.jaxpr) == flops.forward(cfg, b, s, t)
  assert flops.train_step(cfg, b, s, t) == 3 * flops.forward(cfg, b, s, t)


def test_decode_count_is_the_encoder_once_plus_each_beams_tokens():
  cfg = TransformerConfig(vocab_size=53, d_model=24, d_ff=40, num_heads=3, d_kv=7,
                          num_encoder_layers=2, num_decoder_layers=3)
  once = flops.encoder(cfg, 11) + flops.cross_keys_values(cfg, 11)
  per_token = flops.decoder_token(cfg, 11, 4 / 2)
  assert flops.decode(cfg, 2, 11, 4, beams=3) == pytest.approx(2 * once + 2 * 3 * 4 * per_token)
  # A token attending to more of its own past costs more; the output layer is always there.
  assert flops.decoder_token(cfg, 11, 8) > flops.decoder_token(cfg, 11, 2)
  assert flops.decoder_token(cfg, 11, 0) > 2 * cfg.d_model * cfg.vocab_size


def test_step_and_decode_reports_the_shared_count():
  import step_and_decode
  import side_worker
  m = side_worker.MODELS["tiny"]
  cfg = TransformerConfig(vocab_size=side_worker.VOCAB, d_model=m["d_model"], d_ff=m["d_ff"],
                          num_heads=m["num_heads"], d_kv=m["d_kv"],
                          num_encoder_layers=m["num_layers"], num_decoder_layers=m["num_layers"],
                          activations=("gelu", "linear"))  # T5 1.1's gated MLP
  assert step_and_decode.model_gflop("tiny", step_and_decode.TRAIN) == pytest.approx(
      flops.train_step(cfg, 8, 256, 64) / 1e9)
  beam = next(w for w in step_and_decode.DECODES if w["kind"] == "beam4" and w["batch"] == 8)
  assert step_and_decode.model_gflop("tiny", beam) == pytest.approx(
      flops.decode(cfg, 8, 256, 32, beams=4) / 1e9)
  np.testing.assert_allclose(step_and_decode.model_gflop("small", step_and_decode.TRAIN),
                             414.1288, rtol=1e-6)  # pinned, so a change to the count shows
