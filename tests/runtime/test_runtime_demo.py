"""The demo's training step trains on the bundled CSL sample and reports the task's real metrics."""

import gin
import pytest

from crosstask import demo
from crosstask.runtime.config import gin_utils


def test_demo_config_parses():
  gin.clear_config()
  try:
    gin_utils.parse([demo.DEMO_GIN], ["MODEL_DIR='/tmp/x'"])
    assert gin.query_parameter('%TRAIN_STEPS') == 300
    assert str(gin.query_parameter('train_script.train.total_steps')) == '%TRAIN_STEPS'
    config = gin.query_parameter('crosstask.models.network.Transformer.config')
    config = config.scoped_configurable_fn()  # The demo's own size, over tiny.gin's.
    assert (config.d_model, config.num_encoder_layers, config.dtype) == (64, 2, 'float32')
  finally:
    gin.clear_config()


@pytest.mark.slow(seconds=25)
def test_train_and_evaluate_smoke(tmp_path):
  out = demo.train_and_evaluate(
      str(tmp_path / 'demo'), steps=3,
      bindings=['BATCH_SIZE=8', "TASK_FEATURE_LENGTHS={'inputs': 64, 'targets': 32}",
                'EVAL_STEPS=1'])
  assert out['step'] == 3 and out['train_metrics']['loss'] > 0
  metrics = out['eval_metrics']['csl_zh_abstract_to_title']
  assert {'rougeL', 'bleu'} <= set(metrics)
  assert (tmp_path / 'demo' / 'checkpoint_3').is_dir()
