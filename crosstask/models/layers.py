"""Building blocks of the T5 stacks: RMS norm, embedding, relative bias, attention, MLP.

Every parameter is created through `nn.with_logical_partitioning` so a trainer can
shard with `nn.logical_axis_rules`; activations carry `nn.with_logical_constraint`.
"""

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from crosstask.models import attention
from crosstask.models import remat
from crosstask.models.config import TransformerConfig

NEG_INF = attention.NEG_INF


def _param(module: nn.Module, name: str, init: Callable, shape: tuple[int, ...],
           names: tuple[str, ...], dtype) -> jax.Array:
  return module.param(name, nn.with_logical_partitioning(init, names), shape, dtype)


def dense(x: jax.Array, w: jax.Array) -> jax.Array:
  """`x[..., d]` times `w[d, ...]`, computed as one `[tokens, d] x [d, out]` matmul.

  Why flatten: the weight gradient of a product with batch and length as two
  contracted axes lets the compiler write one operand transposed (inside the
  elementwise backward of the layer before it) and compute that elementwise chain
  twice. With the tokens as one axis both operands are read as they are.
  """
  out = x.reshape(-1, x.shape[-1]) @ w.reshape(w.shape[0], -1)
  return out.reshape(x.shape[:-1] + w.shape[1:])


@jax.custom_vjp
def _product_in_float32(a: jax.Array, b: jax.Array) -> jax.Array:
  return jnp.matmul(a, b, preferred_element_type=jnp.float32)


def _product_in_float32_forward(a, b):
  return _product_in_float32(a, b), (a, b)


def _product_in_float32_backward(residuals, g):
  # The operands' type, as the product of a bfloat16 output takes its gradient: jax's
  # own rule would multiply float32 copies of both (half the rate of bfloat16 on a GPU).
  a, b = residuals
  g = g.astype(a.dtype)
  return g @ b.T, a.T @ g


_product_in_float32.defvjp(_product_in_float32_forward, _product_in_float32_backward)


def logits_dense(x: jax.Array, w: jax.Array) -> jax.Array:
  """`dense`, its output written in float32 from the operands' products.

  Why: T5X computes the logits in float32 (on a TPU that product too multiplies
  bfloat16-rounded operands); rounded to bfloat16 instead, logits near 8 moved by up
  to 0.19 and the output kernel's gradient by 3%. Its gradient is `dense`'s.
  """
  out = _product_in_float32(x.reshape(-1, x.shape[-1]), w.reshape(w.shape[0], -1))
  return out.reshape(x.shape[:-1] + w.shape[1:])


def dropout(cfg: TransformerConfig, *, per_element: bool = False) -> nn.Dropout:
  """The network's dropout: one mask per feature, shared over a sequence's positions where
  the config shares them (`dropout_shared_along_length`, as T5X), else per element."""
  return nn.Dropout(cfg.dropout_rate,
                    broadcast_dims=() if per_element else cfg.dropout_broadcast_dims)


def activation(name: str) -> Callable[[jax.Array], jax.Array]:
  """Name -> function; "gelu" is the tanh form (HF gelu_new, T5X)."""
  return {
      "relu": nn.relu,
      "gelu": lambda x: nn.gelu(x, approximate=True),
      "gelu_exact": lambda x: nn.gelu(x, approximate=False),
      "silu": nn.silu,
      "linear": lambda x: x,
  }[name]


class RMSNorm(nn.Module):
  """T5 layer norm: scale only, no mean subtraction, statistics in float32."""
  config: TransformerConfig

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    cfg = self.config
    x = x.astype(jnp.float32)
    var = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    y = x * jax.lax.rsqrt(var + cfg.layer_norm_epsilon)
    scale = _param(self, "scale", nn.initializers.ones, (x.shape[-1],), ("embed",),
                   cfg.params_dtype)
    out = (y * scale.astype(jnp.float32)).astype(cfg.compute_dtype)
    return checkpoint_name(out, remat.NORM_OUTPUT)


class Embed(nn.Module):
  """Token embedding shared by encoder, decoder and (when tied) the output layer."""
  config: TransformerConfig

  def setup(self):
    cfg = self.config
    self.embedding = _param(self, "embedding", nn.initializers.normal(1.0),
                            (cfg.vocab_size, cfg.d_model), ("vocab", "embed"),
                            cfg.params_dtype)

  def __call__(self, ids: jax.Array) -> jax.Array:
    """The ids' rows in the residual stream's dtype (the embedded tokens start it)."""
    return jnp.take(self.embedding, ids, axis=0).astype(self.config.residual_stream_dtype)

  def attend(self, x: jax.Array) -> jax.Array:
    """Float32 logits against the embedding matrix (tied output layer), as `Decoder`'s."""
    emb = self.embedding.astype(self.config.compute_dtype)
    return logits_dense(x, emb.T)


def relative_position_bucket(relative_position: jax.Array, *, bidirectional: bool,
                             num_buckets: int, max_distance: int) -> jax.Array:
  """T5's log-spaced buckets; same float32 arithmetic as HF so bucket edges agree."""
  ret = jnp.zeros_like(relative_position)
  if bidirectional:
    num_buckets //= 2
    ret += (relative_position > 0).astype(jnp.int32) * num_buckets
    n = jnp.abs(relative_position)
  else:
    n = -jnp.minimum(relative_position, 0)
  max_exact = num_buckets // 2
  is_small = n < max_exact
  n_safe = jnp.maximum(n, max_exact).astype(jnp.float32)  # log(0) never evaluated
  large = (jnp.log(n_safe / max_exact) / np.log(max_distance / max_exact)
           * (num_buckets - max_exact))
  large = max_exact + large.astype(jnp.int32)
  large = jnp.minimum(large, num_buckets - 1)
  return ret + jnp.where(is_small, n, large)


class RelativePositionBias(nn.Module):
  """Per-stack bias table [heads, buckets]; computed once and shared by all layers."""
  config: TransformerConfig
  bidirectional: bool

  @nn.compact
  def __call__(self, qlen: int, klen: int, query_offset: jax.Array | int = 0) -> jax.Array:
    cfg = self.config
    table = _param(self, "rel_embedding", nn.initializers.normal(1.0),
                   (cfg.num_heads, cfg.relative_attention_num_buckets),
                   ("heads", "relpos_buckets"), cfg.params_dtype)
    context = jnp.arange(qlen, dtype=jnp.int32)[:, None] + query_offset
    memory = jnp.arange(klen, dtype=jnp.int32)[None, :]
    buckets = relative_position_bucket(
        memory - context, bidirectional=self.bidirectional,
        num_buckets=cfg.relative_attention_num_buckets,
        max_distance=cfg.relative_attention_max_distance)
    values = jnp.take(table.astype(jnp.float32), buckets, axis=1)  # [H, q, k]
    return values[None]


# The names of self-attention's stacked query, key and value kernels and of a gated
# MLP's stacked input kernels in decoding's parameters (model.params_for_decoding).
FUSED_QKV = "qkv"
FUSED_MLP = "wi_stacked"
# A self-attention layer's decoding-cache table under beam search with
# `beam_self_cache="indirect"` (model.EncoderDecoderModel adds it): int32 [rows, length],
# which beam row of the example holds each position of a row's past.
BEAM_SOURCE = "beam_source"
# A self-attention layer's decoding caches of past keys and values, [rows, heads, length, d].
CACHED_KEY, CACHED_VALUE = "cached_key", "cached_value"


def stack_kernels(kernels) -> jax.Array:
  """Projection kernels read by one matmul, stacked on axis 2: inside the heads axis of
  [d_model, heads, d_kv] kernels ([d_model, heads, n, d_kv]) and after the mlp axis of
  [d_model, d_ff] ones ([d_model, d_ff, n]), so a model-parallel split of heads or mlp
  stays the leading split of the matmul's output columns."""
  return jnp.stack(kernels, axis=2)


class MultiHeadAttention(nn.Module):
  """T5 attention: no 1/sqrt(d) scaling (folded into the query init), optional kv cache.

  `config.attention` picks the implementation (models/attention.py): "xla" (and
  "auto") is the einsum path below, the others fused kernels. With decode=True,
  self-attention caches keys/values of past tokens (length `cache_length`, default the
  input length) and cross-attention caches the projected encoder keys/values, so each
  step projects only the new token; decoding always takes the einsum path.
  """
  config: TransformerConfig
  is_cross_attention: bool = False

  @nn.compact
  def __call__(self, inputs_q: jax.Array, inputs_kv: jax.Array,
               mask: attention.AttentionMask | None, position_bias: jax.Array | None = None,
               *, decode: bool = False, decode_position: jax.Array | None = None,
               enable_dropout: bool = False, cache_length: int | None = None,
               decode_groups: int = 1) -> jax.Array:
    """`position_bias` is float32 [1, heads, q, k]; `decode_position` (the step being
    decoded) is needed for decode=True self-attention steps after the cache exists;
    `decode_groups` is the rows per example of a decoding step (beams or samples)."""
    cfg = self.config
    dt, pdt = cfg.compute_dtype, cfg.params_dtype
    h, d, dm = cfg.num_heads, cfg.d_kv, cfg.d_model
    normal = nn.initializers.normal
    # The decoding loop's parameters may hold self-attention's kernels stacked as one
    # [d_model, heads, 3, d_kv] `qkv` (model.params_for_decoding, `fused_qkv`).
    stacked = decode and self.has_variable("params", FUSED_QKV)
    if stacked:
      wqkv = self.get_variable("params", FUSED_QKV)
    else:
      wq = _param(self, "query", normal((dm * d) ** -0.5), (dm, h, d), ("embed", "heads", "kv"),
                  pdt)
      wk = _param(self, "key", normal(dm ** -0.5), (dm, h, d), ("embed", "heads", "kv"), pdt)
      wv = _param(self, "value", normal(dm ** -0.5), (dm, h, d), ("embed", "heads", "kv"), pdt)
    wo = _param(self, "out", normal((h * d) ** -0.5), (h, d, dm), ("heads", "kv", "embed"), pdt)
    qkv_names = ("batch", "length", "heads", "kv")

    def project(x, w):
      return nn.with_logical_constraint(dense(x, w.astype(dt)), qkv_names)

    def project_stacked(x, w):  # [d_model, h, n, d] kernels -> n [b, len, h, d] projections
      out = dense(x, w.astype(dt))  # stacked by stack_kernels
      return [nn.with_logical_constraint(out[:, :, :, i], qkv_names) for i in range(w.shape[2])]

    def query_key_value(x_q, x_kv):
      """[b, len, h, d] projections; with `fused_qkv` the ones of one input in one matmul."""
      if stacked:
        return project_stacked(x_q, wqkv)
      if cfg.fused_qkv and not self.is_cross_attention:
        return project_stacked(x_q, stack_kernels([wq, wk, wv]))
      if cfg.fused_qkv:
        return [project(x_q, wq), *project_stacked(x_kv, stack_kernels([wk, wv]))]
      return [project(x_q, wq), project(x_kv, wk), project(x_kv, wv)]

    def output(out):  # [b, q, h, d] -> [b, q, d_model]
      # One contracted axis of h*d, laid out as the stored [h, d, m] weight already is,
      # so the weight is read as stored instead of being transposed on every call.
      out = out.reshape(out.shape[:2] + (h * d,))
      out = dense(out, wo.reshape(h * d, dm).astype(dt))
      return nn.with_logical_constraint(out, ("batch", "length", "embed"))

    if cfg.attention in attention.FUSED and not decode:
      if mask is None:
        raise ValueError("fused attention needs an AttentionMask (got None)")
      out = attention.fused_attention(cfg.attention, *query_key_value(inputs_q, inputs_kv),
                                      mask, position_bias)
      return output(out)

    def project_heads_first(x, w):
      return jnp.swapaxes(project(x, w), 1, 2)

    # Heads-first operands ([b, h, len, d]) make both products plain batched matmuls,
    # with no strided batch dimension for the compiler to lay out. The decoding caches
    # are heads-first too, so a decoding step transposes only its new token, never the
    # cached encoder keys or the past keys. The cached encoder keys are stored
    # keys-last ([b, h, d, len]): each step's product with a few query rows (beam
    # copies) is then a plain [q, d] x [d, len] matmul over the cache as stored.
    # (`cross_keys_last=False` keeps them [b, h, len, d] instead: a layout to measure.)
    cached_cross = decode and self.is_cross_attention
    if cached_cross:  # the query alone: keys and values are projected once a decode
      query = project_heads_first(inputs_q, wq)
    else:
      query, key, value = (jnp.swapaxes(x, 1, 2) for x in query_key_value(inputs_q, inputs_kv))
    kernel = cached_cross and cfg.decode_cross_attention != "einsum"
    keys_last = cached_cross and cfg.cross_keys_last and not kernel
    if cached_cross:
      if self.has_variable("cache", "cross_key"):
        key = self.get_variable("cache", "cross_key")
        value = self.get_variable("cache", "cross_value")
        if kernel:  # a step: one kernel over the cache (right-padded encoder inputs)
          lengths = jnp.sum(mask.k_segments >= 0, axis=1)
          return output(attention.decode_cross_attention(
              query, key, value, lengths,
              interpret=cfg.decode_cross_attention == "pallas_interpret"))
      else:
        key = project_heads_first(inputs_kv, wk)
        key = jnp.swapaxes(key, 2, 3) if keys_last else key
        value = project_heads_first(inputs_kv, wv)
        # The kernel's blocks want a multiple of 16 positions: padded once, here.
        stored = attention.pad_for_decode_kernel if kernel else lambda x: x
        self.put_variable("cache", "cross_key", stored(key))
        self.put_variable("cache", "cross_value", stored(value))

    # The layer's bias: its padding / segment mask plus the shared position bias, added
    # here rather than once per stack, so the position bias's gradient is summed over
    # the batch inside each layer's backward pass instead of every layer handing back a
    # [batch, heads, q, k] gradient to be summed at the end of the stack.
    bias = position_bias
    if mask is not None:
      bias = mask.bias() if bias is None else mask.bias() + bias
    if decode and not self.is_cross_attention:
      initialized = self.has_variable("cache", CACHED_KEY)
      b, length = key.shape[0], cache_length or key.shape[2]
      cached_key = self.variable("cache", CACHED_KEY, jnp.zeros, (b, h, length, d), key.dtype)
      cached_value = self.variable("cache", CACHED_VALUE, jnp.zeros, (b, h, length, d),
                                   value.dtype)
      if initialized:
        if query.shape[2] != 1:
          raise ValueError(f"decode=True expects one token per step, got length {query.shape[2]}")
        if decode_position is None:
          raise ValueError("decode=True steps need decode_position (the index being decoded)")
        idx = decode_position
        key = jax.lax.dynamic_update_slice(cached_key.value, key.astype(cached_key.value.dtype),
                                           (0, 0, idx, 0))
        value = jax.lax.dynamic_update_slice(cached_value.value,
                                             value.astype(cached_value.value.dtype), (0, 0, idx, 0))
        cached_key.value, cached_value.value = key, value
        visible = jnp.arange(key.shape[2]) <= idx
        step_bias = jnp.where(visible, 0.0, NEG_INF).astype(jnp.float32)[None, None, None, :]
        bias = step_bias if bias is None else bias + step_bias
        if self.has_variable("cache", BEAM_SOURCE):
          if decode_groups < 2:
            raise ValueError(f"a {BEAM_SOURCE!r} table with {decode_groups} row(s) an example: "
                             "beam search left the caches in place for beams this step lacks")
          # Beam search left the caches where each row wrote them: this step's token
          # sits in the row's own slot, its past where the table says.
          source = self.get_variable("cache", BEAM_SOURCE)
          own = (jnp.arange(b) % decode_groups)[:, None]
          source = jnp.where(jnp.arange(length)[None, :] == idx, own, source)
          self.put_variable("cache", BEAM_SOURCE, source)
          return output(jnp.swapaxes(attention.beam_self_attention(
              query, key, value, source, bias, decode_groups), 1, 2))

    # Beam / sample copies of one example share its encoder keys: with cross keys cached
    # at batch B and queries at B * n (rows b*n .. b*n+n-1, decoding.repeat_batch's
    # order), the n copies attend as n query positions of example b, so the keys are
    # read once per example and never repeated or reordered with the beams.
    batch, groups = key.shape[0], query.shape[0] // key.shape[0]
    if groups > 1:  # [B*n, h, q, d] -> [B, h, n*q, d]
      query = jnp.swapaxes(query.reshape((batch, groups) + query.shape[1:]), 1, 2)
      query = query.reshape(batch, h, -1, d)
    logits = jnp.einsum("bhqd,bhdk->bhqk" if keys_last else "bhqd,bhkd->bhqk",
                        query, key).astype(jnp.float32)
    if bias is not None:
      logits = logits + bias
    weights = jax.nn.softmax(logits, axis=-1)
    # [b, h, q, k]: one mask for every query.
    weights = dropout(cfg)(weights, deterministic=not enable_dropout)
    out = jnp.einsum("bhqk,bhkd->bhqd", weights.astype(dt), value)
    if groups > 1:  # [B, h, n*q, d] -> [B*n, h, q, d]
      out = jnp.swapaxes(out.reshape(batch, h, groups, -1, d), 1, 2)
      out = out.reshape((batch * groups, h) + out.shape[3:])
    return output(jnp.swapaxes(out, 1, 2))


class MlpBlock(nn.Module):
  """Feed-forward with one branch per activation, multiplied (gated when 2 branches)."""
  config: TransformerConfig

  @nn.compact
  def __call__(self, x: jax.Array, *, enable_dropout: bool = False) -> jax.Array:
    cfg = self.config
    dt, pdt = cfg.compute_dtype, cfg.params_dtype
    n = len(cfg.activations)
    # Stacked kernels (stack_kernels) are [d_model, d_ff, n].
    if self.has_variable("params", FUSED_MLP):  # decoding's, stacked once a decode
      stacked = self.get_variable("params", FUSED_MLP)
    else:
      kernels = [_param(self, "wi" if n == 1 else f"wi_{i}",
                        nn.initializers.normal(cfg.d_model ** -0.5), (cfg.d_model, cfg.d_ff),
                        ("embed", "mlp"), pdt) for i in range(n)]
      stacked = stack_kernels(kernels) if cfg.fused_mlp and n > 1 else None
    if stacked is not None:  # the branches' inputs as one matmul: [..., d_ff, n]
      out = dense(x, stacked.astype(dt))
      inputs = [out[..., i] for i in range(n)]
    else:
      inputs = [dense(x, w.astype(dt)) for w in kernels]
    hidden = None
    for act, branch_input in zip(cfg.activations, inputs):
      branch = activation(act)(branch_input)
      hidden = branch if hidden is None else hidden * branch
    hidden = nn.with_logical_constraint(hidden, ("batch", "length", "mlp"))
    hidden = dropout(cfg)(hidden, deterministic=not enable_dropout)
    wo = _param(self, "wo", nn.initializers.normal(cfg.d_ff ** -0.5),
                (cfg.d_ff, cfg.d_model), ("mlp", "embed"), pdt)
    out = dense(hidden, wo.astype(dt))
    return nn.with_logical_constraint(out, ("batch", "length", "embed"))
