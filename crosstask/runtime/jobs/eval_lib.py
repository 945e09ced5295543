"""`evaluate(...)`: SeqIO metrics for one checkpoint or each in a directory."""

import os

import gin

from crosstask.runtime.config import gin_utils
from crosstask.runtime.jobs import restoring
from crosstask.runtime.predict import evaluation
from crosstask.runtime.report import console
from crosstask.runtime.report import progress
from crosstask.runtime.state import checkpoints


@gin.configurable(module='eval_script')
@restoring.checkpoint_job
def evaluate(job: restoring.CheckpointJob) -> dict[int, dict]:
  """Evaluates each selected checkpoint on `dataset_cfg`; returns {step: {task: metrics}}.

  Parameters: `restoring.CheckpointJob`'s (model, dataset_cfg, restore_checkpoint_cfg,
  partitioner, output_dir, num_examples, prompt_with_targets, num_decodes).
  """
  restoring.check_output_dir(job.output_dir, 'EVAL_OUTPUT_DIR')
  selected = restoring.checkpoint_dirs(job.restore_checkpoint_cfg)
  for _, state_dir in selected:  # Before the data is read, and warned about, with the wrong one.
    checkpoints.check_vocabulary(state_dir, job.run.vocabularies)
  evaluator = evaluation.Evaluator(job.dataset_cfg, job.output_dir,
                                   progress.writer(job.output_dir),
                                   num_examples=job.num_examples)
  if not evaluator.has_tasks:
    raise ValueError(f"'{job.dataset_cfg.mixture_or_task_name}' has no task with metrics to "
                     f"evaluate on split '{job.dataset_cfg.split}'.")
  abstract_params, runner = job.inference_runner()
  results = {}
  for step, state_dir in selected:
    params = checkpoints.load_params(state_dir, abstract_params, job.run.vocabularies,
                                     job.run.model_config)
    if not results:  # Once a checkpoint has loaded: a failed start leaves them as they were.
      os.makedirs(job.output_dir, exist_ok=True)
      gin_utils.summarize_gin_config(job.output_dir)
      gin_utils.write_operative_config(job.output_dir)
    results[step] = evaluator.evaluate(runner, params, step)
    console.say(f'{restoring.checkpoint_name(state_dir)}: {console.metrics_line(results[step])}')
  return results
