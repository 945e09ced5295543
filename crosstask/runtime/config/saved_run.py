"""`--run_dir=DIR`: eval and infer take a trained run's own configuration.

A training run writes its whole gin configuration to DIR/config.gin: the model,
its vocabulary, the task and its lengths. Eval and infer parse it first, then their
own run file (runs/eval.gin, runs/infer.gin), then the run's task macros again
(the run file marks them required), then whatever the command line gives. So only
what changes is given: `python -m crosstask.infer --run_dir=/tmp/demo`.
"""

import dataclasses
import os
from typing import Sequence

import gin

from crosstask.runtime.config import gin_utils

# What a run file resets but the trained run decided: its task, where the task is
# registered, and the feature lengths it was trained at.
CARRIED_MACROS = ('MIXTURE_OR_TASK_NAME', 'MIXTURE_OR_TASK_MODULE', 'TASK_FEATURE_LENGTHS')
CONFIG_FILES = ('config.gin', 'operative_config.gin')


@dataclasses.dataclass(frozen=True)
class JobFiles:
  """A job's run file and the macro naming its output folder (DIR/<subdir> by default)."""
  run_file: str
  output_macro: str
  output_subdir: str

  def arguments(self, run_dir: str, files: Sequence[str], bindings: Sequence[str]
                ) -> tuple[list[str], list[str]]:
    """(gin files, bindings) of this job on the trained run in `run_dir`, the command
    line's own files and bindings last so that they override."""
    run_dir = os.path.abspath(run_dir)
    config = saved_config(run_dir)
    defaults = [f'CHECKPOINT_PATH = {run_dir!r}',
                f'{self.output_macro} = {os.path.join(run_dir, self.output_subdir)!r}']
    return ([config, self.run_file, *files],
            [*carried_bindings(config), *defaults, *bindings])


EVAL = JobFiles('runs/eval.gin', 'EVAL_OUTPUT_DIR', 'eval')
INFER = JobFiles('runs/infer.gin', 'INFER_OUTPUT_DIR', 'infer')


def saved_config(run_dir: str) -> str:
  """The run's saved configuration file; an error names the files looked for."""
  for name in CONFIG_FILES:
    path = os.path.join(run_dir, name)
    if os.path.isfile(path):
      return path
  raise gin_utils.GinConfigError(
      f'--run_dir={run_dir}: no saved configuration there (looked for '
      f'{", ".join(CONFIG_FILES)}); a training run writes it into its MODEL_DIR.')


def carried_bindings(config_path: str) -> list[str]:
  """`NAME = value` for each carried macro the saved configuration binds."""
  gin.clear_config()
  try:
    gin_utils.parse([config_path], [], lock=False)
    values = {name: gin_utils.query(f'%{name}', None) for name in CARRIED_MACROS}
  finally:
    gin.clear_config()
  return [f'{name} = {value!r}' for name, value in values.items()]
