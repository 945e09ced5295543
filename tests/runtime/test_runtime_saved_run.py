"""`--run_dir`: eval and infer start from a trained run's saved config."""

import gin
import pytest

import runtime_subprocess as rs
from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import saved_run

TRAINED = ["MIXTURE_OR_TASK_NAME='runtime_copy_reverse'",
           "MIXTURE_OR_TASK_MODULE='runtime_helpers'", "TASK_FEATURE_LENGTHS={'inputs': 24, 'targets': 12}", 'TRAIN_STEPS=3',
           'NUM_EMBEDDINGS=272', 'DROPOUT_RATE=0.2']


@pytest.fixture
def run_dir(tmp_path):
  """A folder holding what a training run saves at its start: config.gin."""
  gin.clear_config()
  gin_utils.parse([rs.TINY, 'runs/finetune.gin'], [f"MODEL_DIR='{tmp_path}'", *TRAINED])
  gin_utils.summarize_gin_config(str(tmp_path))
  gin.clear_config()
  yield tmp_path
  gin.clear_config()


def test_infer_takes_model_task_and_lengths_from_the_run(run_dir):
  files, bindings = saved_run.INFER.arguments(str(run_dir), [], ["INFER_SPLIT='train'"])
  gin_utils.parse(files, bindings)
  assert gin_utils.query('utils.DatasetConfig.mixture_or_task_name') == 'runtime_copy_reverse'
  assert gin_utils.query('utils.DatasetConfig.module') == 'runtime_helpers'
  assert gin_utils.query('utils.DatasetConfig.task_feature_lengths') == {'inputs': 24,
                                                                         'targets': 12}
  assert gin_utils.query('utils.DatasetConfig.split') == 'train'  # The command line's change.
  assert gin_utils.query('utils.RestoreCheckpointConfig.path') == str(run_dir)
  assert gin_utils.query('infer_script.infer.output_dir') == str(run_dir / 'infer')
  model = gin_utils.query('infer_script.infer.model')
  assert model.module.config.vocab_size == 272  # The trained model, not the file's default.
  assert gin_utils.query('%DROPOUT_RATE') == 0.0  # Inference settings are infer.gin's.


def test_a_folder_without_a_saved_config_is_named(tmp_path):
  with pytest.raises(gin_utils.GinConfigError, match=r'--run_dir=.*config\.gin, '
                                                     r'operative_config\.gin'):
    saved_run.EVAL.arguments(str(tmp_path), [], [])
