"""`python -m crosstask.eval --gin_file=runs/eval.gin ...`: metrics for checkpoints.

On a trained run, its saved config gives model, vocabulary, task and lengths:
`python -m crosstask.eval --run_dir=/tmp/demo` (metrics to /tmp/demo/eval).
"""

import functools

from crosstask import report_guard
from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import saved_run
from crosstask.runtime.jobs import eval_lib


def main() -> None:
  # The leakage guard sees what the run trained on before any reported split is read.
  gin_utils.run_main(
      functools.partial(eval_lib.evaluate, report_guard=report_guard.check),
      what='eval_script.evaluate', job='infer',
      saved_run_job=saved_run.EVAL)


if __name__ == '__main__':
  main()
