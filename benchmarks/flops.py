"""Matmul FLOPs of the T5 encoder-decoder, the yardstick for GFLOP/s and MFU.

Counts 2 FLOPs per multiply-add of every matmul a teacher-forced forward pass runs
and nothing else (norms, softmax and activations are left out, as MFU conventions
do). Training is 3x the forward pass (the backward pass is two matmuls per forward
one; remat recomputation is not counted). `decode` is a yardstick of useful work,
the same for both frameworks: it counts self-attention over the tokens generated so
far (not a padded cache) and cross-attention keys and values once per example (not
per beam). `tests/benchmarks/test_benchmark_flops.py` checks the forward count
against the dot products of the traced model.

Shapes come from any object with TransformerConfig's field names: d model width,
h heads, k head width, f MLP width, n MLP input branches, V vocab, S / T input /
target tokens.
"""

from typing import Any


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


def decoder_token(cfg: Any, s: int, context: float) -> float:
  """One target token through the decoder and output layer, attending to `context` targets.

  Per layer 2 (6 d h k + n d f + f d) (self q, k, v, o; cross q, o; MLP) + 4 context h k
  + 4 S h k, then 2 d V for the logits.
  """
  hk = cfg.num_heads * cfg.d_kv
  per_layer = (2 * (6 * _attn_weights(cfg) + _mlp_weights(cfg)) + 4 * context * hk
               + 4 * s * hk)
  return cfg.num_decoder_layers * per_layer + 2 * cfg.d_model * cfg.vocab_size


def forward(cfg: Any, batch: int, s: int, t: int) -> float:
  """Teacher-forced forward pass of a batch: S input and T target tokens per example."""
  return batch * (encoder(cfg, s) + cross_keys_values(cfg, s) + t * decoder_token(cfg, s, t))


def train_step(cfg: Any, batch: int, s: int, t: int) -> float:
  return 3.0 * forward(cfg, batch, s, t)


def decode(cfg: Any, batch: int, s: int, new_tokens: int, beams: int = 1) -> float:
  """Encoder once per example, then each beam's new tokens attending to half of them on average."""
  return (batch * (encoder(cfg, s) + cross_keys_values(cfg, s))
          + batch * beams * new_tokens * decoder_token(cfg, s, new_tokens / 2))
