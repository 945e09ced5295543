""""cudnn_segments": packed segments handed to cuDNN as offsets and lengths.

cuDNN's ragged layout needs a Hopper GPU, so here (CPU) its call is replaced by a
reference that reads the same arguments as the layout's documentation says the kernel
does (jax._src.cudnn.fused_attention_stablehlo.dot_product_attention): each slot pairs
a query segment with a key segment, positions count from the segment's start (the bias
read at segment-local positions, the strictest reading), and every position outside a
segment is left as garbage (NaN) in the output and in the gradients. What is tested is
crosstask's side: the layout it derives from the mask, the guards that keep the garbage
out, the relative bias that makes local positions safe, and the fallback to the mask
call. Whether the kernel itself agrees is the GPU benchmark's `check` row.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.cudnn import fused_attention_stablehlo as cudnn_lib

from crosstask.models import attention

_LEN, _HEADS, _D = 16, 2, 8


def _mask(q_rows, k_rows=None, *, causal=False):
  """AttentionMask from per-row segment ids (lists; -1 marks padding)."""
  k_rows = q_rows if k_rows is None else k_rows
  q, k = np.asarray(q_rows, np.int32), np.asarray(k_rows, np.int32)
  return attention.AttentionMask.from_valid(jnp.asarray(q >= 0), jnp.asarray(k >= 0),
                                            jnp.asarray(q), jnp.asarray(k), causal=causal)


def _row(*lengths, pad_to=_LEN, first_id=1):
  ids = [i for n, length in enumerate(lengths) for i in [first_id + n] * length]
  return ids + [-1] * (pad_to - len(ids))


def _allowed_from_layout(layout, causal, q_len, k_len):
  """Boolean [batch, q, k] the layout describes: slot by slot, each query segment with
  its key segment (causal: by position within the segment)."""
  q_seqlen, kv_seqlen = np.asarray(layout.q_seqlen), np.asarray(layout.kv_seqlen)
  q_off, kv_off = np.asarray(layout.q_offsets), np.asarray(layout.kv_offsets)
  out = np.zeros((q_seqlen.shape[0], q_len, k_len), bool)
  for b, m in zip(*np.nonzero(q_seqlen >= 0)):
    for i in range(q_seqlen[b, m]):
      for j in range(kv_seqlen[b, m]):
        if not causal or j <= i:
          out[b, q_off[b, m] + i, kv_off[b, m] + j] = True
  return out


CASES = {
    "packed_and_padded": [_row(5, 4, 3), _row(9), _row(2, 2, 2, 2, 2, 2, 2, 2)],
    "unpacked": [_row(11, first_id=0), _row(16, first_id=0), _row(1, first_id=0)],
}


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_layout_describes_the_mask_it_is_read_from(case, causal):
  mask = _mask(CASES[case], causal=causal)
  layout = attention.segment_layout(mask)
  assert bool(layout.exact)
  want = np.asarray(mask.allowed())[:, 0]
  np.testing.assert_array_equal(_allowed_from_layout(layout, causal, _LEN, _LEN), want)
  # The -1 fill the kernel expects: offsets one longer than lengths, ending in -1.
  assert layout.q_offsets.shape == (3, attention.MAX_SEGMENTS + 1)
  assert (np.asarray(layout.q_offsets)[:, -1] == -1).all()


def test_cross_attention_pairs_segments_by_id_even_where_one_side_is_empty():
  # Decoder rows against encoder rows of other lengths; row 0's second example has no
  # target tokens (id 2 absent on the query side), so slot 1 is empty there only.
  q = [_row(3, 0, 4, pad_to=10), _row(6, pad_to=10)]
  k = [_row(5, 2, 6), _row(12)]
  mask = _mask(q, k)
  layout = attention.segment_layout(mask)
  assert bool(layout.exact)
  np.testing.assert_array_equal(np.asarray(layout.q_seqlen)[0, :3], [3, 0, 4])
  np.testing.assert_array_equal(np.asarray(layout.kv_seqlen)[0, :3], [5, 2, 6])
  # The empty segment's offset is the next one's start: offsets never decrease.
  np.testing.assert_array_equal(np.asarray(layout.q_offsets)[0, :3], [0, 3, 3])
  np.testing.assert_array_equal(_allowed_from_layout(layout, False, 10, _LEN),
                                np.asarray(mask.allowed())[:, 0])


def test_the_layout_is_not_exact_past_its_slots_or_for_a_split_segment():
  too_many = [_row(*[1] * (attention.MAX_SEGMENTS + 1))]
  split = [[1, 1, 2, 2, 1] + [-1] * (_LEN - 5)]
  assert not bool(attention.segment_layout(_mask(too_many)).exact)
  assert not bool(attention.segment_layout(_mask(split)).exact)
  assert bool(attention.segment_layout(_mask([_row(*[1] * attention.MAX_SEGMENTS)])).exact)


def _kernel_reference(query, key, value, bias, mask, q_seqlen, kv_seqlen, q_offsets,
                      kv_offsets, *, scale, mask_type, qkv_layout):
  """The ragged kernel as documented, with NaN wherever it leaves memory untouched:
  outputs off the query segments, gradient rows off either side's segments."""
  assert mask is None and scale == 1.0 and qkv_layout == "BTNH"
  causal = mask_type == cudnn_lib.MaskType.PADDING_CAUSAL
  assert causal or mask_type == cudnn_lib.MaskType.PADDING
  assert bias is None or bias.shape == (1, query.shape[2], query.shape[1], key.shape[1])

  def place(offsets, seqlen, length):  # each position's slot (-1: none) and local index
    pos = jnp.arange(length)[None, :, None]
    start = offsets[:, None, :-1]
    inside = (seqlen[:, None, :] > 0) & (pos >= start) & (pos < start + seqlen[:, None, :])
    slot = jnp.where(inside.any(-1), jnp.argmax(inside, -1), -1)
    return slot, jnp.where(inside, pos - start, 0).sum(-1)

  q_slot, q_local = place(q_offsets, q_seqlen, query.shape[1])
  k_slot, k_local = place(kv_offsets, kv_seqlen, key.shape[1])
  ok = (q_slot[:, :, None] == k_slot[:, None, :]) & (q_slot[:, :, None] >= 0)
  if causal:
    ok &= k_local[:, None, :] <= q_local[:, :, None]
  q_in = (q_slot >= 0)[:, :, None, None]
  k_in = (k_slot >= 0)[:, :, None, None]
  where = (ok, q_local, k_local, q_in, k_in)  # arguments: a custom_vjp closes over no tracer

  def clean(query, key, value, bias, ok, q_local, k_local):
    logits = jnp.einsum("bqhd,bkhd->bhqk", query, key, preferred_element_type=jnp.float32)
    if bias is not None:
      local_bias = jnp.moveaxis(bias[0][:, q_local[:, :, None], k_local[:, None, :]], 0, 1)
      logits = logits + local_bias.astype(jnp.float32)
    logits = jnp.where(ok[:, None], logits, -1e30)
    probs = jax.nn.softmax(logits, axis=-1).astype(value.dtype)
    return jnp.einsum("bhqk,bkhd->bqhd", probs, value)

  @jax.custom_vjp
  def kernel(query, key, value, bias, where):
    ok, q_local, k_local, q_in, _ = where
    return jnp.where(q_in, clean(query, key, value, bias, ok, q_local, k_local), jnp.nan)

  def fwd(query, key, value, bias, where):
    return kernel(query, key, value, bias, where), (query, key, value, bias, where)

  def bwd(res, g):
    query, key, value, bias, where = res
    ok, q_local, k_local, q_in, k_in = where
    _, vjp = jax.vjp(lambda q, k, v, b: clean(q, k, v, b, ok, q_local, k_local),
                     query, key, value, bias)
    dq, dk, dv, dbias = vjp(g)
    return (jnp.where(q_in, dq, jnp.nan), jnp.where(k_in, dk, jnp.nan),
            jnp.where(k_in, dv, jnp.nan), dbias, None)
  kernel.defvjp(fwd, bwd)
  return kernel(query, key, value, bias, where)


def _relative_bias(table, q_len, k_len):
  """[1, heads, q, k] with bias[h, i, j] = table[h, j - i + q_len - 1]: T5's kind."""
  distance = jnp.arange(k_len)[None, :] - jnp.arange(q_len)[:, None] + q_len - 1
  return table[:, distance][None]


def _operands(q_len, k_len, seed=0):
  rng = np.random.default_rng(seed)
  q = jnp.asarray(rng.normal(size=(3, q_len, _HEADS, _D)), jnp.bfloat16)
  k, v = (jnp.asarray(rng.normal(size=(3, k_len, _HEADS, _D)), jnp.bfloat16) for _ in "kv")
  table = jnp.asarray(rng.normal(scale=2.0, size=(_HEADS, q_len + k_len - 1)), jnp.float32)
  return q, k, v, table


def _loss_and_grads(implementation, mask, with_bias, q, k, v, table):
  real = (mask.q_segments >= 0)[:, :, None, None]

  def loss(q, k, v, table):
    bias = _relative_bias(table, q.shape[1], k.shape[1]) if with_bias else None
    out = attention.fused_attention(implementation, q, k, v, mask, bias)
    # A padding query's output is unspecified; the model never reads it into a loss.
    return jnp.sum(jnp.where(real, out.astype(jnp.float32), 0.0) ** 2), out
  (value, out), grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3), has_aux=True))(
      q, k, v, table)
  return value, out, grads


@pytest.fixture
def ragged_kernel_on_cpu(monkeypatch):
  """The kernel replaced by the reference; the mask call ("cudnn") by XLA's version."""
  monkeypatch.setattr(cudnn_lib, "dot_product_attention", _kernel_reference)
  mask_call = attention._dot_product_attention  # pylint: disable=protected-access

  def through_xla(query, key, value, mask, bias, implementation):
    assert implementation in ("cudnn", None)  # "cudnn" there, "dot_product" beside it
    return mask_call(query, key, value, mask, bias, None)
  monkeypatch.setattr(attention, "_dot_product_attention", through_xla)


# (query rows, key rows or None for self-attention, causal, position bias): the
# encoder's and decoder's self-attention carry T5's bias, cross-attention none.
CALLS = {
    "self_packed": (CASES["packed_and_padded"], None, False, True),
    "self_packed_causal": (CASES["packed_and_padded"], None, True, True),
    "self_unpacked_causal": (CASES["unpacked"], None, True, True),
    "cross": ([_row(3, 0, 4, pad_to=10), _row(6, pad_to=10), _row(1, 1, pad_to=10)],
              [_row(5, 2, 6), _row(12), _row(7, 3)], False, False),
    # Over MAX_SEGMENTS: the mask call runs instead (the layout would drop segment 9).
    "past_the_slots": ([_row(*[1] * 9, 4)] * 3, None, True, True),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_the_ragged_call_equals_the_mask_call_values_and_gradients(call, ragged_kernel_on_cpu):
  del ragged_kernel_on_cpu
  q_rows, k_rows, causal, with_bias = CALLS[call]
  mask = _mask(q_rows, k_rows, causal=causal)
  q_len, k_len = mask.q_segments.shape[1], mask.k_segments.shape[1]
  operands = _operands(q_len, k_len)
  want_loss, want_out, want_grads = _loss_and_grads("dot_product", mask, with_bias, *operands)
  loss, out, grads = _loss_and_grads("cudnn_segments", mask, with_bias, *operands)
  real = np.asarray(mask.q_segments >= 0)
  assert np.isfinite(np.asarray(out, np.float32)).all()
  if bool(attention.segment_layout(mask).exact):  # off the segments: the guards' zeros
    assert (np.asarray(out, np.float32)[~real] == 0).all()
  else:
    assert call == "past_the_slots"
  np.testing.assert_allclose(np.asarray(out, np.float32)[real],
                             np.asarray(want_out, np.float32)[real], atol=0.05, rtol=0.02)
  np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-2)
  for name, got, want in zip("qkv", grads[:3], want_grads[:3]):
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert np.isfinite(got).all(), name
    np.testing.assert_allclose(got, want, atol=0.05 * np.abs(want).max(), err_msg=name)
  # The relative table's gradient: read per segment, the bias still sums by distance.
  if with_bias:
    np.testing.assert_allclose(np.asarray(grads[3]), np.asarray(want_grads[3]),
                               atol=0.02 * float(np.abs(want_grads[3]).max()))


def test_cudnn_segments_refuses_float32_by_name():
  mask = _mask(CASES["unpacked"])
  q = jnp.zeros((3, _LEN, _HEADS, _D), jnp.float32)
  with pytest.raises(ValueError, match="attention='cudnn_segments' needs dtype bfloat16"):
    attention.fused_attention("cudnn_segments", q, q, q, mask, None)
