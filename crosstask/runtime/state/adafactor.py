"""Adafactor with second moments factored by the parameters' logical axes, as T5X does.

optax's Adafactor factors a parameter over its two largest dimensions, so a 3-D
attention kernel [embed, heads, kv] keeps an unfactored second moment as large as
the kernel (T5X's reason for factor rules). Here each dimension's logical name
says its role: 'embed' is a row, 'mlp', 'heads', 'kv', 'vocab' are columns, and
'layers'/'stack' (scanned or stacked layers) are batch dimensions that are kept in
every statistic and never averaged over. The statistics keep the reduced
dimensions (size 1), so each has a known place in the parameter's logical axes
and is sharded like the parameter's remaining dimensions.

The parameters' logical names are an argument of `adafactor` (`param_axes`, as
a Run's `param_axes` gives them): a parameter without an entry there is an
error, never silently factored another way, so a state built anywhere has the
Trainer's shapes. Matrices and vectors (no batch dimension) and parameters whose
entry is None take optax's rule, the two largest dimensions, so their updates equal
optax.adafactor's; T5X does the same.
"""

import dataclasses
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import optax
from jax.sharding import PartitionSpec

ROW, COLUMN, BATCH, NONE = 'row', 'column', 'batch', 'none'

# T5X's standard logical factor rules; a name not listed leaves its parameter unfactored.
FACTOR_RULES: Mapping[str, str] = {
    'embed': ROW,
    'vocab': COLUMN,
    'mlp': COLUMN,
    'heads': COLUMN,
    'kv': COLUMN,
    'joined_kv': COLUMN,
    'relpos_buckets': NONE,
    'layers': BATCH,
    'stack': BATCH,
}


def _key(path: Sequence[Any]) -> tuple[str, ...]:
  return tuple(str(k) for k in path)


def _name(path: Sequence[Any]) -> str:
  return '/'.join(str(getattr(k, 'key', getattr(k, 'name', getattr(k, 'idx', k)))) for k in path)


def _axes_by_path(param_axes: Any) -> dict[tuple[str, ...], PartitionSpec | None]:
  """The parameters' logical axis names (a tree of PartitionSpecs, as
  `nn.get_partition_spec` gives) keyed by each parameter's tree path."""
  flat = jax.tree_util.tree_flatten_with_path(
      param_axes, is_leaf=lambda x: isinstance(x, PartitionSpec) or x is None)[0]
  return {_key(path): spec for path, spec in flat}


@dataclasses.dataclass(frozen=True)
class Factoring:
  """How one parameter's second moment is kept.

  rows/cols: the dimensions averaged out of the column / row statistics (none:
  unfactored). averaged: the dimensions the update clipping and the parameter
  scale average over (all but batch dimensions).
  """
  rows: tuple[int, ...]
  cols: tuple[int, ...]
  averaged: tuple[int, ...]

  @property
  def factored(self) -> bool:
    return bool(self.rows) and bool(self.cols)


def factoring(shape: Sequence[int], names: Sequence[str | None] | None, *, factored: bool = True,
              min_dim_size_to_factor: int = 128,
              rules: Mapping[str, str] = FACTOR_RULES) -> Factoring:
  """The factoring of a parameter, as T5X's Adafactor chooses it.

  A vector or matrix without batch dimensions, or a parameter without names, takes
  optax's rule: its two largest dimensions, when both hold at least
  `min_dim_size_to_factor` elements. A named parameter of higher rank, or one with
  batch dimensions, takes its names' rows and columns at any size (T5X applies the
  size floor to matrices only); rows and columns beside an unruled dimension are
  refused, as in T5X.
  """
  everything = tuple(range(len(shape)))
  named = names is not None and len(names) == len(shape)
  kinds = [rules.get(n, NONE) if n else NONE for n in names] if named else []
  batch = {d for d, k in enumerate(kinds) if k == BATCH}
  if not named or (len(shape) <= 2 and not batch):
    if not factored or len(shape) < 2:
      return Factoring((), (), everything)
    order = sorted(everything, key=lambda d: shape[d])  # Stable: ties keep their order.
    if shape[order[-2]] < min_dim_size_to_factor:
      return Factoring((), (), everything)
    return Factoring((order[-2],), (order[-1],), everything)
  averaged = tuple(d for d in everything if d not in batch)
  rows = tuple(d for d, k in enumerate(kinds) if k == ROW)
  cols = tuple(d for d, k in enumerate(kinds) if k == COLUMN)
  if rows and cols and NONE in kinds:
    raise ValueError(f'incomplete Adafactor factor rule for logical axes {tuple(names)}: each '
                     'name must be a row, a column or a batch dimension (FACTOR_RULES)')
  if not factored or not rows or not cols:
    return Factoring((), (), averaged)
  return Factoring(rows, cols, averaged)


class AdafactorState(NamedTuple):
  """Per parameter (trees shaped like the parameters): v_row (mean over the column
  dimensions, kept as size 1), v_col (mean over the rows), v (unfactored second
  moment), m (momentum); a () placeholder where unused."""
  count: jax.Array
  v_row: Any
  v_col: Any
  v: Any
  m: Any


def adafactor(learning_rate: float | Callable[[jax.Array], jax.Array],
              decay_rate: float = 0.8,
              decay_offset: int = 0,
              clipping_threshold: float | None = 1.0,
              multiply_by_parameter_scale: bool = True,
              min_dim_size_to_factor: int = 128,
              momentum: float | None = None,
              weight_decay_rate: float | None = None,
              eps: float = 1e-30,
              eps_scale: float = 1e-3,
              factored: bool = True,
              factor_rules: Mapping[str, str] = FACTOR_RULES,
              *, param_axes: Any) -> optax.GradientTransformation:
  """Adafactor (Shazeer & Stern, 2018) with optax.adafactor's hyper-parameters.

  The update is optax's chain (factored rms scaling, block-rms clipping, learning
  rate, parameter scale, momentum, weight decay, descent) with rms and scale taken
  per slice of batch dimensions. `param_axes` names every parameter's dimensions
  (module docstring); init and update refuse a parameter it does not cover.
  """
  axes = _axes_by_path(param_axes)

  def plans(params):
    flat, treedef = jax.tree_util.tree_flatten_with_path(params)

    def plan(path, p):
      if _key(path) not in axes:
        raise ValueError(
            f"Adafactor has no logical axes for parameter '{_name(path)}': build it with "
            "param_axes=run.param_axes of a Run of this model.")
      names = axes[_key(path)]
      names = None if names is None else tuple(names) + (None,) * (p.ndim - len(names))
      return factoring(p.shape, names, factored=factored,
                       min_dim_size_to_factor=min_dim_size_to_factor, rules=factor_rules)
    return jax.tree_util.tree_unflatten(treedef, [plan(path, p) for path, p in flat])

  def placeholder():
    return jnp.zeros((), jnp.float32)

  def init(params):
    def one(p, f: Factoring):
      if f.factored:
        v_row = jnp.zeros([1 if d in f.cols else n for d, n in enumerate(p.shape)], jnp.float32)
        v_col = jnp.zeros([1 if d in f.rows else n for d, n in enumerate(p.shape)], jnp.float32)
        v = placeholder()
      else:
        v_row, v_col, v = placeholder(), placeholder(), jnp.zeros(p.shape, jnp.float32)
      m = jnp.zeros(p.shape, jnp.float32) if momentum is not None else placeholder()
      return v_row, v_col, v, m
    per_param = jax.tree.map(one, params, plans(params))
    pick = lambda i: jax.tree.map(lambda _, t: t[i], params, per_param)
    return AdafactorState(jnp.zeros((), jnp.int32), pick(0), pick(1), pick(2), pick(3))

  def update(grads, state: AdafactorState, params=None):
    if params is None:
      raise ValueError('Adafactor needs the parameters in update (parameter scale, factoring).')
    count = state.count
    decay = 1.0 - (count - decay_offset + 1).astype(jnp.float32) ** (-decay_rate)
    mix = 1.0 - decay
    lr = learning_rate(count) if callable(learning_rate) else learning_rate

    def one(path, g, p, v_row, v_col, v, m, f: Factoring):
      if f.factored != (v_row.ndim == p.ndim):
        raise ValueError(
            f"Adafactor state of parameter '{_name(path)}' was built with another factoring: "
            'build the state with the same optimizer (the same param_axes) that updates it.')
      g = g.astype(jnp.float32)
      g2 = g * g + eps
      if f.factored:
        v_row = decay * v_row + mix * jnp.mean(g2, axis=f.cols, keepdims=True)
        v_col = decay * v_col + mix * jnp.mean(g2, axis=f.rows, keepdims=True)
        row_mean = jnp.mean(v_row, axis=f.rows, keepdims=True)
        y = g * (v_row / row_mean) ** -0.5 * v_col ** -0.5
      else:
        v = decay * v + mix * g2
        y = g * v ** -0.5
      if clipping_threshold is not None:
        rms = jnp.sqrt(jnp.mean(y * y, axis=f.averaged, keepdims=True))
        y = y / jnp.maximum(1.0, rms / clipping_threshold)
      step = lr * y
      p32 = p.astype(jnp.float32)
      if multiply_by_parameter_scale:
        step = step * jnp.maximum(
            jnp.sqrt(jnp.mean(p32 * p32, axis=f.averaged, keepdims=True)), eps_scale)
      if momentum is not None:
        m = momentum * m + (1.0 - momentum) * step
        step = m
      if weight_decay_rate is not None:
        step = step + weight_decay_rate * p32
      return (-step).astype(p.dtype), v_row, v_col, v, m

    flat_params, treedef = jax.tree_util.tree_flatten_with_path(params)
    paths = [path for path, _ in flat_params]
    leaves = lambda tree: treedef.flatten_up_to(tree)
    outs = [one(path, *args) for path, *args in zip(
        paths, leaves(grads), [p for _, p in flat_params], leaves(state.v_row),
        leaves(state.v_col), leaves(state.v), leaves(state.m), leaves(plans(params)))]
    pick = lambda i: jax.tree_util.tree_unflatten(treedef, [o[i] for o in outs])
    return pick(0), AdafactorState(optax.safe_increment(count), pick(1), pick(2), pick(3),
                                   pick(4))

  return optax.GradientTransformation(init, update)
