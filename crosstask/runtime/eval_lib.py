"""`evaluate(...)`: SeqIO metrics for one checkpoint or each in a directory."""

from typing import Any

import gin

from crosstask.runtime import checkpoints, data, evaluation, gin_utils, partitioning, platform
from crosstask.runtime import progress, restoring


@gin.configurable(module='eval_script')
def evaluate(*,
             model: Any = gin.REQUIRED,
             dataset_cfg: data.DatasetConfig = gin.REQUIRED,
             restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig = gin.REQUIRED,
             partitioner: partitioning.Partitioner | None = None,
             output_dir: str = gin.REQUIRED,
             num_examples: int | None = None,
             prompt_with_targets: bool = False,
             num_decodes: int = 1) -> dict[int, dict]:
  """Evaluates each selected checkpoint on `dataset_cfg`; returns {step: {task: metrics}}.

  `prompt_with_targets` (T5X's name) forces the targets as decoder prompts: for
  tasks whose targets are a prompt only (CiteSum's "This paper" on SciTLDR).
  `num_decodes` is the beam size when the model decodes with beam search.
  """
  partitioner = partitioner or partitioning.Partitioner()
  # The model's 'auto' attention and remat become the platform's choices.
  model = platform.resolve_model(model, platform.for_mesh(partitioner.mesh))
  dataset_cfg = data.check_run_vocabulary(model, dataset_cfg)
  evaluator = evaluation.Evaluator(dataset_cfg, output_dir, progress.writer(output_dir),
                                   num_examples=num_examples)
  gin_utils.summarize_gin_config(output_dir)
  gin_utils.write_operative_config(output_dir)
  if not evaluator.has_tasks:
    raise ValueError(f"'{dataset_cfg.mixture_or_task_name}' has no task with metrics to "
                     f"evaluate on split '{dataset_cfg.split}'.")
  abstract_params, runner = restoring.inference_runner(
      model, partitioner, dataset_cfg, prompt_with_targets=prompt_with_targets,
      num_decodes=num_decodes)
  results = {}
  for step, state_dir in restoring.checkpoint_dirs(restore_checkpoint_cfg):
    params = checkpoints.load_params(state_dir, abstract_params)
    results[step] = evaluator.evaluate(runner, params, step)
    print(f'{state_dir}: {results[step]}', flush=True)
  return results
