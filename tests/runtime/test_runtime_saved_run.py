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


def test_macros_read_as_gin_writes_them(tmp_path):
  """Long values on indented lines after a backslash, references to other macros, and
  configurable references, each as gin text on one line; no gin parse."""
  text = ("from crosstask.models import model\n\n# Macros:\n"
          "LENGTHS = \\\n    {'inputs': 512,\n     'targets': 128}\n"
          "MIXTURE_OR_TASK_NAME = %TASK\nMODEL = @model.EncoderDecoderModel()\n"
          "SELF = %SELF\nTASK = 'csl_zh_title_to_category'\n\n"
          "# Parameters for x:\nx.y = %TASK\n")
  assert saved_run.macros(text) == {
      'LENGTHS': "{'inputs': 512, 'targets': 128}",
      'MIXTURE_OR_TASK_NAME': "'csl_zh_title_to_category'",
      'MODEL': '@model.EncoderDecoderModel()', 'SELF': '%SELF',
      'TASK': "'csl_zh_title_to_category'"}
  assert [saved_run.plain(v) for v in ("'a b'", '8', 'None')] == ['a b', '8', 'None']
  (tmp_path / 'config.gin').write_text(text)
  assert saved_run.carried_bindings(str(tmp_path / 'config.gin')) == [
      "MIXTURE_OR_TASK_NAME = 'csl_zh_title_to_category'", 'MIXTURE_OR_TASK_MODULE = None',
      'TASK_FEATURE_LENGTHS = None']


def test_trained_on_reads_the_config_saved_beside_the_checkpoint(tmp_path):
  (tmp_path / 'checkpoint_8').mkdir()
  assert saved_run.trained_on(None) == saved_run.trained_on(tmp_path / 'checkpoint_8') == []
  (tmp_path / 'operative_config.gin').write_text("MIXTURE_OR_TASK_NAME = 'used'\n")
  assert saved_run.trained_on(tmp_path / 'checkpoint_8') == ['used']
  (tmp_path / 'config.gin').write_text("MIXTURE_OR_TASK_NAME = 'given'\n")  # first
  assert saved_run.trained_on(tmp_path / 'checkpoint_8') == ['given']
  (tmp_path / 'checkpoint_8' / 'config.gin').write_text('RANDOM_SEED = 0\n')
  assert saved_run.trained_on(tmp_path / 'checkpoint_8') == []


def test_train_resumes_a_run_from_its_saved_config_changing_only_what_is_given(run_dir,
                                                                              tmp_path_factory):
  # Resuming for more steps had taken every flag the run started with, again.
  moved = tmp_path_factory.mktemp('moved')  # a run copied elsewhere trains there
  (moved / 'config.gin').write_text((run_dir / 'config.gin').read_text())
  files, bindings = saved_run.TRAIN.arguments(str(moved), [], ['TRAIN_STEPS=9'])
  gin_utils.parse(files, bindings)
  assert gin_utils.query('%MODEL_DIR') == str(moved)
  assert gin_utils.query('%TRAIN_STEPS') == 9  # the command line's change
  assert gin_utils.query('train/utils.DatasetConfig.mixture_or_task_name') == (
      'runtime_copy_reverse')
  assert gin_utils.query('%DROPOUT_RATE') == 0.2  # the run's, not a run file's
  model = gin_utils.query('train_script.train.model')
  assert model.module.config.vocab_size == 272
  assert 'training run (its MODEL_DIR) to resume' in saved_run.TRAIN.usage
