"""The T5-family encoder-decoder (T5 1.0 / 1.1, mT5, LongLM) in flax.linen.

Packed inputs: segment ids restrict attention to the same segment; relative
positions come from token offsets, which equal the in-segment positions because
packed segments are contiguous, so `*_positions` are accepted but not needed.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp

from crosstask.models import layers
from crosstask.models import remat
from crosstask.models.config import TransformerConfig

_EMBED = ("batch", "length", "embed")


def _bias_from_mask(mask: jax.Array) -> jax.Array:
  """Boolean [B, q, k] -> additive float32 bias [B, 1, q, k]."""
  return jnp.where(mask[:, None], 0.0, layers.NEG_INF).astype(jnp.float32)


def _pair_mask(q_valid: jax.Array, k_valid: jax.Array, q_segments=None, k_segments=None):
  mask = q_valid[:, :, None] & k_valid[:, None, :]
  if q_segments is not None:
    mask &= q_segments[:, :, None] == k_segments[:, None, :]
  return mask


def _layer_bias(mask_bias: jax.Array | None, position_bias: jax.Array) -> jax.Array:
  """A layer's attention bias: its padding / segment mask plus the shared position bias.

  Added in each layer, not once for the stack: the learned position bias
  ([1, h, q, k]) then gets its gradient summed over the batch inside each layer's
  backward pass. A stack-wide [B, h, q, k] sum made every layer hand back a
  [B, h, q, k] gradient, and XLA kept all of them until their sum at the end
  (benchmarks/README.md, "Knobs that matter for memory").
  """
  return position_bias if mask_bias is None else mask_bias + position_bias


def _maybe_remat(layer_cls: type[nn.Module], cfg: TransformerConfig, static_argnums: tuple[int, ...]):
  """The layer class, rematerialised per `cfg.remat_policy` (flags passed positionally)."""
  if cfg.remat_policy == "none":
    return layer_cls
  return remat.remat_layer(layer_cls, cfg.remat_policy, static_argnums)


class EncoderLayer(nn.Module):
  config: TransformerConfig

  @nn.compact
  def __call__(self, x, mask_bias, position_bias, enable_dropout=False):
    cfg = self.config
    drop = lambda y: nn.Dropout(cfg.dropout_rate)(y, deterministic=not enable_dropout)
    y = layers.RMSNorm(cfg, name="pre_attention_layer_norm")(x)
    y = layers.MultiHeadAttention(cfg, name="attention")(
        y, y, _layer_bias(mask_bias, position_bias), enable_dropout=enable_dropout)
    x = x + drop(y)
    y = layers.RMSNorm(cfg, name="pre_mlp_layer_norm")(x)
    y = layers.MlpBlock(cfg, name="mlp")(y, enable_dropout=enable_dropout)
    return nn.with_logical_constraint(x + drop(y), _EMBED)


class DecoderLayer(nn.Module):
  config: TransformerConfig

  @nn.compact
  def __call__(self, x, encoded, self_mask_bias, position_bias, cross_bias, enable_dropout=False,
               decode=False, cache_length=None):
    cfg = self.config
    drop = lambda y: nn.Dropout(cfg.dropout_rate)(y, deterministic=not enable_dropout)
    y = layers.RMSNorm(cfg, name="pre_self_attention_layer_norm")(x)
    y = layers.MultiHeadAttention(cfg, name="self_attention")(
        y, y, _layer_bias(self_mask_bias, position_bias), decode=decode,
        enable_dropout=enable_dropout, cache_length=cache_length)
    x = x + drop(y)
    y = layers.RMSNorm(cfg, name="pre_cross_attention_layer_norm")(x)
    y = layers.MultiHeadAttention(cfg, is_cross_attention=True, name="encoder_decoder_attention")(
        y, encoded, cross_bias, decode=decode, enable_dropout=enable_dropout)
    x = x + drop(y)
    y = layers.RMSNorm(cfg, name="pre_mlp_layer_norm")(x)
    y = layers.MlpBlock(cfg, name="mlp")(y, enable_dropout=enable_dropout)
    return nn.with_logical_constraint(x + drop(y), _EMBED)


class Encoder(nn.Module):
  config: TransformerConfig
  shared_embedding: nn.Module

  @nn.compact
  def __call__(self, tokens, segment_ids=None, *, enable_dropout=False):
    cfg = self.config
    valid = tokens > 0
    mask_bias = _bias_from_mask(_pair_mask(valid, valid, segment_ids, segment_ids))
    length = tokens.shape[1]
    position_bias = layers.RelativePositionBias(cfg, bidirectional=True, name="relpos_bias")(
        length, length)
    x = self.shared_embedding(tokens)
    x = nn.Dropout(cfg.dropout_rate)(x, deterministic=not enable_dropout)
    x = nn.with_logical_constraint(x, _EMBED)
    layer_cls = _maybe_remat(EncoderLayer, cfg, static_argnums=(4,))  # self=0: enable_dropout
    for i in range(cfg.num_encoder_layers):
      x = layer_cls(cfg, name=f"layers_{i}")(x, mask_bias, position_bias, enable_dropout)
    x = layers.RMSNorm(cfg, name="encoder_norm")(x)
    x = nn.Dropout(cfg.dropout_rate)(x, deterministic=not enable_dropout)
    return nn.with_logical_constraint(x, _EMBED)


class Decoder(nn.Module):
  config: TransformerConfig
  shared_embedding: nn.Module

  @nn.compact
  def __call__(self, encoded, encoder_tokens, tokens, target_tokens=None,
               encoder_segment_ids=None, segment_ids=None, *, enable_dropout=False,
               decode=False, max_decode_length=None):
    cfg = self.config
    length = tokens.shape[1]
    relpos = layers.RelativePositionBias(cfg, bidirectional=False, name="relpos_bias")
    enc_valid = encoder_tokens > 0
    stepping = decode and self.has_variable("cache", "position")
    if stepping:
      # One new token: its row of the causal bias; the attention cache masks the future.
      if max_decode_length is None:
        raise ValueError("max_decode_length is required when decoding step by step")
      position = self.variable("cache", "position", lambda: jnp.array(0, jnp.int32))
      self_mask_bias, position_bias = None, relpos(1, max_decode_length, position.value)
      position.value = position.value + 1
      cross_bias = _bias_from_mask(enc_valid[:, None, :])  # [B, 1, 1, S]
    else:
      if decode:  # cache initialisation call
        self.variable("cache", "position", lambda: jnp.array(0, jnp.int32))
      q_valid = target_tokens > 0 if target_tokens is not None else jnp.ones_like(tokens, bool)
      causal = jnp.tril(jnp.ones((length, length), bool))[None]
      self_mask = _pair_mask(q_valid, q_valid, segment_ids, segment_ids) & causal
      self_mask_bias, position_bias = _bias_from_mask(self_mask), relpos(length, length)
      cross_bias = _bias_from_mask(
          _pair_mask(q_valid, enc_valid, segment_ids, encoder_segment_ids))
    if cfg.decoder_start_id:
      # Inputs hold T5X's start/pad id 0 (feature converter, decoding loop); models trained
      # with another start token (LongLM: 1) see that one. Masks come from the targets.
      tokens = jnp.where(tokens == 0, cfg.decoder_start_id, tokens)
    x = self.shared_embedding(tokens)
    x = nn.Dropout(cfg.dropout_rate)(x, deterministic=not enable_dropout)
    x = nn.with_logical_constraint(x, _EMBED)
    # Remat only helps the backward pass; step-by-step decoding keeps the plain layer.
    layer_cls = DecoderLayer if decode else _maybe_remat(DecoderLayer, cfg, static_argnums=(6, 7, 8))
    for i in range(cfg.num_decoder_layers):
      x = layer_cls(cfg, name=f"layers_{i}")(x, encoded, self_mask_bias, position_bias, cross_bias,
                                             enable_dropout, decode, max_decode_length)
    x = layers.RMSNorm(cfg, name="decoder_norm")(x)
    x = nn.Dropout(cfg.dropout_rate)(x, deterministic=not enable_dropout)
    if cfg.logits_via_embedding:
      logits = self.shared_embedding.attend(x * (cfg.d_model ** -0.5))
    else:
      kernel = self.param(
          "logits_dense",
          nn.with_logical_partitioning(nn.initializers.normal(cfg.d_model ** -0.5),
                                       ("embed", "vocab")),
          (cfg.d_model, cfg.vocab_size), cfg.params_dtype)
      logits = layers.dense(x, kernel.astype(cfg.compute_dtype))
    logits = nn.with_logical_constraint(logits.astype(jnp.float32), ("batch", "length", "vocab"))
    return logits


class Transformer(nn.Module):
  """Encoder-decoder; `encode` / `decode` are usable through `apply(method=...)`."""
  config: TransformerConfig

  def setup(self):
    self.token_embedder = layers.Embed(self.config)
    self.encoder = Encoder(self.config, self.token_embedder)
    self.decoder = Decoder(self.config, self.token_embedder)

  def encode(self, encoder_input_tokens: jax.Array, encoder_segment_ids: jax.Array | None = None,
             encoder_positions: jax.Array | None = None, *, enable_dropout: bool = False
             ) -> jax.Array:
    """[B, S] tokens -> [B, S, d_model] encoder outputs (compute dtype)."""
    del encoder_positions  # offsets inside a packed segment equal the positions
    return self.encoder(encoder_input_tokens, encoder_segment_ids, enable_dropout=enable_dropout)

  def decode(self, encoded: jax.Array, encoder_input_tokens: jax.Array,
             decoder_input_tokens: jax.Array, decoder_target_tokens: jax.Array | None = None,
             encoder_segment_ids: jax.Array | None = None,
             decoder_segment_ids: jax.Array | None = None,
             decoder_positions: jax.Array | None = None, *, enable_dropout: bool = False,
             decode: bool = False, max_decode_length: int | None = None) -> jax.Array:
    """Decoder logits float32 [B, T, V]; with decode=True uses the 'cache' collection.

    The first decode=True call (cache absent) creates the cache: self-attention caches
    of length `max_decode_length` (default: the input length), zero-filled, and the
    projected encoder keys/values; it can take a single dummy token. Later calls take
    one token each and need the same `max_decode_length`.
    """
    del decoder_positions
    return self.decoder(encoded, encoder_input_tokens, decoder_input_tokens,
                        decoder_target_tokens, encoder_segment_ids, decoder_segment_ids,
                        enable_dropout=enable_dropout, decode=decode,
                        max_decode_length=max_decode_length)

  def __call__(self, encoder_input_tokens: jax.Array, decoder_input_tokens: jax.Array,
               decoder_target_tokens: jax.Array | None = None,
               encoder_segment_ids: jax.Array | None = None,
               decoder_segment_ids: jax.Array | None = None,
               encoder_positions: jax.Array | None = None,
               decoder_positions: jax.Array | None = None, *, enable_dropout: bool = False,
               decode: bool = False) -> jax.Array:
    for name, arr in (("encoder_input_tokens", encoder_input_tokens),
                      ("decoder_input_tokens", decoder_input_tokens)):
      if arr.ndim != 2:
        raise ValueError(f"{name} must be [batch, length], got shape {arr.shape}")
    if encoder_input_tokens.shape[0] != decoder_input_tokens.shape[0]:
      raise ValueError(f"encoder_input_tokens batch {encoder_input_tokens.shape[0]} != "
                       f"decoder_input_tokens batch {decoder_input_tokens.shape[0]}")
    encoded = self.encode(encoder_input_tokens, encoder_segment_ids, encoder_positions,
                          enable_dropout=enable_dropout)
    return self.decode(encoded, encoder_input_tokens, decoder_input_tokens, decoder_target_tokens,
                       encoder_segment_ids, decoder_segment_ids, decoder_positions,
                       enable_dropout=enable_dropout, decode=decode)
