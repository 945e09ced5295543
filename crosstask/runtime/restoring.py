"""What the eval, infer and embedding jobs share: checkpoint selection, parameter templates.

Kept apart so that sibling jobs import this module rather than each other.
"""

import dataclasses
import os
import pathlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import flax.linen as nn
import gin
import jax

from crosstask.runtime import checkpoints, data, inference, partitioning, platform


# (names the run trains on or its checkpoint was trained on, reported task, split) ->
# raises when the report would score data the training saw; the task layer's
# `leakage.check_run`, handed over by the entry points (runtime imports no tasks).
ReportGuard = Callable[[Sequence[str], str, str], None]

_MIXTURE_LINE = re.compile(r"^MIXTURE_OR_TASK_NAME\s*=\s*['\"]([^'\"]+)['\"]", re.M)


def trained_on(checkpoint_path: str | os.PathLike | None) -> list[str]:
  """The MIXTURE_OR_TASK_NAME a checkpoint was trained on (its run's operative_config.gin),
  as a list: empty when the path is None or no config names one."""
  if checkpoint_path is None:
    return []
  path = pathlib.Path(os.fspath(checkpoint_path))
  for folder in (path, path.parent):
    config = folder / 'operative_config.gin'
    if config.is_file():
      match = _MIXTURE_LINE.search(config.read_text(encoding='utf-8', errors='replace'))
      return [match.group(1)] if match else []
  return []


@dataclasses.dataclass(frozen=True)
class CheckpointJob:
  """The parameters T5X's eval and infer scripts share, resolved for this platform.

  `model` has its 'auto' attention and remat chosen for `partitioner`'s mesh, and
  `dataset_cfg` is checked against the model's vocabulary. `prompt_with_targets`
  (T5X's name) forces each example's targets as its decoder prompt: for tasks whose
  targets are a prompt only (CiteSum's "This paper" on SciTLDR). `num_decodes` is
  the beam size when the model decodes with beam search.
  """
  model: Any
  dataset_cfg: data.DatasetConfig
  restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig
  partitioner: partitioning.Partitioner
  output_dir: str
  num_examples: int | None
  prompt_with_targets: bool
  num_decodes: int

  def inference_runner(self) -> tuple[Any, inference.Inference]:
    """(abstract parameters to restore into, the runner), as `inference_runner` gives."""
    return inference_runner(self.model, self.partitioner, self.dataset_cfg,
                            prompt_with_targets=self.prompt_with_targets,
                            num_decodes=self.num_decodes)


def checkpoint_job(run: Callable[[CheckpointJob], Any]) -> Callable[..., Any]:
  """`run(job)` as a job with T5X's keyword parameters, to make gin-configurable.

  The parameters are `CheckpointJob`'s fields (`partitioner` None: the default
  Partitioner); the returned function keeps `run`'s name and docstring. An entry
  point passes `report_guard`: it sees what the checkpoint was trained on and the
  task and split reported before anything is read.
  """
  def job(*,
          model: Any = gin.REQUIRED,
          dataset_cfg: data.DatasetConfig = gin.REQUIRED,
          restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig = gin.REQUIRED,
          partitioner: partitioning.Partitioner | None = None,
          output_dir: str = gin.REQUIRED,
          num_examples: int | None = None,
          prompt_with_targets: bool = False,
          num_decodes: int = 1,
          report_guard: ReportGuard | None = None):
    partitioner = partitioner or partitioning.Partitioner()
    model = platform.resolve_model(model, platform.for_mesh(partitioner.mesh))
    dataset_cfg = data.check_run_vocabulary(model, dataset_cfg)  # Registers its tasks.
    if report_guard is not None:
      report_guard(trained_on(restore_checkpoint_cfg.path), dataset_cfg.mixture_or_task_name,
                   dataset_cfg.split)
    return run(CheckpointJob(
        model=model, dataset_cfg=dataset_cfg,
        restore_checkpoint_cfg=restore_checkpoint_cfg, partitioner=partitioner,
        output_dir=output_dir, num_examples=num_examples,
        prompt_with_targets=prompt_with_targets, num_decodes=num_decodes))

  # Not functools.wraps: gin reads the parameters of `job`, not of `run`.
  for attr in ('__module__', '__name__', '__qualname__', '__doc__'):
    setattr(job, attr, getattr(run, attr))
  return job


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
