"""Weights for tests that need a network's parameters but not its initialisers' values.

A jitted `Transformer.init` of a test-sized model compiles for 2-5 s on CPU (the
random draws and the discarded forward pass), and an eager one compiles ~170 small
programs; the tests that only compare two ways of computing with the same weights pay
that once per xdist worker. Here the shapes come from `jax.eval_shape` of the init
(traced, never compiled) and numpy draws each leaf at the scale its initializer in
crosstask.models uses, so activations stay in the range the real init gives.
"""

from typing import Any

import flax.linen as nn
import jax
import numpy as np


def _std(name: str, shape: tuple[int, ...]) -> float:
  """The standard deviation of the normal initializer crosstask.models gives `name`
  (layers.py, network.py); `shape` without a scanned stack's leading layer axis."""
  if name in ("embedding", "rel_embedding"):
    return 1.0
  if name == "query":  # (d_model * d_kv) ** -0.5: T5's query scaling folded in
    return float(shape[0] * shape[-1]) ** -0.5
  if name in ("out", "wo"):  # read from heads x d_kv, or d_ff
    return float(np.prod(shape[:-1])) ** -0.5
  return float(shape[0]) ** -0.5  # key, value, wi*, logits_dense: from d_model


def random_variables(module: nn.Module, *init_args: Any, seed: int = 0,
                     **init_kwargs: Any) -> dict[str, Any]:
  """`module.init(key, *init_args, **init_kwargs)`'s variables, boxed as init boxes them
  (logical axis names kept), each weight drawn from numpy's generator `seed`; norm
  scales are ones, as `nn.initializers.ones` makes them."""
  shapes = jax.eval_shape(lambda: module.init(jax.random.key(0), *init_args, **init_kwargs))
  rng = np.random.default_rng(seed)

  def draw(path, leaf):
    keys = [p.key for p in path if isinstance(p, jax.tree_util.DictKey)]
    shape = leaf.shape[1:] if "layers" in keys else leaf.shape
    if keys[-1] == "scale":
      value = np.ones(leaf.shape)
    else:
      value = rng.normal(0.0, _std(keys[-1], shape), leaf.shape)
    return jax.device_put(np.asarray(value, leaf.dtype))
  return jax.tree_util.tree_map_with_path(draw, shapes)


def random_params(module: nn.Module, *init_args: Any, seed: int = 0, **init_kwargs: Any) -> Any:
  """The unboxed `params` collection of `random_variables`."""
  return nn.meta.unbox(random_variables(module, *init_args, seed=seed, **init_kwargs)["params"])
