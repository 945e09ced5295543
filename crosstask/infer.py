"""`python -m crosstask.infer --gin_file=runs/infer.gin ...`: predictions to JSON lines.

On a trained run, its saved config gives model, vocabulary, task and lengths:
`python -m crosstask.infer --run_dir=/tmp/demo` (predictions to /tmp/demo/infer).
"""

from crosstask.runtime import gin_utils, infer_lib, saved_run


def main() -> None:
  gin_utils.run_main(infer_lib.infer, what='infer_script.infer', job='infer',
                     saved_run_job=saved_run.INFER)


if __name__ == '__main__':
  main()
