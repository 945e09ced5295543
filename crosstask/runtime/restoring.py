"""What the eval and infer jobs share: checkpoint selection and parameter templates.

Kept apart so that sibling jobs import this module rather than each other.
"""

import os

from crosstask.runtime import checkpoints, data, optimizers
from crosstask.runtime import trainer as trainer_lib


def params_template(model, partitioner, cfg: data.DatasetConfig):
  """A Trainer whose abstract parameters give shapes and shardings to restore into."""
  tx, schedule = optimizers.create_optimizer(optimizers.adamw, 0.0)
  return trainer_lib.Trainer(model, partitioner, tx, schedule, data.model_input_shapes(cfg))


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
