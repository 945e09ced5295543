"""`evaluate(...)`: SeqIO metrics for one checkpoint or each in a directory."""

import os
from typing import Any

import gin

from crosstask.runtime import checkpoints, data, evaluation, gin_utils, inference
from crosstask.runtime import partitioning
from crosstask.runtime import progress
from crosstask.runtime import trainer as trainer_lib
from crosstask.runtime import optimizers


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


@gin.configurable(module='eval_script')
def evaluate(*,
             model: Any = gin.REQUIRED,
             dataset_cfg: data.DatasetConfig = gin.REQUIRED,
             restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig = gin.REQUIRED,
             partitioner: partitioning.Partitioner | None = None,
             output_dir: str = gin.REQUIRED,
             num_examples: int | None = None) -> dict[int, dict]:
  """Evaluates each selected checkpoint on `dataset_cfg`; returns {step: {task: metrics}}."""
  partitioner = partitioner or partitioning.Partitioner()
  data.check_run_vocabulary(model, dataset_cfg)
  template = params_template(model, partitioner, dataset_cfg)
  evaluator = evaluation.Evaluator(dataset_cfg, output_dir, progress.writer(output_dir),
                                   num_examples=num_examples)
  gin_utils.summarize_gin_config(output_dir)
  gin_utils.write_operative_config(output_dir)
  if not evaluator.has_tasks:
    raise ValueError(f"'{dataset_cfg.mixture_or_task_name}' has no task with metrics to "
                     f"evaluate on split '{dataset_cfg.split}'.")
  runner = inference.Inference(model, partitioner, template.param_shardings,
                               dataset_cfg.batch_size)
  results = {}
  for step, state_dir in checkpoint_dirs(restore_checkpoint_cfg):
    params = checkpoints.load_params(state_dir, template.abstract_params())
    results[step] = evaluator.evaluate(runner, params, step)
    print(f'{state_dir}: {results[step]}', flush=True)
  return results
