"""Parameters of scanned and unscanned layer stacks, converted into each other.

An unscanned stack keeps its layers as `layers_0 .. layers_{N-1}` subtrees; a
scanned one (`TransformerConfig.scan_layers`) keeps one `layers` subtree whose
leaves have a leading axis of N. Checkpoints and imports hold either; these
functions let them load into a model of the other kind. Leaves may be arrays
(numpy or jax) or `jax.ShapeDtypeStruct`s (abstract trees for restore targets).
"""

import re
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

STACKS = ("encoder", "decoder")
STACKED = "layers"
_UNSTACKED = re.compile(r"layers_(\d+)$")


def _unstacked_names(stack: Mapping[str, Any]) -> list[str]:
  """`layers_i` keys of a stack in layer order; they must run 0 .. N-1."""
  found = sorted((int(m.group(1)), k) for k in stack if (m := _UNSTACKED.match(str(k))))
  if [i for i, _ in found] != list(range(len(found))):
    raise ValueError(f"layer subtrees must be layers_0 .. layers_{{N-1}}, got "
                     f"{[k for _, k in found]}")
  return [k for _, k in found]


def layout(params: Mapping[str, Any]) -> str | None:
  """'stacked', 'unstacked', or None when `params` holds no encoder / decoder layers."""
  kinds = set()
  for name in STACKS:
    stack = params.get(name) if isinstance(params, Mapping) else None
    if not isinstance(stack, Mapping):
      continue
    if STACKED in stack:
      kinds.add("stacked")
    if _unstacked_names(stack):
      kinds.add("unstacked")
  if len(kinds) > 1:
    raise ValueError("params mix a stacked 'layers' subtree with layers_0 .. layers_N-1")
  return kinds.pop() if kinds else None


def _stack_leaves(*leaves):
  first = leaves[0]
  if isinstance(first, jax.ShapeDtypeStruct):
    return jax.ShapeDtypeStruct((len(leaves),) + tuple(first.shape), first.dtype)
  if isinstance(first, np.ndarray) or np.isscalar(first):
    return np.stack(leaves)
  return jax.numpy.stack(leaves)


def _unstack_leaf(leaf, i: int):
  if isinstance(leaf, jax.ShapeDtypeStruct):
    return jax.ShapeDtypeStruct(tuple(leaf.shape[1:]), leaf.dtype)
  return leaf[i]


def stack_layers(params: Mapping[str, Any]) -> dict:
  """`layers_0 .. layers_{N-1}` of each stack -> one `layers` subtree with a leading N axis."""
  out = dict(params)
  for name in STACKS:
    stack = params.get(name)
    if not isinstance(stack, Mapping):
      continue
    names = _unstacked_names(stack)
    if not names:
      continue
    layers = [stack[k] for k in names]
    structure = jax.tree.structure(layers[0])
    for k, layer in zip(names, layers):
      if jax.tree.structure(layer) != structure:
        raise ValueError(f"{name}/{k} has other parameters than {name}/{names[0]}; "
                         "layers of one stack must match to be stacked")
    rest = {k: v for k, v in stack.items() if k not in names}
    out[name] = {**rest, STACKED: jax.tree.map(_stack_leaves, *layers)}
  return out


def unstack_layers(params: Mapping[str, Any]) -> dict:
  """One `layers` subtree with a leading N axis -> `layers_0 .. layers_{N-1}` per stack."""
  out = dict(params)
  for name in STACKS:
    stack = params.get(name)
    if not isinstance(stack, Mapping) or STACKED not in stack:
      continue
    stacked = stack[STACKED]
    sizes = {np.shape(leaf)[0] if not isinstance(leaf, jax.ShapeDtypeStruct) else leaf.shape[0]
             for leaf in jax.tree.leaves(stacked)}
    if len(sizes) != 1:
      raise ValueError(f"{name}/{STACKED} leaves disagree on the number of layers: {sorted(sizes)}")
    count = sizes.pop()
    rest = {k: v for k, v in stack.items() if k != STACKED}
    out[name] = {**rest, **{f"layers_{i}": jax.tree.map(lambda x, i=i: _unstack_leaf(x, i), stacked)
                            for i in range(count)}}
  return out


def to_layout(params: Mapping[str, Any], target: str | None) -> dict | Mapping[str, Any]:
  """`params` converted to `target` ('stacked' / 'unstacked'); unchanged when it already is."""
  current = layout(params)
  if target is None or current is None or current == target:
    return params
  return stack_layers(params) if target == "stacked" else unstack_layers(params)
