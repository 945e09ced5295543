"""The train state and the jitted, sharded train step.

The state is a plain dict {'step', 'params', 'opt_state'} so orbax saves it as is.
Every placement is derived from abstract shapes (`jax.eval_shape`), before anything
is compiled: parameters by the partitioner's logical-axis rules, optimizer state
like the parameter each leaf belongs to (moments as the parameter, factored
statistics as its remaining dimensions), scalars whole. So the state can be
described, and the step compiled, for devices this process cannot run on.
"""

from typing import Any, Callable, Mapping

import flax.linen as nn
import gin
import jax
import jax.numpy as jnp
import optax

from crosstask.runtime.config import host_memory
from crosstask.runtime.config import platform
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.sharding import partitioning

State = dict[str, Any]


def applied_learning_rate(schedule: Callable[[jax.Array], jax.Array], opt_state: Any,
                          step: jax.Array) -> jax.Array:
  """The rate the next update applies: the schedule at the optimizer's own count,
  which counts updates (one per k steps under `accumulate_steps=k`) and stays put
  on a skipped non-finite step; at the train step where the optimizer keeps none."""
  counts = optax.tree_utils.tree_get_all_with_path(opt_state, 'count')
  return jnp.asarray(schedule(counts[0][1] if counts else step), jnp.float32)


@gin.configurable(module='trainer')
class Trainer:
  """Builds, shards and steps the train state of a resolved Run on its mesh."""

  def __init__(self, run: run_lib.Run, optimizer: optax.GradientTransformation,
               learning_rate_fn: Callable[[Any], Any], skip_nonfinite_batches: bool = False):
    """The Trainer of a resolved run: its model, mesh, platform profile (whose XLA
    options the step compiles with), shapes, microbatches and the parameters it traced.
    `optimizer` factors by `run.param_axes`. A step whose loss or gradients are NaN/Inf
    changes nothing either way; the train loop then stops (default) or counts the
    skipped batch."""
    self.model = run.model
    self.partitioner = partitioner = run.partitioner
    self.profile = run.profile
    self.compiler_options = dict(self.profile.train_compiler_options)
    self.skip_nonfinite_batches = skip_nonfinite_batches
    self.optimizer = optimizer
    self.learning_rate_fn = learning_rate_fn
    self.input_shapes = run.input_shapes
    # The batch and its microbatches were checked against the mesh by `run.resolve`.
    self.num_microbatches = run.num_microbatches
    self.param_shardings = partitioner.logical_to_sharding(run.boxed)
    params = nn.unbox(run.boxed)
    opt_state = jax.eval_shape(self._fresh_opt_state, params)
    replicated = partitioner.replicated
    self.state_shardings: State = {
        'step': replicated, 'params': self.param_shardings,
        'opt_state': partitioner.state_shardings(opt_state, params, self.param_shardings)}
    self._abstract_state = jax.tree.map(
        lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh),
        {'step': jax.ShapeDtypeStruct((), jnp.int32), 'params': params, 'opt_state': opt_state},
        self.state_shardings)
    self._init = jax.jit(self._init_state, out_shardings=self.state_shardings)
    self._step = None

  def _boxed_params(self, rng):
    return self.model.get_initial_variables(rng, self.input_shapes)['params']

  def _fresh_opt_state(self, params):
    return self.optimizer.init(params)

  def _init_state(self, rng) -> State:
    params = nn.unbox(self._boxed_params(rng))
    return {'step': jnp.zeros((), jnp.int32), 'params': params,
            'opt_state': self._fresh_opt_state(params)}

  def abstract_state(self) -> State:
    """The state's shapes, dtypes and shardings (ShapeDtypeStructs); compiles nothing."""
    return self._abstract_state

  def abstract_params(self) -> Any:
    """Parameter shapes, dtypes and placements (ShapeDtypeStructs); compiles nothing."""
    return self._abstract_state['params']

  def init_state(self, seed: int) -> State:
    """A fresh state, each leaf created directly in its place on the mesh."""
    with self.partitioner.context():
      return self._init(jax.random.key(seed))

  def state_from_params(self, params: Any) -> State:
    """A fresh optimizer state around given (e.g. fine-tuning) parameters.

    Consumes `params`: their buffers are donated to the state where shapes and
    placements allow, so an imported checkpoint is not held twice for the run.
    """
    def build(p):
      return {'step': jnp.zeros((), jnp.int32), 'params': p, 'opt_state': self._fresh_opt_state(p)}
    with self.partitioner.context():
      return jax.jit(build, out_shardings=self.state_shardings, donate_argnums=(0,))(params)

  def microbatches(self, batch: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
    """[B, ...] -> [k, B/k, ...] where microbatch i holds rows i, k+i, 2k+i, ...

    Rows a device holds contribute equally to every microbatch, so each microbatch
    spans every data-parallel device and no row moves between devices (a plain
    reshape to [k, B/k] would put microbatch i on devices i*D/k .. (i+1)*D/k only).
    T5X slices contiguously: the same rows, grouped otherwise, which matters only
    where the loss is normalised per microbatch.
    """
    k = self.num_microbatches
    sharding = jax.sharding.NamedSharding(
        self.partitioner.mesh, jax.sharding.PartitionSpec(None, partitioning.BATCH_AXES))

    def split(x):
      x = jnp.swapaxes(x.reshape((x.shape[0] // k, k) + x.shape[1:]), 0, 1)
      return jax.lax.with_sharding_constraint(x, sharding)
    return {name: split(x) for name, x in batch.items()}

  def _grads(self, params, batch, dropout_rng):
    grad_fn = jax.value_and_grad(self.model.loss_fn, has_aux=True)
    if self.num_microbatches <= 1:
      (_, metrics), grads = grad_fn(params, batch, dropout_rng)
      return grads, metrics
    k = self.num_microbatches
    micro = self.microbatches(batch)

    def body(acc, xs):
      mb, i = xs
      (_, metrics), grads = grad_fn(params, mb, jax.random.fold_in(dropout_rng, i))
      return jax.tree.map(jnp.add, acc, grads), metrics

    # Losses are sums over tokens (T5X), so the batch gradient is the sum of the
    # microbatch gradients; only ratios (accuracy) are averaged.
    zeros = jax.tree.map(jnp.zeros_like, params)
    grads, metrics = jax.lax.scan(body, zeros, (micro, jnp.arange(k)))
    metrics = {name: jnp.mean(v) if name == 'accuracy' else jnp.sum(v)
               for name, v in metrics.items()}
    return grads, metrics

  def _train_step(self, state: State, batch, rng) -> tuple[State, dict]:
    dropout_rng = jax.random.fold_in(rng, state['step'])
    grads, metrics = self._grads(state['params'], batch, dropout_rng)
    metrics = dict(metrics)
    metrics['learning_rate'] = applied_learning_rate(self.learning_rate_fn, state['opt_state'],
                                                     state['step'])
    metrics['grad_norm'] = optax.global_norm(grads)
    finite = jnp.isfinite(metrics['loss']) & jnp.isfinite(metrics['grad_norm'])

    def update(params, opt_state):
      updates, opt_state = self.optimizer.update(grads, opt_state, params)
      return optax.apply_updates(params, updates), opt_state

    # A non-finite step keeps the previous parameters and optimizer state. A cond
    # (not a select over the whole state) lets the update run in place: a select
    # needs the old and the new state alive together, a second copy of
    # parameters and optimizer moments at the peak of the step.
    params, opt_state = jax.lax.cond(finite, update, lambda p, o: (p, o),
                                     state['params'], state['opt_state'])
    metrics['nonfinite'] = 1.0 - finite.astype(jnp.float32)
    return {'step': state['step'] + 1, 'params': params, 'opt_state': opt_state}, metrics

  def compile_train_step(self, state: State, batch: Mapping[str, jax.Array], rng):
    """The train step compiled for these shapes (`memory_analysis()` tells its plan).

    Arguments may be arrays or ShapeDtypeStructs (`abstract_state()`), so the step
    compiles for devices that only exist as a topology.
    """
    batch_shardings = {k: self.partitioner.data_sharding for k in batch}
    jitted = jax.jit(
        self._train_step,
        in_shardings=(self.state_shardings, batch_shardings, self.partitioner.replicated),
        out_shardings=(self.state_shardings, self.partitioner.replicated),
        donate_argnums=(0,), compiler_options=self.compiler_options or None)
    with self.partitioner.context():
      try:
        return jitted.lower(state, batch, rng).compile()
      except jax.errors.JaxRuntimeError as e:
        platform.raise_if_options_refused(e, 'platform.profile.train_compiler_options',
                                          self.compiler_options)
        raise

  @property
  def compiled_train_step(self) -> Any:
    """The compiled step `train_step` runs (None before its first call): its program,
    memory plan and cost, without compiling it again."""
    return self._step

  def train_step(self, state: State, batch: Mapping[str, jax.Array], rng) -> tuple[State, dict]:
    if self._step is None:
      self._step = self.compile_train_step(state, batch, rng)
      host_memory.release_freed()
    with self.partitioner.context():
      return self._step(state, batch, rng)

  def loss_and_grads(self, params, batch, rng=None):
    """Loss, metrics and gradients without an update (for parity checks), computed
    as the train step does, microbatches included."""
    rng = jax.random.key(0) if rng is None else rng

    def f(p, b):
      grads, metrics = self._grads(p, b, rng)
      return metrics['loss'], metrics, grads
    with self.partitioner.context():
      return jax.jit(f)(params, batch)
