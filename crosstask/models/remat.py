"""Remat policies: what a layer keeps for the backward pass and what it recomputes.

Plain `jax.checkpoint` policies applied per layer through `nn.remat`, as T5X and
MaxText do; the compiler schedules the recomputation. "auto" (left for the runtime's
platform profile to replace) is read as "none".
"""

from collections.abc import Callable

import flax.linen as nn
import jax

# name -> jax.checkpoint policy (None: save only the layer's inputs).
POLICIES: dict[str, Callable[..., bool] | None] = {
    "full": None,
    "dots": jax.checkpoint_policies.dots_saveable,
    "minimal": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
}
NO_REMAT = ("auto", "none")


def remat_layer(layer_cls: type[nn.Module], policy_name: str, *,
                prevent_cse: bool = True) -> type[nn.Module]:
  """`layer_cls` rematerialised per `policy_name`, or unchanged for "none" / "auto".

  The layer's flags (dropout, decoding) are module attributes, so every call
  argument may be traced. Under `nn.scan`, pass prevent_cse=False: the scan already
  keeps the recomputation apart from the forward pass.
  """
  if policy_name in NO_REMAT:
    return layer_cls
  if policy_name not in POLICIES:
    raise ValueError(f"remat policy must be one of {NO_REMAT + tuple(POLICIES)}, "
                     f"got {policy_name!r}")
  return nn.remat(layer_cls, policy=POLICIES[policy_name], prevent_cse=prevent_cse)
