"""What the eval, infer and embedding jobs share: their job around a Run, checkpoint selection.

Kept apart so that sibling jobs import this module rather than each other.
"""

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

import gin

from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.config import saved_run
from crosstask.runtime.data import pipeline as data
from crosstask.runtime.predict import inference
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints


# (names the run trains on or its checkpoint was trained on, reported task, split) ->
# raises when the report would score data the training saw; the task layer's
# `leakage.check_run`, handed over by the entry points (runtime imports no tasks).
ReportGuard = Callable[[Sequence[str], str, str], None]


@dataclasses.dataclass(frozen=True)
class CheckpointJob:
  """The parameters T5X's eval and infer scripts share, around the resolved Run.

  `prompt_with_targets` (T5X's name) forces each example's targets as its decoder
  prompt: for tasks whose targets are a prompt only (CiteSum's "This paper" on
  SciTLDR). `num_decodes` is the beam size when the model decodes with beam search.
  """
  run: run_lib.Run
  restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig
  output_dir: str
  num_examples: int | None
  prompt_with_targets: bool
  num_decodes: int

  @property
  def dataset_cfg(self) -> data.DatasetConfig:
    """The split the job reads, naming the task for the model's vocabulary."""
    return self.run.dataset('eval')

  def inference_runner(self) -> tuple[Any, inference.Inference]:
    """(abstract parameters to restore into, the runner that decodes and scores with them)."""
    abstract, shardings = self.run.abstract_params()
    return abstract, inference.Inference(self.run.model, self.run.partitioner, shardings,
                                         self.run.batch_size,
                                         prompt_with_targets=self.prompt_with_targets,
                                         num_decodes=self.num_decodes)


def checkpoint_job(job_fn: Callable[[CheckpointJob], Any]) -> Callable[..., Any]:
  """`job_fn(job)` as a job with T5X's keyword parameters, to make gin-configurable.

  The parameters are T5X's (model, dataset_cfg, restore_checkpoint_cfg, partitioner
  (None: the default Partitioner), output_dir, num_examples, prompt_with_targets,
  num_decodes); the returned function keeps `job_fn`'s name and docstring. An entry
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
    if num_examples is not None:  # -3 or 0 had read the whole split
      gin_utils.check_count('NUM_EXAMPLES', num_examples, 1)
    run = run_lib.resolve(model, partitioner, datasets={'eval': dataset_cfg}, pads_batch=True)
    if report_guard is not None:
      reported = run.dataset('eval')
      report_guard(saved_run.trained_on(restore_checkpoint_cfg.path), reported.mixture_or_task_name,
                   reported.split)
    return job_fn(CheckpointJob(
        run=run, restore_checkpoint_cfg=restore_checkpoint_cfg, output_dir=output_dir,
        num_examples=num_examples, prompt_with_targets=prompt_with_targets,
        num_decodes=num_decodes))

  # Not functools.wraps: gin reads the parameters of `job`, not of `job_fn`.
  for attr in ('__module__', '__name__', '__qualname__', '__doc__'):
    setattr(job, attr, getattr(job_fn, attr))
  return job


def checkpoint_dirs(cfg: checkpoints.RestoreCheckpointConfig) -> list[tuple[int, str]]:
  """(step, state dir) pairs selected by `cfg.mode` ('specific', 'latest', 'all').

  A Hugging Face folder (a published T5, mT5 or LongLM) is one checkpoint, of step 0:
  it records none, and the job starts from its weights as they were released.
  """
  if cfg.mode not in ('specific', 'latest', 'all'):
    raise gin_utils.GinConfigError(
        f"RestoreCheckpointConfig.mode (CHECKPOINT_MODE) must be 'specific', 'latest' or "
        f"'all', got {cfg.mode!r}.")
  path = os.path.abspath(cfg.path)
  if os.path.isdir(path) and checkpoints.is_hf_checkpoint(path):
    return [(0, path)]
  steps = checkpoints.steps_in(path)
  if not steps or cfg.mode == 'specific':
    state_dir = checkpoints.resolve_state_dir(path)
    return [(checkpoints.step_of(state_dir), state_dir)]
  if cfg.mode == 'latest':
    steps = steps[-1:]
  return [(s, checkpoints.state_item(path, s)) for s in sorted(steps)]


def check_output_dir(output_dir: str, macro: str) -> None:
  """Refuses an output folder that is a training run's model directory, whose saved
  configuration (config.gin) the job's own would replace."""
  if output_dir and checkpoints.steps_in(output_dir):
    raise gin_utils.GinConfigError(
        f"{macro}='{output_dir}' is a training run's model directory: this job's config.gin "
        "would replace the run's. Give it a folder of its own (--run_dir writes to DIR/eval "
        "or DIR/infer).")


def checkpoint_name(state_dir: str) -> str:
  """The folder a user names for a checkpoint: `.../checkpoint_N`, not its 'state' item."""
  named_state = os.path.basename(state_dir) == checkpoints.STATE_ITEM
  return os.path.dirname(state_dir) if named_state else state_dir


def newest_checkpoint(cfg: checkpoints.RestoreCheckpointConfig) -> tuple[int, str]:
  """(step, state dir) of the one checkpoint a job that reads one (infer, embed, export)
  takes from `cfg`: the newest, where mode 'all' selects several."""
  if cfg.mode == 'all':
    cfg = dataclasses.replace(cfg, mode='latest')
  (step, state_dir), = checkpoint_dirs(cfg)
  return step, state_dir
