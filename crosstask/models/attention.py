"""T5 attention through fused kernels, keeping the relative-position bias and packing masks.

T5 attention differs from the textbook form in ways every implementation here keeps:
logits are not scaled by 1/sqrt(d) (the scale is folded into the query initialisation,
so the kernels get `scale=1.0` / `sm_scale=1.0`), a learned per-head relative-position
bias is added to the logits, and padding, packed segments and (decoder self-attention)
causality decide who may attend to whom.

`TransformerConfig.attention` picks the implementation:

- "xla" (and "auto", which the runtime's platform profile replaces): the einsum path
  in `layers.MultiHeadAttention`. It materialises the [batch, heads, q, k] logits,
  probabilities and dropout mask of every layer.
- "dot_product": `jax.nn.dot_product_attention(..., implementation=None)`, XLA's
  version of the very call "cudnn" makes; it runs on any backend, so CPU tests
  exercise the bias and masks that the cuDNN kernel receives.
- "cudnn": the same call with `implementation="cudnn"` (GPU; bfloat16 or float16).
  jax folds the boolean mask into the bias before the kernel, so the kernel reads one
  [batch, heads, q, k] bias but never writes logits or probabilities to memory.
- "cudnn_segments": cuDNN's kernel in its ragged layout (Hopper or later): each packed
  segment's offset and length instead of a mask, so the bias stays [1, heads, q, k]
  (T5's relative bias depends on the key's distance from the query only, so it is
  the same matrix for a segment as for the row). A batch the layout cannot describe
  exactly (a row over MAX_SEGMENTS segments, a segment that is not contiguous) takes
  the "cudnn" call instead, chosen on the device (`lax.cond`). It trains LongLM-large
  15-18% slower than "cudnn" on an H100 and an H200, and the ragged kernel is the loss,
  not the conditional: without the conditional it was still 12.7% slower
  (benchmarks/README.md, GPU).
- "flash": the Pallas TPU flash-attention kernel
  (`jax.experimental.pallas.ops.tpu.flash_attention`), with the position bias as its
  `ab` input (the kernel wants it per example: [batch, heads, q, k]) and the masks as
  `segment_ids`. Lengths are padded here to a multiple of 128, the kernel's block.

Fused kernels never hold the attention probabilities, so they cannot drop them out:
the fused implementations skip dropout on attention probabilities (as MaxText does);
residual, MLP and embedding dropout still apply. Step-by-step decoding with the
key/value cache takes the "xla" path, except cross-attention where
`TransformerConfig.decode_cross_attention` is "pallas": `decode_cross_attention`, jax's
Pallas flash-decoding kernel (`jax.experimental.pallas.ops.gpu.decode_attention`),
reads the cached encoder keys and values once a step in one kernel, where XLA's two
products read each at a half to two thirds of the HBM rate (benchmarks/README.md).

Outputs at padding query positions (rows with nothing to attend to) are unspecified
and differ between implementations; they never reach a non-padding position or a
weighted loss.
"""

from collections.abc import Sequence

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

FUSED = ("dot_product", "cudnn", "cudnn_segments", "flash")
# Packed segments a row may hold for "cudnn_segments": its ragged layout takes a static
# count per row (the GPU benchmark packs 2-4 examples a row; SeqIO's packer a few more).
MAX_SEGMENTS = 8

# Added to attention logits of masked pairs (T5X uses the same finite value, which
# keeps fully masked rows finite).
NEG_INF = -1e10

# Segment ids of padding: queries and keys get different ones, so padding never
# matches padding and a padding row attends to nothing (its output is unspecified).
_QUERY_PAD, _KEY_PAD = -1, -2
_FLASH_BLOCK = 128  # the kernel's lane width: kv blocks must be multiples of it
# The decoding kernel's query rows a program (its matmul's smallest tile).
_DECODE_BLOCK_H = 16


@flax.struct.dataclass
class AttentionMask:
  """Who may attend to whom, as per-token segment ids that every implementation reads.

  A query attends to a key when their segment ids are equal (and, if `causal`, the key
  is not after the query). Padding has negative ids that match nothing; unpacked
  inputs have one segment, 0. The XLA path expands this into an additive
  [batch, 1, q, k] bias, `dot_product` / `cudnn` into a boolean mask, and `flash`
  hands the ids to the kernel as they are.
  """
  q_segments: jax.Array  # int32 [batch, q]
  k_segments: jax.Array  # int32 [batch, k]
  causal: bool = flax.struct.field(pytree_node=False, default=False)

  @classmethod
  def from_valid(cls, q_valid: jax.Array, k_valid: jax.Array,
                 q_segment_ids: jax.Array | None = None,
                 k_segment_ids: jax.Array | None = None, *, causal: bool = False
                 ) -> "AttentionMask":
    """From boolean [batch, len] non-padding flags and optional packing segment ids."""
    def ids(valid, segment_ids, pad):
      seg = 0 if segment_ids is None else jnp.asarray(segment_ids, jnp.int32)
      return jnp.where(valid, seg, pad).astype(jnp.int32)
    return cls(ids(q_valid, q_segment_ids, _QUERY_PAD), ids(k_valid, k_segment_ids, _KEY_PAD),
               causal)

  def allowed(self, *, with_causal: bool = True) -> jax.Array:
    """Boolean [batch, 1, q, k]: True where the query may attend to the key."""
    ok = self.q_segments[:, :, None] == self.k_segments[:, None, :]
    if self.causal and with_causal:
      q_len, k_len = ok.shape[1:]
      ok &= jnp.tril(jnp.ones((q_len, k_len), bool))[None]
    return ok[:, None]

  def bias(self) -> jax.Array:
    """Additive float32 [batch, 1, q, k]: 0 where allowed, NEG_INF elsewhere."""
    return jnp.where(self.allowed(), 0.0, NEG_INF).astype(jnp.float32)


def fused_attention(implementation: str, query: jax.Array, key: jax.Array, value: jax.Array,
                    mask: AttentionMask, position_bias: jax.Array | None) -> jax.Array:
  """Attention of [batch, len, heads, d] operands -> [batch, q, heads, d].

  `position_bias` is float32 [1, heads, q, k] (or None, for cross-attention);
  `implementation` one of FUSED.
  """
  if implementation == "dot_product":
    return _dot_product_attention(query, key, value, mask, position_bias, None)
  if implementation == "cudnn":
    return cudnn_attention(query, key, value, mask, position_bias)
  if implementation == "cudnn_segments":
    return cudnn_segments_attention(query, key, value, mask, position_bias)
  if implementation == "flash":
    out = sharded_flash_attention(jnp.swapaxes(query, 1, 2), jnp.swapaxes(key, 1, 2),
                                  jnp.swapaxes(value, 1, 2), mask, position_bias)
    return jnp.swapaxes(out, 1, 2)
  raise ValueError(f"fused attention implementation must be one of {FUSED}, "
                   f"got {implementation!r}")


def _dot_product_attention(query, key, value, mask: AttentionMask, bias,
                           implementation: str | None) -> jax.Array:
  return jax.nn.dot_product_attention(
      query, key, value, bias=bias, mask=mask.allowed(with_causal=False), scale=1.0,
      is_causal=mask.causal, implementation=implementation)


def cudnn_attention(query: jax.Array, key: jax.Array, value: jax.Array, mask: AttentionMask,
                    position_bias: jax.Array | None, *, implementation: str | None = "cudnn"
                    ) -> jax.Array:
  """The "cudnn" call: half-precision operands, the float32 position bias cast to their
  dtype (the kernel takes one dtype), the masks as `dot_product` passes them.

  `implementation=None` runs this very call, cast included, through XLA, so a CPU test
  can bound what the cast costs against float32 attention.
  """
  bias = _half_precision_bias("cudnn", query, position_bias)
  return _dot_product_attention(query, key, value, mask, bias, implementation)


def _half_precision_bias(name: str, query: jax.Array, position_bias: jax.Array | None
                         ) -> jax.Array | None:
  """The float32 position bias cast to the half-precision operands' dtype (cuDNN's kernel
  takes one dtype); a float32 query is refused, naming the `attention` setting."""
  if query.dtype not in (jnp.bfloat16, jnp.float16):
    raise ValueError(f"TransformerConfig.attention='{name}' needs dtype bfloat16 or "
                     f"float16, got query dtype {query.dtype}")
  return None if position_bias is None else position_bias.astype(query.dtype)


@flax.struct.dataclass
class SegmentLayout:
  """Packed segments as cuDNN's ragged layout reads them: per row and slot (segment id
  k >= 1 in slot k - 1; an unpacked row's one segment, id 0, in slot 0) the length and
  first position on the query and key sides, -1 in the slots neither side uses. A slot
  used on one side only has length 0 on the other, so the two sides' segments stay
  paired; its offset is the next segment's start, so offsets never decrease in a row.
  `exact`: whether the layout describes the mask (every segment contiguous, none past
  the last slot)."""
  q_seqlen: jax.Array  # int32 [batch, slots]
  kv_seqlen: jax.Array  # int32 [batch, slots]
  q_offsets: jax.Array  # int32 [batch, slots + 1]: the slots', then -1
  kv_offsets: jax.Array  # int32 [batch, slots + 1]
  exact: jax.Array  # bool []


def segment_layout(mask: AttentionMask, slots: int = MAX_SEGMENTS) -> SegmentLayout:
  """The ragged layout of `mask`'s segments in `slots` slots a row."""
  def side(segments):
    length = segments.shape[1]
    slot = jnp.where(segments >= 0, jnp.maximum(segments - 1, 0), -1)
    member = slot[:, :, None] == jnp.arange(slots)[None, None, :]  # [batch, len, slots]
    count = member.sum(1, dtype=jnp.int32)
    position = jnp.arange(length, dtype=jnp.int32)[None, :, None]
    first = jnp.min(jnp.where(member, position, length), axis=1)
    last = jnp.max(jnp.where(member, position, -1), axis=1)
    exact = jnp.all((count == 0) | (last - first + 1 == count)) & jnp.all(slot < slots)
    return count, jax.lax.cummin(first, axis=1, reverse=True), exact

  q_count, q_first, q_exact = side(mask.q_segments)
  k_count, k_first, k_exact = side(mask.k_segments)
  used = (q_count > 0) | (k_count > 0)
  unused_end = jnp.full((used.shape[0], 1), -1, jnp.int32)

  def offsets(first):
    return jnp.concatenate([jnp.where(used, first, -1), unused_end], axis=1)
  return SegmentLayout(jnp.where(used, q_count, -1), jnp.where(used, k_count, -1),
                       offsets(q_first), offsets(k_first), q_exact & k_exact)


def cudnn_segments_attention(query: jax.Array, key: jax.Array, value: jax.Array,
                             mask: AttentionMask, position_bias: jax.Array | None
                             ) -> jax.Array:
  """cuDNN's kernel over the packed segments' offsets and lengths (its ragged layout,
  no [batch, heads, q, k] bias), or the "cudnn" call where the layout is not exact."""
  # jax binds the ragged layout's arguments only in this module (jax.nn's call takes
  # padding lengths alone); imported here so that a jax without it fails on use only.
  from jax._src.cudnn import fused_attention_stablehlo as cudnn_lib
  bias = _half_precision_bias("cudnn_segments", query, position_bias)
  layout = segment_layout(mask)
  mask_type = cudnn_lib.MaskType.PADDING_CAUSAL if mask.causal else cudnn_lib.MaskType.PADDING

  # Positions in no segment are the kernel's to skip: their outputs and their
  # gradients' rows are whatever the buffers held, so both are set to 0 here (a `where`
  # selects; it passes no NaN on).
  q_in = (mask.q_segments >= 0)[:, :, None, None]
  k_in = (mask.k_segments >= 0)[:, :, None, None]

  def ragged(query, key, value, bias):
    out = cudnn_lib.dot_product_attention(
        jnp.where(q_in, query, 0), jnp.where(k_in, key, 0), jnp.where(k_in, value, 0),
        bias, None, layout.q_seqlen, layout.kv_seqlen, layout.q_offsets, layout.kv_offsets,
        scale=1.0, mask_type=mask_type, qkv_layout="BTNH")
    return jnp.where(q_in, out, 0)

  def masked(query, key, value, bias):  # the "cudnn" call; `bias` is cast already
    return _dot_product_attention(query, key, value, mask, bias, "cudnn")
  return jax.lax.cond(layout.exact, ragged, masked, query, key, value, bias)


def packed_mask(segment_lengths: Sequence[Sequence[int]], length: int, *,
                causal: bool = False) -> AttentionMask:
  """Self-attention mask of rows packed from segments of the given lengths, then padded.

  `[[5, 4], [9]]` at length 12: row 0 holds segments of 5 and 4 tokens and 3 padding,
  row 1 one segment of 9 and 3 padding. A check of an implementation against another
  (tests, benchmarks) gets padding, packing and, with `causal`, causality at once.
  """
  ids = np.zeros((len(segment_lengths), length), np.int32)
  for row, lengths in enumerate(segment_lengths):
    if sum(lengths) > length:
      raise ValueError(f"segment_lengths[{row}]={list(lengths)} exceed length {length}")
    ids[row, :sum(lengths)] = np.repeat(np.arange(1, len(lengths) + 1), lengths)
  return AttentionMask.from_valid(ids > 0, ids > 0, ids, ids, causal=causal)


def _pad_to_block(x: jax.Array, axis: int, fill=0) -> jax.Array:
  extra = -x.shape[axis] % _FLASH_BLOCK
  if not extra:
    return x
  widths = [(0, 0)] * x.ndim
  widths[axis] = (0, extra)
  return jnp.pad(x, widths, constant_values=fill)


def _block(length: int) -> int:
  """The largest of 512, 256, 128 dividing `length` (a multiple of 128)."""
  return next(b for b in (512, 256, _FLASH_BLOCK) if length % b == 0)


def flash_attention(query: jax.Array, key: jax.Array, value: jax.Array, mask: AttentionMask,
                    position_bias: jax.Array | None) -> jax.Array:
  """Pallas TPU flash attention of heads-first [batch, heads, len, d] operands.

  Lengths are padded to a multiple of 128 with padding segment ids (and the output
  cut back), so any sequence length runs. Off TPU, run it under
  `jax.experimental.pallas.tpu.force_tpu_interpret_mode()` (how the tests do).
  """
  from jax.experimental.pallas.ops.tpu import flash_attention as pallas_flash  # pylint: disable=g-import-not-at-top
  batch, heads, q_len, _ = query.shape
  k_len = key.shape[2]
  q, k, v = _pad_to_block(query, 2), _pad_to_block(key, 2), _pad_to_block(value, 2)
  segments = pallas_flash.SegmentIds(
      q=_pad_to_block(mask.q_segments, 1, _QUERY_PAD),
      kv=_pad_to_block(mask.k_segments, 1, _KEY_PAD))
  ab = None
  if position_bias is not None:
    ab = jnp.broadcast_to(position_bias.astype(jnp.float32), (batch, heads, q_len, k_len))
    ab = _pad_to_block(_pad_to_block(ab, 2), 3)
  bq, bk = _block(q.shape[2]), _block(k.shape[2])
  blocks = pallas_flash.BlockSizes(
      block_q=bq, block_k_major=bk, block_k=bk, block_b=1,
      block_q_major_dkv=bq, block_k_major_dkv=bk, block_k_dkv=bk, block_q_dkv=bq,
      block_k_major_dq=bk, block_k_dq=bk, block_q_dq=bq)
  out = pallas_flash.flash_attention(q, k, v, ab, segments, causal=mask.causal, sm_scale=1.0,
                                     block_sizes=blocks)
  return out[:, :, :q_len]


def sharded_flash_attention(query: jax.Array, key: jax.Array, value: jax.Array,
                            mask: AttentionMask, position_bias: jax.Array | None) -> jax.Array:
  """`flash_attention`, run per shard when traced under a mesh (`jax.set_mesh`).

  The compiler cannot partition a Pallas kernel: left to itself it would gather the
  whole batch onto every device. Under a mesh each device runs the kernel on its own
  examples and heads, placed by the logical-axis rules in effect ("batch", "heads");
  lengths and head dims stay whole, as the kernel needs them.
  """
  mesh = jax.sharding.get_abstract_mesh()
  if mesh.empty or mesh.size == 1:
    return flash_attention(query, key, value, mask, position_bias)
  batch_axes, head_axes = nn.logical_to_mesh_axes(("batch", "heads"))
  heads_first = PartitionSpec(batch_axes, head_axes, None, None)
  tokens = PartitionSpec(batch_axes, None)
  bias_spec = PartitionSpec(None, head_axes, None, None)

  def per_shard(q, k, v, q_segments, k_segments, bias):
    return flash_attention(q, k, v, AttentionMask(q_segments, k_segments, mask.causal), bias)

  in_specs = (heads_first, heads_first, heads_first, tokens, tokens,
              None if position_bias is None else bias_spec)
  return jax.shard_map(per_shard, mesh=mesh, in_specs=in_specs, out_specs=heads_first,
                       check_vma=False)(query, key, value, mask.q_segments, mask.k_segments,
                                        position_bias)


def decode_cross_attention(query: jax.Array, key: jax.Array, value: jax.Array,
                           key_lengths: jax.Array, *, interpret: bool) -> jax.Array:
  """One decoding step's cross-attention with jax's Pallas flash-decoding kernel.

  query: [batch * n, heads, 1, d] (n beam or sample copies per example, in
  `decoding.repeat_batch`'s order); key, value: the cached encoder keys and values,
  [batch, heads, length, d]; key_lengths: int [batch], each example's non-padding
  encoder tokens (right-padded inputs, as the feature converters make them). Returns
  [batch * n, 1, heads, d]. The n copies are the kernel's query heads of one key head
  (its grouped-query form), so each example's keys are read once. The kernel compiles
  for a GPU, or runs through Pallas's interpreter (`interpret`) anywhere.
  """
  from jax.experimental.pallas.ops.gpu import decode_attention  # pylint: disable=g-import-not-at-top
  batch, heads, length, d = key.shape
  copies = query.shape[0] // batch
  if copies * batch != query.shape[0] or query.shape[2] != 1:
    raise ValueError(f"decode_cross_attention: query {query.shape} is not one step of "
                     f"{batch} examples' copies")
  if copies > _DECODE_BLOCK_H:
    raise ValueError(f"decode_cross_attention: {copies} copies of an example exceed the "
                     f"kernel's {_DECODE_BLOCK_H} query rows")
  splits, block = _decode_blocks(length)
  # [B*n, h, 1, d] -> [B, h * n, d], each key head's n query rows together.
  q = jnp.swapaxes(query.reshape(batch, copies, heads, d), 1, 2)
  q = q.reshape(batch, heads * copies, d)
  out = decode_attention.gqa(
      q, jnp.swapaxes(key, 1, 2), jnp.swapaxes(value, 1, 2),
      kv_seq_len=key_lengths.astype(jnp.int32), sm_scale=1.0, block_h=_DECODE_BLOCK_H,
      block_k=block, k_splits=splits, interpret=interpret)
  out = jnp.swapaxes(out.reshape(batch, heads, copies, d), 1, 2)  # [B, n, h, d]
  return out.reshape(batch * copies, 1, heads, d)


def beam_self_attention(query: jax.Array, key: jax.Array, value: jax.Array,
                        source: jax.Array, bias: jax.Array | None, beams: int) -> jax.Array:
  """One beam-search step's self-attention over caches the beams were never copied into.

  query: [batch * beams, heads, 1, d]; key, value: the cached keys and values as each
  row wrote them, [batch * beams, heads, length, d] (an example's beams are adjacent
  rows, `decoding.repeat_batch`'s order); source: int32 [batch * beams, length], for
  each row and position the beam (0 .. beams - 1) of the same example whose cache row
  holds that position of this row's past; bias broadcasts to [batch * beams, heads, 1,
  length]. Returns [batch * beams, heads, 1, d], what the einsum path gives on caches
  reordered into each row's own past.

  Each example's queries meet every beam row's keys in one batched matmul over the
  cache as stored ([beams] query rows instead of 1: beams times the step's few attention
  FLOPs, none of its bytes), and `source` picks each position's score from the row that
  holds it (a sum of one score and zeros: the pick itself is exact). A matmul of K query
  rows may add up its products in another order than the one-row einsum, and the values'
  weighted sum is accumulated per holding row in float32 and rounded once, so results
  equal the einsum path's up to rounding (~1e-5 relative in float32 on the tests' models).
  A non-finite value in one beam row's cache (a float16 overflow) turns its siblings'
  outputs into NaN too (0 x inf), where copying would keep it to that beam.
  """
  rows, heads, _, d = query.shape
  length = key.shape[2]
  batch = rows // beams
  dt = query.dtype
  # Each cache row r = (example, beam j) meets its example's beams' queries as [beams]
  # query rows: [B*K, h, 1, d] -> [B, K(query), h, d] -> [B*K (holder j), h, K(query), d].
  # The caches keep their own shape: a reshape of them, updated in place a moment
  # before, had XLA:CPU copy each one into a new buffer every step.
  q = jnp.swapaxes(query.reshape(batch, beams, heads, d), 1, 2)
  q = jnp.broadcast_to(q[:, None], (batch, beams, heads, beams, d)).reshape(rows, heads, beams, d)
  scores = jnp.einsum("rhkd,rhld->rhkl", q, key).astype(jnp.float32)
  scores = scores.reshape(batch, beams, heads, beams, length)  # [B, j, h, k, L]
  held = source.reshape(batch, 1, beams, length) == jnp.arange(beams)[None, :, None, None]
  held = held[:, :, None]  # [B, j, 1, k, L]: row j holds position l of beam k
  logits = jnp.sum(jnp.where(held, scores, 0.0), axis=1)  # [B, h, k, L]
  if bias is not None:
    bias = jnp.broadcast_to(bias, (rows, heads, 1, length)).reshape(batch, beams, heads, length)
    logits = logits + jnp.swapaxes(bias, 1, 2)
  weights = jax.nn.softmax(logits, axis=-1)
  spread = jnp.where(held, weights[:, None], 0.0).astype(dt)  # [B, j, h, k, L]
  out = jnp.einsum("rhkl,rhld->rhkd", spread.reshape(rows, heads, beams, length), value,
                   preferred_element_type=jnp.float32)
  out = out.reshape(batch, beams, heads, beams, d).sum(axis=1)  # [B, h, k, d]
  return jnp.swapaxes(out.astype(dt), 1, 2).reshape(rows, heads, 1, d)


def pad_for_decode_kernel(cached: jax.Array) -> jax.Array:
  """Cached encoder keys or values [b, h, length, d], zero-padded to a multiple of 16
  positions (the lengths `decode_cross_attention` is given mask the padding off)."""
  extra = -cached.shape[2] % 16
  return jnp.pad(cached, ((0, 0), (0, 0), (0, extra), (0, 0))) if extra else cached


def _decode_blocks(length: int) -> tuple[int, int]:
  """(k_splits, block_k) for the decoding kernel over `length` keys: as many splits of
  the keys (programs that run side by side) as leave each at least 64 keys, in blocks
  of up to 128 that divide them; the kernel wants blocks of at least 16."""
  for splits in (8, 4, 2, 1):
    part = length // splits
    if length % splits == 0 and part % 16 == 0 and (part >= 64 or splits == 1):
      return splits, max(b for b in (128, 64, 32, 16) if part % b == 0)
  raise ValueError(f"decode_cross_attention: {length} encoder positions; the kernel "
                   "needs a multiple of 16")
