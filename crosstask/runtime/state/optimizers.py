"""Optimizers and learning-rate schedules with T5X's defaults, all built from optax."""

from typing import Any, Callable

import gin
import jax.numpy as jnp
import optax

from crosstask.runtime.config import gin_utils
from crosstask.runtime.state import adafactor as adafactor_lib

Schedule = Callable[[jnp.ndarray], jnp.ndarray]


def _check_rate(base_learning_rate: Any, warmup_steps: Any) -> None:
  """A quoted '1e-3' failed inside the first compiled step, naming no setting."""
  gin_utils.check_number('LEARNING_RATE', base_learning_rate, 0)
  gin_utils.check_count('warmup_steps', warmup_steps, 0)


@gin.configurable(module='schedules')
def rsqrt_decay(base_learning_rate: float = 1.0,
                warmup_steps: int = 10_000,
                linear_warmup: bool = False) -> Schedule:
  """T5X's 'constant * rsqrt_decay': base / sqrt(max(step, warmup)).

  With `linear_warmup` ('constant * linear_warmup * rsqrt_decay') the first
  `warmup_steps` ramp up linearly to the plateau instead of holding it, by
  step / warmup_steps as T5X: step 0 applies a rate of 0.
  """
  _check_rate(base_learning_rate, warmup_steps)

  def schedule(step):
    step = jnp.asarray(step, jnp.float32)
    lr = base_learning_rate * jnp.reciprocal(jnp.sqrt(jnp.maximum(step, warmup_steps)))
    if linear_warmup and warmup_steps > 0:
      lr = lr * jnp.minimum(1.0, step / warmup_steps)
    return lr
  return schedule


@gin.configurable(module='schedules')
def constant(base_learning_rate: float = 1e-3, warmup_steps: int = 0) -> Schedule:
  """A constant rate (T5X fine-tuning uses 1e-3 with Adafactor), optional linear warmup."""
  _check_rate(base_learning_rate, warmup_steps)
  if warmup_steps:
    return optax.join_schedules(
        [optax.linear_schedule(0.0, base_learning_rate, warmup_steps),
         optax.constant_schedule(base_learning_rate)], [warmup_steps])
  return optax.constant_schedule(base_learning_rate)


@gin.configurable(module='schedules')
def linear_decay(base_learning_rate: float = 1e-3,
                 total_steps: int = gin.REQUIRED,
                 warmup_steps: int = 0,
                 end_learning_rate: float = 0.0) -> Schedule:
  """Linear warmup then linear decay to `end_learning_rate` at `total_steps`."""
  _check_rate(base_learning_rate, warmup_steps)
  gin_utils.check_number('schedules.linear_decay.end_learning_rate', end_learning_rate, 0)
  return optax.join_schedules(
      [optax.linear_schedule(0.0, base_learning_rate, warmup_steps),
       optax.linear_schedule(base_learning_rate, end_learning_rate,
                             max(total_steps - warmup_steps, 1))],
      [warmup_steps])


# Adafactor as T5X runs it (second moments factored by logical axes, update clipping,
# parameter scale): `adafactor.adafactor` itself, configurable as `optimizers.adafactor`.
# `create_optimizer` passes it the schedule and the parameters' logical axes.
adafactor = gin.external_configurable(adafactor_lib.adafactor, module='optimizers')


@gin.configurable(module='optimizers')
def adamw(learning_rate: Schedule | float | None = None,
          b1: float = 0.9,
          b2: float = 0.999,
          eps: float = 1e-8,
          weight_decay: float = 1e-4,
          param_axes: Any = None) -> optax.GradientTransformation:
  """AdamW with decoupled weight decay; every parameter alike, so `param_axes` goes unused."""
  return optax.adamw(
      learning_rate=learning_rate if learning_rate is not None else constant(),
      b1=b1, b2=b2, eps=eps, weight_decay=weight_decay)


@gin.configurable(module='optimizers')
def create_optimizer(optimizer_fn: Callable[..., optax.GradientTransformation] = adafactor,
                     learning_rate: Schedule | float | None = None,
                     grad_clip_norm: float | None = None,
                     accumulate_steps: int = 1,
                     *, param_axes: Any) -> tuple[optax.GradientTransformation, Schedule]:
  """The optimizer and its schedule (kept for logging), plus clipping and accumulation.

  `optimizer_fn` is an uncalled factory (`@optimizers.adamw`) that receives the
  schedule, so the logged rate is the one applied, and `param_axes`, the parameters'
  logical axes (`run.param_axes`) by which Adafactor factors its
  statistics. `accumulate_steps` > 1 wraps it
  in `optax.MultiSteps`: parameters change every k steps, each step consuming one
  batch; to split one batch inside a step use the trainer's `num_microbatches`.
  """
  if learning_rate is None:
    learning_rate = rsqrt_decay()
  if not callable(learning_rate):
    gin_utils.check_number('optimizers.create_optimizer.learning_rate', learning_rate, 0)
  schedule = learning_rate if callable(learning_rate) else optax.constant_schedule(learning_rate)
  tx = optimizer_fn(learning_rate=schedule, param_axes=param_axes)
  if grad_clip_norm:
    tx = optax.chain(optax.clip_by_global_norm(grad_clip_norm), tx)
  if accumulate_steps > 1:
    tx = optax.MultiSteps(tx, every_k_schedule=accumulate_steps)
  return tx, schedule
