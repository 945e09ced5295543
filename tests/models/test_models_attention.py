"""Fused attention implementations equal the einsum ("xla") attention, values and gradients.

Every case carries T5's relative-position bias, padding, packing segments and (in the
decoder) causality. "flash" is the real Pallas TPU kernel, run on CPU in its TPU
interpret mode (`pltpu.force_tpu_interpret_mode`), so the kernel's own bias, segment
and causal handling is what is tested. "cudnn" needs a GPU; on CPU the same
`jax.nn.dot_product_attention` call is tested through "dot_product", and the cuDNN
branch itself (bfloat16 operands, its bias cast) through XLA, with its error bound.
"""

import dataclasses
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental.pallas import tpu as pltpu

import numpy_params
from crosstask.models import attention
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer

CFG = TransformerConfig(vocab_size=64, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=1, num_decoder_layers=1, activations=("gelu", "linear"),
                        logits_via_embedding=False, dropout_rate=0.1, dtype="float32",
                        relative_attention_num_buckets=8, relative_attention_max_distance=16)


def _packed_batch():
  """Two rows: one packed with two segments and trailing padding, one padded only."""
  rng = np.random.default_rng(0)
  enc = rng.integers(2, 64, (2, 12)).astype(np.int32)
  enc_seg = np.array([[1] * 5 + [2] * 4 + [0] * 3, [1] * 9 + [0] * 3], np.int32)
  enc = enc * (enc_seg > 0)
  tgt = rng.integers(2, 64, (2, 10)).astype(np.int32)
  dec_seg = np.array([[1] * 4 + [2] * 4 + [0] * 2, [1] * 7 + [0] * 3], np.int32)
  tgt = tgt * (dec_seg > 0)
  dec = np.zeros_like(tgt)
  for row in range(2):  # shifted right within each segment, as the feature converter does
    for s in (1, 2):
      idx = np.flatnonzero(dec_seg[row] == s)
      if idx.size:
        dec[row, idx[1:]] = tgt[row, idx[:-1]]
  return enc, tgt, dec, enc_seg, dec_seg


@functools.cache
def _params():
  enc, tgt, dec, _, _ = _packed_batch()
  return numpy_params.random_params(Transformer(CFG), enc, dec)  # no init to compile


@functools.cache
def _logits_and_grads(implementation: str):
  cfg = dataclasses.replace(CFG, attention=implementation)
  model = Transformer(cfg)
  enc, tgt, dec, enc_seg, dec_seg = _packed_batch()
  weights = jnp.asarray(tgt > 0, jnp.float32)

  def loss(params):
    logits = model.apply({"params": params}, enc, dec, tgt, enc_seg, dec_seg)
    token = -jnp.take_along_axis(jax.nn.log_softmax(logits), tgt[..., None], -1)[..., 0]
    return jnp.sum(token * weights), logits

  (_, logits), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(_params())
  return logits, grads


def _assert_matches_xla(implementation: str, **tol):
  ref_logits, ref_grads = _logits_and_grads("xla")
  logits, grads = _logits_and_grads(implementation)
  _, tgt, _, _, _ = _packed_batch()
  valid = tgt > 0  # padding rows attend to nothing: their outputs are unspecified
  np.testing.assert_allclose(np.asarray(logits)[valid], np.asarray(ref_logits)[valid], **tol)
  flat_ref = jax.tree_util.tree_flatten_with_path(ref_grads)[0]
  flat = dict(jax.tree_util.tree_flatten_with_path(grads)[0])
  for path, ref in flat_ref:
    np.testing.assert_allclose(flat[path], ref, err_msg=jax.tree_util.keystr(path), **tol)
  # The gradient reaches the learned position biases through the fused path too.
  assert float(jnp.abs(grads["decoder"]["relpos_bias"]["rel_embedding"]).max()) > 0


def test_auto_is_the_xla_path():
  enc, tgt, dec, enc_seg, dec_seg = _packed_batch()
  ref, _ = _logits_and_grads("xla")
  # Jitted, like the reference: one compile instead of one per operation.
  auto = jax.jit(Transformer(dataclasses.replace(CFG, attention="auto")).apply)(
      {"params": _params()}, enc, dec, tgt, enc_seg, dec_seg)
  np.testing.assert_allclose(auto, ref, rtol=1e-6, atol=1e-6)


def test_dot_product_matches_xla_with_bias_padding_segments_and_causal():
  _assert_matches_xla("dot_product", rtol=2e-5, atol=2e-6)


@pytest.mark.slow
def test_flash_kernel_in_interpret_mode_matches_xla():
  with pltpu.force_tpu_interpret_mode():
    _assert_matches_xla("flash", rtol=2e-4, atol=2e-5)


def test_flash_function_pads_lengths_and_keeps_causal_segments():
  """The kernel wrapper alone, lengths not multiples of 128 (padded inside), q != k."""
  rng = np.random.default_rng(1)
  b, h, q_len, k_len, d = 2, 2, 20, 20, 8
  query, key, value = (jnp.asarray(rng.normal(size=(b, h, n, d)), jnp.float32)
                       for n in (q_len, k_len, k_len))
  bias = jnp.asarray(rng.normal(size=(1, h, q_len, k_len)), jnp.float32)
  seg = np.array([[1] * 12 + [2] * 6 + [0] * 2, [1] * 17 + [0] * 3])
  mask = attention.AttentionMask.from_valid(seg > 0, seg > 0, seg, seg, causal=True)

  def reference(query, key, value, bias):
    logits = jnp.einsum("bhqd,bhkd->bhqk", query, key) + bias + mask.bias()
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(logits), value)

  valid = jnp.asarray(seg > 0, jnp.float32)[:, None, :, None]
  def loss(fn):
    return lambda *args: jnp.sum(jnp.sin(fn(*args)) * valid)

  flash = lambda q, k, v, bias: attention.flash_attention(q, k, v, mask, bias)
  ref_grads = jax.grad(loss(reference), argnums=(0, 1, 2, 3))(query, key, value, bias)
  with pltpu.force_tpu_interpret_mode():
    out = flash(query, key, value, bias)
    grads = jax.grad(loss(flash), argnums=(0, 1, 2, 3))(query, key, value, bias)
  assert out.shape == (b, h, q_len, d)
  np.testing.assert_allclose(out * valid, reference(query, key, value, bias) * valid,
                             rtol=1e-4, atol=1e-5)
  for name, got, want in zip(("query", "key", "value", "bias"), grads, ref_grads):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)


def test_attention_mask_matches_padding_segments_and_causality():
  seg = np.array([[1, 1, 2, 2, 0]])
  mask = attention.AttentionMask.from_valid(seg > 0, seg > 0, seg, seg, causal=True)
  want = np.array([[1, 0, 0, 0, 0],
                   [1, 1, 0, 0, 0],
                   [0, 0, 1, 0, 0],
                   [0, 0, 1, 1, 0],
                   [0, 0, 0, 0, 0]], bool)  # padding attends to nothing, not even padding
  np.testing.assert_array_equal(mask.allowed()[0, 0], want)
  unpacked = attention.AttentionMask.from_valid(seg > 0, seg > 0)
  np.testing.assert_array_equal(unpacked.allowed()[0, 0], (seg > 0).T & (seg > 0))


def test_packed_mask_packs_pads_and_masks_causally():
  mask = attention.packed_mask([[2, 2], [3]], 5, causal=True)
  np.testing.assert_array_equal(mask.q_segments, [[1, 1, 2, 2, -1], [1, 1, 1, -1, -1]])
  np.testing.assert_array_equal(mask.allowed()[0, 0], [[1, 0, 0, 0, 0],
                                                        [1, 1, 0, 0, 0],
                                                        [0, 0, 1, 0, 0],
                                                        [0, 0, 1, 1, 0],
                                                        [0, 0, 0, 0, 0]])
  with pytest.raises(ValueError, match=r"segment_lengths\[1\]=\[4, 2\] exceed length 5"):
    attention.packed_mask([[1], [4, 2]], 5)


# The cuDNN branch's operands on CPU: bfloat16 queries, keys and values; a T5-sized
# position bias (std 3, so |bias| reaches ~10) in float32, which the branch casts to
# bfloat16 (8 significant bits: a logit moves by up to |bias| * 2^-9 ~ 0.02).
_B, _LEN, _HEADS, _D = 2, 24, 4, 16


def _half_precision_operands():
  rng = np.random.default_rng(0)
  q, k, v = (jnp.asarray(rng.normal(size=(_B, _LEN, _HEADS, _D)), jnp.bfloat16)
             for _ in range(3))
  bias = jnp.asarray(rng.normal(scale=3.0, size=(1, _HEADS, _LEN, _LEN)), jnp.float32)
  return q, k, v, bias


def _float32_attention(q, k, v, bias, mask):
  q, k, v = (x.astype(jnp.float32) for x in (q, k, v))
  logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) + bias + mask.bias()
  return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(logits), v)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_cudnn_branch_through_xla_keeps_masks_and_bounds_the_bias_cast(causal):
  """The "cudnn" call, bias cast included, run by XLA on a padded, packed batch.

  Against float32 attention the largest error over real positions is 0.016 (causal)
  and 0.012 (bidirectional) on outputs up to |3.3|; the bound 0.03 keeps 2x room.
  The cast alone (float32 attention with the bias rounded to bfloat16) costs ~0.011.
  A lost mask or bias moves outputs by O(1).
  """
  q, k, v, bias = _half_precision_operands()
  mask = attention.packed_mask([[10, 8], [17]], _LEN, causal=causal)
  got = attention.cudnn_attention(q, k, v, mask, bias, implementation=None)
  assert got.dtype == jnp.bfloat16
  real = np.asarray(mask.q_segments >= 0)  # padding rows attend to nothing: unspecified
  want = np.asarray(_float32_attention(q, k, v, bias, mask))[real]
  error = np.abs(np.asarray(got, np.float32)[real] - want)
  assert error.max() < 0.03, error.max()
  # The branch does cast: it equals the float32-bias call given a bfloat16 bias, not
  # the float32 one that "dot_product" passes.
  cast = attention.fused_attention("dot_product", q, k, v, mask, bias.astype(jnp.bfloat16))
  uncast = attention.fused_attention("dot_product", q, k, v, mask, bias)
  np.testing.assert_array_equal(np.asarray(got, np.float32)[real],
                                np.asarray(cast, np.float32)[real])
  assert np.abs(np.asarray(got, np.float32) - np.asarray(uncast, np.float32))[real].max() > 0


def test_cudnn_refuses_float32_by_name():
  cfg = dataclasses.replace(CFG, attention="cudnn")
  enc, tgt, dec, _, _ = _packed_batch()
  with pytest.raises(ValueError, match="attention='cudnn' needs dtype bfloat16"):
    Transformer(cfg).apply({"params": _params()}, enc, dec, tgt)


def test_unknown_attention_is_named():
  with pytest.raises(ValueError, match="TransformerConfig.attention"):
    dataclasses.replace(CFG, attention="flash2")


def test_fused_attention_skips_probability_dropout_only():
  """With dropout on, the fused path still drops residual / MLP activations (outputs
  change with the rng) but not attention probabilities (documented in attention.py)."""
  cfg = dataclasses.replace(CFG, attention="dot_product")
  enc, tgt, dec, _, _ = _packed_batch()
  apply = lambda seed: Transformer(cfg).apply(
      {"params": _params()}, enc, dec, tgt, enable_dropout=True,
      rngs={"dropout": jax.random.PRNGKey(seed)})
  assert float(jnp.abs(apply(1) - apply(2)).max()) > 0
  assert np.array_equal(apply(1), apply(1))


@pytest.mark.slow
def test_flash_runs_per_shard_under_a_mesh():
  """Under a data x model mesh the kernel runs on each device's examples and heads
  (a Pallas kernel cannot be partitioned by the compiler) and gives the same values
  and gradients as one unsharded call."""
  rng = np.random.default_rng(2)
  b, h, length, d = 4, 2, 20, 8
  query, key, value = (jnp.asarray(rng.normal(size=(b, h, length, d)), jnp.float32)
                       for _ in range(3))
  bias = jnp.asarray(rng.normal(size=(1, h, length, length)), jnp.float32)
  seg = np.array([[1] * 12 + [2] * 6 + [0] * 2] * 2 + [[1] * 20] * 2)
  mask = attention.AttentionMask.from_valid(seg > 0, seg > 0, seg, seg, causal=True)
  mesh = jax.make_mesh((4, 2), ("data", "model"),
                       axis_types=(jax.sharding.AxisType.Auto,) * 2)

  def loss(fn):
    return lambda q, bias: jnp.sum(jnp.sin(fn(q, key, value, mask, bias)))

  with pltpu.force_tpu_interpret_mode():
    want = attention.flash_attention(query, key, value, mask, bias)
    want_grads = jax.grad(loss(attention.flash_attention), argnums=(0, 1))(query, bias)
    with jax.set_mesh(mesh), nn.logical_axis_rules((("batch", "data"), ("heads", "model"))):
      got = jax.jit(attention.sharded_flash_attention)(query, key, value, mask, bias)
      grads = jax.jit(jax.grad(loss(attention.sharded_flash_attention), argnums=(0, 1)))(
          query, bias)
  assert got.sharding.spec[:2] == ("data", "model")
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  for g, w in zip(grads, want_grads):
    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
