"""Matmul FLOPs of the T5 encoder-decoder: the numerator of MFU, and of a planned step.

Counts 2 FLOPs per multiply-add of every matmul a teacher-forced forward pass runs,
every layer of encoder and decoder with its attention products and the output
layer, and nothing else (norms, softmax and activations are left out, as MFU
conventions do). A train step is 3x the forward pass (the backward pass is two
matmuls per forward one): `train_step` is the model FLOPs that MFU divides, the same
whatever the layers' remat or scan. `remat_recompute` is the forward work the
backward pass does again under the config's remat policy, which the chip does run:
a planned step time counts it, MFU does not. `decode` is a yardstick of useful work:
self-attention over the tokens generated so far (not a padded cache) and
cross-attention keys and values once per example (not per beam).

The count depends only on the config and the lengths, so it is the same for a
scanned and an unscanned stack and for fused attention kernels, which XLA's cost
model counts once per loop and not at all. Shapes come from any object with
TransformerConfig's field names: d model width, h heads, k head width, f MLP width,
n MLP input branches, V vocab, S / T input / target tokens.
"""

from typing import Any

# Remat policies (models/remat.py) and the forward matmuls each makes the backward
# pass recompute: every layer's ('full'), none ('dots' saves every matmul output), or
# the attention products only ('minimal' saves the weight matmuls). The 'dots_attention'
# policies save what 'dots' does and more.
_RECOMPUTES = {'full': 'layers', 'minimal': 'attention', 'dots': None, 'none': None,
               'auto': None, 'dots_attention': None, 'dots_attention_norms': None}


def _attn_weights(cfg: Any) -> int:
  return cfg.d_model * cfg.num_heads * cfg.d_kv  # one of q, k, v, o


def _mlp_weights(cfg: Any) -> int:
  return len(cfg.activations) * cfg.d_model * cfg.d_ff + cfg.d_ff * cfg.d_model


def encoder(cfg: Any, s: int) -> float:
  """One example's encoder: per layer 2 S (4 d h k + n d f + f d) + 4 S^2 h k."""
  hk = cfg.num_heads * cfg.d_kv
  return cfg.num_encoder_layers * (2 * s * (4 * _attn_weights(cfg) + _mlp_weights(cfg))
                                   + 4 * s * s * hk)


def cross_keys_values(cfg: Any, s: int) -> float:
  """One example's cross-attention keys and values, projected once from S encoder tokens."""
  return cfg.num_decoder_layers * 2 * s * 2 * _attn_weights(cfg)


def output_layer(cfg: Any) -> float:
  """One target token's logits: 2 d V."""
  return 2 * cfg.d_model * cfg.vocab_size


def decoder_token(cfg: Any, s: int, context: float) -> float:
  """One target token through the decoder and output layer, attending to `context` targets.

  Per layer 2 (6 d h k + n d f + f d) (self q, k, v, o; cross q, o; MLP) + 4 context h k
  + 4 S h k, then 2 d V for the logits.
  """
  hk = cfg.num_heads * cfg.d_kv
  per_layer = (2 * (6 * _attn_weights(cfg) + _mlp_weights(cfg)) + 4 * context * hk
               + 4 * s * hk)
  return cfg.num_decoder_layers * per_layer + output_layer(cfg)


def forward(cfg: Any, batch: int, s: int, t: int) -> float:
  """Teacher-forced forward pass of a batch: S input and T target tokens per example."""
  return batch * (encoder(cfg, s) + cross_keys_values(cfg, s) + t * decoder_token(cfg, s, t))


def train_step(cfg: Any, batch: int, s: int, t: int) -> float:
  """Model FLOPs of one train step (forward and backward): what MFU counts as done."""
  return 3.0 * forward(cfg, batch, s, t)


def train_shape(model: Any, input_shapes: Any) -> tuple[Any, int, int, int] | None:
  """(config, B, S, T), the counts' arguments, of a model wrapper (`model.module.config`)
  at its input shapes {'encoder_input_tokens': (B, S), 'decoder_input_tokens': (B, T)};
  None for a network without a TransformerConfig. The training console and the
  compile's prediction both count from it."""
  cfg = getattr(getattr(model, 'module', None), 'config', None)
  if cfg is None or not hasattr(cfg, 'num_encoder_layers'):
    return None
  (batch, s), (_, t) = (input_shapes['encoder_input_tokens'],
                        input_shapes['decoder_input_tokens'])
  return cfg, batch, s, t


def of_input_shapes(model: Any, input_shapes: Any) -> float | None:
  """`train_step` of a model wrapper at its input shapes (`train_shape`); None for a
  network without a TransformerConfig."""
  shape = train_shape(model, input_shapes)
  return None if shape is None else train_step(*shape)


def attention_products(cfg: Any, batch: int, s: int, t: int) -> float:
  """The forward pass's query-key and probability-value products: 4 L^2 h k a stack."""
  hk = cfg.num_heads * cfg.d_kv
  return batch * 4 * hk * (cfg.num_encoder_layers * s * s
                           + cfg.num_decoder_layers * (t * t + s * t))


def remat_recompute(cfg: Any, batch: int, s: int, t: int) -> float:
  """Forward FLOPs the backward pass runs again under `cfg.remat_policy`.

  'full' remat keeps each layer's inputs only, so the backward pass reruns the
  layer's forward matmuls but the MLP's output projection, whose result only joins
  the residual stream and no gradient needs (JAX drops it from the recomputation);
  the output layer is outside the layers. 'minimal' keeps the weight matmuls'
  outputs and recomputes the attention products; 'none' and 'dots' recompute no
  matmul.
  """
  policy = getattr(cfg, 'remat_policy', 'none')
  if policy not in _RECOMPUTES:
    raise ValueError(f'remat_policy {policy!r}: expected one of {sorted(_RECOMPUTES)}')
  what = _RECOMPUTES[policy]
  if what == 'layers':
    mlp_out = 2 * cfg.d_ff * cfg.d_model * (cfg.num_encoder_layers * s
                                            + cfg.num_decoder_layers * t)
    return forward(cfg, batch, s, t) - batch * (t * output_layer(cfg) + mlp_out)
  if what == 'attention':
    return attention_products(cfg, batch, s, t)
  return 0.0


def executed_train_step(cfg: Any, batch: int, s: int, t: int) -> float:
  """Matmul FLOPs a train step runs: the model FLOPs plus remat's recomputation."""
  return train_step(cfg, batch, s, t) + remat_recompute(cfg, batch, s, t)


def decode(cfg: Any, batch: int, s: int, new_tokens: int, beams: int = 1) -> float:
  """Encoder once per example, then each beam's new tokens attending to half of them on average."""
  return (batch * (encoder(cfg, s) + cross_keys_values(cfg, s))
          + batch * beams * new_tokens * decoder_token(cfg, s, new_tokens / 2))
