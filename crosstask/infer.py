"""`python -m crosstask.infer --gin_file=runs/infer.gin ...`: predictions to JSON lines."""

from crosstask.runtime import gin_utils, infer_lib


def main() -> None:
  gin_utils.run_main(infer_lib.infer, what='infer_script.infer', job='infer')


if __name__ == '__main__':
  main()
