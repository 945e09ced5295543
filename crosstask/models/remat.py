"""Rematerialised layers whose backward pass runs one layer at a time.

`remat_policy` ("full", "minimal") recomputes a layer's activations in the
backward pass, as T5X's remat policies do. Under `jax.checkpoint` alone,
XLA:CPU ran the recomputation of every decoder layer before the backward of
the first one, and left each layer's small side gradients (the shared position
bias's) to be summed at the end of the stack: recomputed and transient arrays
of all layers were alive at once. jax.checkpoint's optimization barriers do not
prevent this, since XLA:CPU expands them before it schedules. On a LongLM-large
step (8 x 512/512) the "full" policy planned 39.2 GiB of temporaries; with this
module, 4.7 GiB (benchmarks/README.md, "Knobs that matter for memory").

So each layer is wrapped in a `jax.custom_vjp` whose backward
- reads the saved values only through a select on the incoming gradient, so
  no recomputation can start before that gradient exists, and
- hands back its gradients only through a select on all of them, so the next
  layer's backward waits for this layer's side gradients.
The selects keep every value unless a gradient is NaN (then the step's
gradients are NaN anyway and the trainer's non-finite guard skips it); they are
data dependences that no compiler pass removes. Gradients equal plain
`jax.checkpoint`'s. The custom_vjp supports reverse mode only.
"""

import functools
from typing import Any, Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax.core import lift

POLICIES: dict[str, Callable[..., bool] | None] = {
    "full": None,  # save only the layer's inputs
    "minimal": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
}


def _any_nan(tree: Any) -> jax.Array:
  """True when the first element of some floating-point leaf is NaN (a cheap probe).

  One reduction over the gathered elements: XLA keeps its scalar result as one
  buffer, where a chain of elementwise ORs would be copied into every fusion that
  reads the flag (5x the optimized HLO of a T5 small step).
  """
  firsts = [leaf.reshape(-1)[0].astype(jnp.float32) for leaf in jax.tree.leaves(tree)
            if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.floating) and leaf.size]
  if not firsts:
    return jnp.zeros((), bool)
  return jnp.any(jnp.isnan(jnp.stack(firsts)))


def _unless(flag: jax.Array, leaf: Any) -> Any:
  """`leaf`, made data-dependent on `flag`: NaN (or bit-flipped) where it is set."""
  dtype = getattr(leaf, "dtype", None)
  if dtype is None:
    return leaf
  if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
    data = _unless(flag, jax.random.key_data(leaf))
    return jax.random.wrap_key_data(data, impl=jax.random.key_impl(leaf))
  if jnp.issubdtype(dtype, jnp.floating):
    return jnp.where(flag, jnp.asarray(jnp.nan, dtype), leaf)
  if jnp.issubdtype(dtype, jnp.integer) or dtype == jnp.bool_:
    return jnp.where(flag, ~leaf, leaf)
  return leaf  # float0 cotangents of integer inputs


def ordered_checkpoint(fun: Callable[..., Any], policy: Callable[..., bool] | None,
                       static_argnums: Sequence[int] = ()) -> Callable[..., Any]:
  """`jax.checkpoint(fun, policy)` whose backward waits for its gradient (see module doc)."""
  static = tuple(static_argnums)

  def call(*args, **kwargs):
    if kwargs:
      raise TypeError(f"ordered_checkpoint passes arguments positionally; got keywords "
                      f"{sorted(kwargs)}")
    fixed = {i: args[i] for i in static}

    def with_fixed(*dynamic):
      rest = iter(dynamic)
      return fun(*[fixed[i] if i in fixed else next(rest) for i in range(len(args))])

    # The ties below already keep the recomputation apart from the forward pass.
    rematted = jax.checkpoint(with_fixed, policy=policy, prevent_cse=False)

    @jax.custom_vjp
    def layer(*dynamic):
      return with_fixed(*dynamic)

    def forward(*dynamic):
      return jax.vjp(rematted, *dynamic)

    def backward(vjp_fn, cotangent):
      arrived = _any_nan(cotangent)
      vjp_fn = jax.tree.map(functools.partial(_unless, arrived), vjp_fn)
      grads = vjp_fn(cotangent)
      done = _any_nan(grads)
      return jax.tree.map(functools.partial(_unless, done), grads)

    layer.defvjp(forward, backward)
    return layer(*[a for i, a in enumerate(args) if i not in fixed])

  return call


def _lifted(fn: Callable[..., Any], policy: Callable[..., bool] | None,
            static_argnums: tuple[int, ...] = (), variables: Any = True, rngs: Any = True):
  """`ordered_checkpoint` lifted over a Flax scope (variables and rngs pass through)."""

  def inner(scope_fn, repack_fn, variable_groups, rng_groups, *args):
    def scoped(variable_groups, rng_groups, *args):
      scope = scope_fn(variable_groups, rng_groups)
      return fn(scope, *args), repack_fn(scope)
    shifted = tuple(i + 2 for i in static_argnums)  # after variable_groups, rng_groups
    return ordered_checkpoint(scoped, policy, shifted)(variable_groups, rng_groups, *args)

  return lift.pack(inner, (variables,), (variables,), (rngs,), name="remat")


def remat_layer(layer_cls: type[nn.Module], policy_name: str,
                static_argnums: tuple[int, ...]) -> type[nn.Module]:
  """`layer_cls` rematerialised per `policy_name` ("full", "minimal").

  `static_argnums` count `self` as 0, as `nn.remat`'s do; the layer must be
  called with positional arguments.
  """
  if policy_name not in POLICIES:
    raise ValueError(f"remat policy must be one of {sorted(POLICIES)}, got {policy_name!r}")
  return nn.transforms.lift_transform(_lifted, layer_cls, POLICIES[policy_name],
                                      tuple(i - 1 for i in static_argnums))
