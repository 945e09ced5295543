"""`python -m crosstask.infer --gin_file=runs/infer.gin ...`: predictions to JSON lines.

On a trained run, its saved config gives model, vocabulary, task and lengths:
`python -m crosstask.infer --run_dir=/tmp/demo` (predictions to /tmp/demo/infer).
"""

import functools

from crosstask import report_guard
from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import saved_run
from crosstask.runtime.jobs import infer_lib


def main() -> None:
  # The leakage guard sees what the run trained on before any reported split is read.
  gin_utils.run_main(
      functools.partial(infer_lib.infer, report_guard=report_guard.check),
      what='infer_script.infer', job='infer',
      saved_run_job=saved_run.INFER)


if __name__ == '__main__':
  main()
