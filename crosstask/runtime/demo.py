"""The demo hook: train the tiny CSL config for a few hundred steps, then evaluate it.

`train_and_evaluate` parses `csl/demo_tiny.gin` (plus any bindings), runs the same
`train_script.train` the command line runs, and returns what a demo prints.
"""

import json
import os
import sys
from typing import Sequence

import gin

from crosstask import paths
from crosstask.runtime import gin_utils, train_lib

DEMO_GIN = 'csl/demo_tiny.gin'


def train_and_evaluate(model_dir: str, *, steps: int = 300,
                       task: str = 'csl_zh_abstract_to_title',
                       bindings: Sequence[str] = (), gin_file: str = DEMO_GIN,
                       data_dir: str | os.PathLike = paths.SAMPLE_DIR) -> dict:
  """Trains `steps` steps into `model_dir`; returns losses, metrics and paths.

  A second call on the same directory resumes (or returns at once when done).
  The validation split is decoded at the last step and scored with the task's
  metric functions; these land in `<model_dir>/inference_eval/metrics.jsonl`.
  Data come from `data_dir` (the bundled sample unless told otherwise).
  """
  with paths.use_data_dir(data_dir):
    return _train_and_evaluate(model_dir, steps, task, bindings, gin_file)


def _train_and_evaluate(model_dir, steps, task, bindings, gin_file) -> dict:
  gin.clear_config()
  gin_utils.parse([gin_file], [f'MODEL_DIR={str(model_dir)!r}', f'TRAIN_STEPS={int(steps)}',
                               f'EVAL_PERIOD={int(steps)}', f'MIXTURE_OR_TASK_NAME={task!r}',
                               *bindings])
  step, train_metrics = train_lib.train()
  metrics_file = os.path.join(model_dir, 'inference_eval', 'metrics.jsonl')
  evals = {}
  if os.path.exists(metrics_file):
    for line in open(metrics_file):
      row = json.loads(line)
      if row['step'] == step:
        evals[row['task']] = row['metrics']
  gin.clear_config()
  return {'model_dir': str(model_dir), 'step': step, 'train_metrics': train_metrics,
          'eval_metrics': evals, 'metrics_file': metrics_file,
          'tensorboard_dir': str(model_dir)}


if __name__ == '__main__':
  out = sys.argv[1] if len(sys.argv) > 1 else '/tmp/crosstask_demo'
  print(json.dumps(train_and_evaluate(out), indent=1, ensure_ascii=False))
