"""`python -m crosstask.train --gin_file=... --gin.MODEL_DIR="'...'"`: T5X's train entry."""

import functools

from crosstask import report_guard
from crosstask.runtime.config import gin_utils
from crosstask.runtime.jobs import train_lib


def main() -> None:
  # The leakage guard sees what the run trained on before any reported split is read.
  gin_utils.run_main(functools.partial(train_lib.train, report_guard=report_guard.check),
                     what='train_script.train', job='train')


if __name__ == '__main__':
  main()
