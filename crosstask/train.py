"""`python -m crosstask.train --gin_file=... --gin.MODEL_DIR="'...'"`: T5X's train entry."""

from crosstask.runtime import gin_utils, train_lib


def main() -> None:
  gin_utils.run_main(train_lib.train, what='train_script.train', job='train')


if __name__ == '__main__':
  main()
