"""`python -m crosstask.train --gin_file=... --gin.MODEL_DIR="'...'"`: T5X's train entry."""

import functools

from crosstask.runtime import gin_utils, train_lib


def main() -> None:
  # The leakage guard sees what the run trained on before any reported split is read.
  # Imported here: the module itself imports without SeqIO or TensorFlow.
  from crosstask.tasks.clue import leakage  # pylint: disable=import-outside-toplevel
  gin_utils.run_main(functools.partial(train_lib.train, report_guard=leakage.check_run),
                     what='train_script.train', job='train')


if __name__ == '__main__':
  main()
