"""Remat policies: what a layer keeps for the backward pass and what it recomputes.

Plain `jax.checkpoint` policies applied per layer through `nn.remat`, as T5X and
MaxText do; the compiler schedules the recomputation. "auto" (left for the runtime's
platform profile to replace) is read as "none".
"""

from collections.abc import Callable

import flax.linen as nn
import jax

# The fused attention kernels' forward primitives (cuDNN's, as jax binds it inside its
# custom_vjp): saving their outputs (the attention output and the softmax statistics)
# spares the backward pass a second forward kernel per layer.
_ATTENTION_FORWARD = frozenset({"dot_product_attention_fwd", "dot_product_attention_fwd_wrapper"})
# checkpoint_name of RMSNorm's output (layers.RMSNorm), the input of every projection.
NORM_OUTPUT = "norm_output"


def _dots_and_attention(prim, *avals, **params) -> bool:
  return (prim.name in _ATTENTION_FORWARD
          or jax.checkpoint_policies.dots_saveable(prim, *avals, **params))


# name -> jax.checkpoint policy (None: save only the layer's inputs).
POLICIES: dict[str, Callable[..., bool] | None] = {
    "full": None,
    "dots": jax.checkpoint_policies.dots_saveable,
    "minimal": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    # dots, and the fused attention forward's outputs: no attention kernel runs twice.
    "dots_attention": _dots_and_attention,
    # ... and the normalised inputs of the projections: no norm is recomputed either.
    "dots_attention_norms": jax.checkpoint_policies.save_from_both_policies(
        _dots_and_attention, jax.checkpoint_policies.save_only_these_names(NORM_OUTPUT)),
}
NO_REMAT = ("auto", "none")


def remat_layer(layer_cls: type[nn.Module], policy_name: str, *,
                prevent_cse: bool = True) -> type[nn.Module]:
  """`layer_cls` rematerialised per `policy_name`, or unchanged for "none" / "auto".

  The layer's flags (dropout, decoding) are module attributes, so every call
  argument may be traced. Under `nn.scan`, pass prevent_cse=False: the scan's loop
  already keeps the recomputation apart from the forward pass (not when the scan is
  unrolled whole, which leaves no loop).
  """
  if policy_name in NO_REMAT:
    return layer_cls
  if policy_name not in POLICIES:
    raise ValueError(f"remat policy must be one of {NO_REMAT + tuple(POLICIES)}, "
                     f"got {policy_name!r}")
  return nn.remat(layer_cls, policy=POLICIES[policy_name], prevent_cse=prevent_cse)
