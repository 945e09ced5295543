"""`python -m crosstask.train --gin_file=... --gin.MODEL_DIR="'...'"`: T5X's train entry.

`python -m crosstask.train --run_dir=DIR --gin.TRAIN_STEPS=2000` resumes the run in DIR
from its saved config, changed only where the command line says.
"""

import functools

from crosstask import report_guard
from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import saved_run
from crosstask.runtime.jobs import train_lib


def main() -> None:
  # The leakage guard sees what the run trained on before any reported split is read.
  gin_utils.run_main(functools.partial(train_lib.train, report_guard=report_guard.check),
                     what='train_script.train', job='train', saved_run_job=saved_run.TRAIN)


if __name__ == '__main__':
  main()
