"""The T5-family encoder-decoder (T5 1.0 / 1.1, mT5, LongLM) in flax.linen.

Packed inputs: segment ids restrict attention to the same segment; relative
positions come from token offsets, which equal the in-segment positions because
packed segments are contiguous, so `*_positions` are accepted but not needed.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp

from crosstask.models import attention
from crosstask.models import layers
from crosstask.models import remat
from crosstask.models.config import TransformerConfig

_EMBED = ("batch", "length", "embed")


class _Layer(nn.Module):
  """What encoder and decoder layers share: flags as attributes, so remat and scan
  see only arrays as call arguments, and each call returns (output, None) as
  `nn.scan` wants."""
  config: TransformerConfig
  enable_dropout: bool = False
  decode: bool = False
  cache_length: int | None = None


def _dropout(layer: _Layer, y: jax.Array) -> jax.Array:
  return layers.dropout(layer.config)(y, deterministic=not layer.enable_dropout)


def _attention_sublayer(layer: _Layer, x, keys_values, mask, position_bias, *, norm: str,
                        name: str, cross: bool = False, decode_position=None,
                        decode_groups: int = 1):
  """x + dropout(attention(norm(x), keys_values or norm(x))): one pre-norm residual block."""
  y = layers.RMSNorm(layer.config, name=norm)(x)
  y = layers.MultiHeadAttention(layer.config, is_cross_attention=cross, name=name)(
      y, y if keys_values is None else keys_values, mask, position_bias, decode=layer.decode,
      decode_position=decode_position, enable_dropout=layer.enable_dropout,
      cache_length=None if cross else layer.cache_length, decode_groups=decode_groups)
  return x + _dropout(layer, y)


def _mlp_sublayer(layer: _Layer, x):
  y = layers.RMSNorm(layer.config, name="pre_mlp_layer_norm")(x)
  y = layers.MlpBlock(layer.config, name="mlp")(y, enable_dropout=layer.enable_dropout)
  return nn.with_logical_constraint(x + _dropout(layer, y), _EMBED)


class EncoderLayer(_Layer):

  @nn.compact
  def __call__(self, x, position_bias, mask):
    x = _attention_sublayer(self, x, None, mask, position_bias,
                            norm="pre_attention_layer_norm", name="attention")
    return _mlp_sublayer(self, x), None


class DecoderLayer(_Layer):

  @nn.compact
  def __call__(self, x, position_bias, self_mask, encoded, cross_mask, decode_position=None):
    # A decoding step's rows are an example's beam or sample copies; `encoded` has
    # one row an example.
    x = _attention_sublayer(self, x, None, self_mask, position_bias,
                            norm="pre_self_attention_layer_norm", name="self_attention",
                            decode_position=decode_position,
                            decode_groups=x.shape[0] // encoded.shape[0] if self.decode else 1)
    x = _attention_sublayer(self, x, encoded, cross_mask, None,
                            norm="pre_cross_attention_layer_norm",
                            name="encoder_decoder_attention", cross=True)
    return _mlp_sublayer(self, x), None


def _layer_stack(layer_cls: type[_Layer], cfg: TransformerConfig, num_layers: int,
                 x: jax.Array, *args, enable_dropout: bool, decode: bool = False,
                 cache_length: int | None = None) -> jax.Array:
  """`num_layers` layers of `layer_cls` over x, each given `args` (shared by all layers).

  Unscanned, the layers' params are `layers_0 .. layers_{N-1}`; with
  `cfg.scan_layers`, one `layers` subtree whose leaves carry a leading layer axis
  (logical axis "layers"), and the decoding cache a layer axis after the batch
  (axis 1), so the batch stays the leading axis that decoding repeats and reorders.
  Remat applies to training and scoring passes, never to decoding steps.
  """
  if not decode:
    # A loop keeps the backward pass's recomputation apart from the forward pass; a
    # stack unrolled whole ("full") is one straight-line program, where XLA would merge
    # the two and keep every activation remat dropped, so it prevents CSE as an
    # unscanned stack does.
    in_a_loop = cfg.scan_layers and cfg.scan_unroll != "full"
    layer_cls = remat.remat_layer(layer_cls, cfg.remat_policy, prevent_cse=not in_a_loop)
  flags = dict(enable_dropout=enable_dropout, decode=decode, cache_length=cache_length)
  if cfg.scan_layers:
    scanned = nn.scan(layer_cls, variable_axes={"params": 0, "cache": 1},
                      split_rngs={"params": True, "dropout": True},
                      in_axes=(nn.broadcast,) * len(args), length=num_layers,
                      unroll=cfg.layers_per_scan_iteration(num_layers),
                      metadata_params={nn.PARTITION_NAME: "layers"})
    x, _ = scanned(cfg, **flags, name="layers")(x, *args)
    return x
  for i in range(num_layers):
    x, _ = layer_cls(cfg, **flags, name=f"layers_{i}")(x, *args)
  return x


class Encoder(nn.Module):
  config: TransformerConfig
  shared_embedding: nn.Module

  @nn.compact
  def __call__(self, tokens, segment_ids=None, *, enable_dropout=False):
    cfg = self.config
    valid = tokens > 0
    mask = attention.AttentionMask.from_valid(valid, valid, segment_ids, segment_ids)
    length = tokens.shape[1]
    position_bias = layers.RelativePositionBias(cfg, bidirectional=True, name="relpos_bias")(
        length, length)
    x = self.shared_embedding(tokens)
    x = layers.dropout(cfg)(x, deterministic=not enable_dropout)
    x = nn.with_logical_constraint(x, _EMBED)
    x = _layer_stack(EncoderLayer, cfg, cfg.num_encoder_layers, x, position_bias, mask,
                     enable_dropout=enable_dropout)
    x = layers.RMSNorm(cfg, name="encoder_norm")(x)
    x = layers.dropout(cfg, per_element=True)(x, deterministic=not enable_dropout)  # as T5X
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
    decode_position = None
    if stepping:
      # One new token: its row of the position bias; the attention cache masks the future.
      if max_decode_length is None:
        raise ValueError("max_decode_length is required when decoding step by step")
      position = self.variable("cache", "position", lambda: jnp.array(0, jnp.int32))
      decode_position = position.value
      self_mask, position_bias = None, relpos(1, max_decode_length, decode_position)
      position.value = decode_position + 1
      # The encoder's batch: beam copies of an example share its row (MultiHeadAttention).
      one_query = jnp.ones((enc_valid.shape[0], 1), bool)
      cross_mask = attention.AttentionMask.from_valid(one_query, enc_valid)
    else:
      if decode:  # cache initialisation call
        self.variable("cache", "position", lambda: jnp.array(0, jnp.int32))
      q_valid = target_tokens > 0 if target_tokens is not None else jnp.ones_like(tokens, bool)
      self_mask = attention.AttentionMask.from_valid(q_valid, q_valid, segment_ids, segment_ids,
                                                     causal=True)
      position_bias = relpos(length, length)
      cross_mask = attention.AttentionMask.from_valid(q_valid, enc_valid, segment_ids,
                                                      encoder_segment_ids)
    if cfg.decoder_start_id:
      # Inputs hold T5X's start/pad id 0 (feature converter, decoding loop); models trained
      # with another start token (LongLM: 1) see that one. Masks come from the targets.
      tokens = jnp.where(tokens == 0, cfg.decoder_start_id, tokens)
    x = self.shared_embedding(tokens)
    x = layers.dropout(cfg)(x, deterministic=not enable_dropout)
    x = nn.with_logical_constraint(x, _EMBED)
    x = _layer_stack(DecoderLayer, cfg, cfg.num_decoder_layers, x, position_bias, self_mask,
                     encoded, cross_mask, decode_position, enable_dropout=enable_dropout,
                     decode=decode, cache_length=max_decode_length)
    x = layers.RMSNorm(cfg, name="decoder_norm")(x)
    x = layers.dropout(cfg)(x, deterministic=not enable_dropout)
    if cfg.logits_via_embedding:
      logits = self.shared_embedding.attend(x * (cfg.d_model ** -0.5))
    else:
      kernel = self.param(
          "logits_dense",
          nn.with_logical_partitioning(nn.initializers.normal(cfg.d_model ** -0.5),
                                       ("embed", "vocab")),
          (cfg.d_model, cfg.vocab_size), cfg.params_dtype)
      logits = layers.logits_dense(x, kernel.astype(cfg.compute_dtype))
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
