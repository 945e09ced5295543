"""`python -m crosstask.export --run_dir=DIR`: a checkpoint as a Hugging Face folder.

From a trained run, its saved config gives the model and vocabulary, the newest
checkpoint is written to DIR/hf (`--gin.EXPORT_DIR` elsewhere, `--gin.CHECKPOINT_PATH`
another step). transformers reads the folder (`T5ForConditionalGeneration`,
`T5Tokenizer`), and crosstask runs take it back as a checkpoint.
"""

from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import saved_run
from crosstask.runtime.jobs import export_lib


def main() -> None:
  gin_utils.run_main(export_lib.export, what='export_script.export', job='infer',
                     saved_run_job=saved_run.EXPORT)


if __name__ == '__main__':
  main()
