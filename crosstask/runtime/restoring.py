"""What the eval, infer and embedding jobs share: checkpoint selection, parameter templates.

Kept apart so that sibling jobs import this module rather than each other.
"""

import os
from collections.abc import Mapping
from typing import Any

import flax.linen as nn
import jax

from crosstask.runtime import checkpoints, data, inference, partitioning


def param_template(model: Any, partitioner: partitioning.Partitioner,
                   input_shapes: Mapping[str, tuple[int, ...]]) -> tuple[Any, Any]:
  """(abstract parameters carrying their shardings, the shardings) to restore into.

  Shapes come from `jax.eval_shape` of the model's initializer and placements
  from the parameters' logical axes, so nothing is allocated or compiled and no
  optimizer is involved: restoring for inference needs the parameters only.
  Parameter shapes do not depend on `input_shapes`; the initializer needs some.
  """
  boxed = jax.eval_shape(lambda rng: model.get_initial_variables(rng, input_shapes)['params'],
                         jax.random.key(0))
  with partitioner.context():
    shardings = partitioner.logical_to_sharding(boxed)
  abstract = jax.tree.map(lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh),
                          nn.unbox(boxed), shardings)
  return abstract, shardings


def inference_runner(model: Any, partitioner: partitioning.Partitioner,
                     cfg: data.DatasetConfig, *, prompt_with_targets: bool = False,
                     num_decodes: int = 1) -> tuple[Any, inference.Inference]:
  """(abstract parameters to restore into, the runner that decodes and scores with them)."""
  abstract, shardings = param_template(model, partitioner, data.model_input_shapes(cfg))
  return abstract, inference.Inference(model, partitioner, shardings, cfg.batch_size,
                                       prompt_with_targets=prompt_with_targets,
                                       num_decodes=num_decodes)


def checkpoint_dirs(cfg: checkpoints.RestoreCheckpointConfig) -> list[tuple[int, str]]:
  """(step, state dir) pairs selected by `cfg.mode` ('specific', 'latest', 'all')."""
  if cfg.mode not in ('specific', 'latest', 'all'):
    raise ValueError(f"RestoreCheckpointConfig.mode must be 'specific', 'latest' or 'all', "
                     f'got {cfg.mode!r}.')
  path = os.path.abspath(cfg.path)
  steps = checkpoints.steps_in(path)
  if not steps or cfg.mode == 'specific':
    state_dir = checkpoints.resolve_state_dir(path)
    return [(checkpoints.step_of(state_dir), state_dir)]
  if cfg.mode == 'latest':
    steps = steps[-1:]
  return [(s, checkpoints.state_item(path, s)) for s in sorted(steps)]
