"""Token cross entropy with label smoothing and z-loss, normalised as in T5X."""

from collections.abc import Mapping

import jax
import jax.numpy as jnp

NUM_REAL_TARGET_TOKENS = "NUM_REAL_TARGET_TOKENS"
NUM_TOTAL_TARGET_TOKENS = "NUM_TOTAL_TARGET_TOKENS"
AVERAGE_PER_SEQUENCE = "AVERAGE_PER_SEQUENCE"
_NAMED = (NUM_REAL_TARGET_TOKENS, NUM_TOTAL_TARGET_TOKENS, AVERAGE_PER_SEQUENCE)


def compute_weighted_cross_entropy(
    logits: jax.Array, targets: jax.Array, weights: jax.Array | None = None,
    label_smoothing: float = 0.0, z_loss: float = 0.0,
    loss_normalizing_factor: float | jax.Array | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Returns (loss, z_loss part, weight sum), summed over tokens then divided by the factor.

  Label smoothing spreads `label_smoothing` over the other V-1 classes and subtracts
  the entropy of that soft target, so a perfect model still scores 0 (as T5X).
  """
  if logits.ndim != targets.ndim + 1:
    raise ValueError(f"logits shape {logits.shape} does not fit targets shape {targets.shape}")
  vocab = logits.shape[-1]
  confidence = 1.0 - label_smoothing
  low = label_smoothing / (vocab - 1)
  normalizing_constant = -(confidence * jnp.log(confidence)
                           + (vocab - 1) * low * jnp.log(low + 1e-20))
  logits = logits.astype(jnp.float32)
  log_z = jax.nn.logsumexp(logits, axis=-1)
  # sum(soft_targets * logits) without materialising the [..., V] soft targets. The
  # target logit is picked by an iota compare rather than a gather: the value is the
  # same (one term plus zeros), but its gradient is elementwise and fuses into the
  # softmax gradient instead of a scatter into a zero [..., V] buffer plus an extra
  # pass (and, on CPU, a transposed copy) over the logits.
  is_target = targets[..., None] == jnp.arange(vocab, dtype=targets.dtype)
  target_logit = jnp.sum(jnp.where(is_target, logits, 0.0), axis=-1)
  soft_dot = (confidence - low) * target_logit
  if label_smoothing:
    soft_dot = soft_dot + low * jnp.sum(logits, axis=-1)
  loss = log_z - soft_dot - normalizing_constant
  total_z = z_loss * jnp.square(log_z)
  loss = loss + total_z
  if weights is None:
    weights = jnp.ones_like(loss)
  weights = weights.astype(jnp.float32)
  loss, total_z = jnp.sum(loss * weights), jnp.sum(total_z * weights)
  if loss_normalizing_factor is not None:
    loss, total_z = loss / loss_normalizing_factor, total_z / loss_normalizing_factor
  return loss, total_z, jnp.sum(weights)


def loss_weights(batch: Mapping[str, jax.Array]) -> jax.Array:
  """float32 `decoder_loss_weights`, or 1 on every nonzero target when the batch has none."""
  weights = batch.get("decoder_loss_weights")
  if weights is None:
    weights = batch["decoder_target_tokens"] > 0
  return jnp.asarray(weights, jnp.float32)


def check_loss_normalizing_factor(loss_normalizing_factor: float | str | None) -> None:
  """Raises ValueError unless the option is None, a number or a (case-insensitive) name."""
  if loss_normalizing_factor is None:
    return
  if isinstance(loss_normalizing_factor, bool) or not (
      isinstance(loss_normalizing_factor, (int, float))
      or str(loss_normalizing_factor).upper() in _NAMED):
    raise ValueError(f"loss_normalizing_factor must be None, a number or one of {_NAMED}, "
                     f"got {loss_normalizing_factor!r}")


def get_loss_normalizing_factor_and_weights(
    loss_normalizing_factor: float | str | None, batch: Mapping[str, jax.Array]
) -> tuple[float | jax.Array | None, jax.Array]:
  """Mirrors T5X: None = plain sum; a number = divide by it; or one of the named factors.

  NUM_REAL_TARGET_TOKENS: sum of loss weights. NUM_TOTAL_TARGET_TOKENS: target array
  size. AVERAGE_PER_SEQUENCE: each (packed) sequence's weights sum to 1, divided by
  the number of sequences.
  """
  check_loss_normalizing_factor(loss_normalizing_factor)
  targets = batch["decoder_target_tokens"]
  weights = loss_weights(batch)
  if loss_normalizing_factor is None or isinstance(loss_normalizing_factor, (int, float)):
    return loss_normalizing_factor, weights
  name = str(loss_normalizing_factor).upper()
  if name == NUM_REAL_TARGET_TOKENS:
    return jnp.sum(weights), weights
  if name == NUM_TOTAL_TARGET_TOKENS:
    return float(targets.size), weights
  # AVERAGE_PER_SEQUENCE (the only name left after the check).
  segments = batch.get("decoder_segment_ids")
  if segments is None:
    segments = (targets > 0).astype(jnp.int32)
  # Token pairs of one segment, not a one-hot over segment ids: the ids need no
  # bound (a packed row may number more examples than it has target slots, when
  # some have no targets).
  same = (segments[:, :, None] == segments[:, None, :]).astype(jnp.float32)  # [B, L, L]
  per_token = jnp.einsum("bm,blm->bl", weights, same)  # its segment's total weight
  weights = jnp.where(per_token > 0, weights / jnp.maximum(per_token, 1e-9), 0.0)
  # Each weighted segment's weights now sum to 1, so their total counts the sequences.
  num_sequences = jnp.round(jnp.sum(weights))
  return jnp.maximum(num_sequences, 1.0), weights
