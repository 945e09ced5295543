"""`python -m crosstask.eval --gin_file=runs/eval.gin ...`: metrics for checkpoints."""

from crosstask.runtime import eval_lib, gin_utils


def main() -> None:
  gin_utils.run_main(eval_lib.evaluate, what='eval_script.evaluate',
                     job='infer')


if __name__ == '__main__':
  main()
