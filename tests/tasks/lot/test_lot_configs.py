"""The LOT / LongLM run configs parse and set the paper's settings."""

import gin
import pytest

from crosstask.runtime.config import gin_utils

REQUIRED = ["VOCABULARY_PATH='/x/sentencepiece_cn.model'", "MODEL_DIR='/tmp/m'", "TRAIN_STEPS=1"]


@pytest.fixture(autouse=True)
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.mark.parametrize("name,task,lengths,decoder", [
    ("outgen", "lot_zh_outgen", {"inputs": 128, "targets": 512}, {"temperature": 0.7, "topk": 40}),
    ("plotcom", "lot_zh_plotcom", {"inputs": 512, "targets": 64}, {"temperature": 0.7, "topk": 40}),
    ("nlpcc", "lot_zh_outgen_notitle", {"inputs": 128, "targets": 512},
     {"temperature": 0.7, "topk": 40}),
    ("clozet", "lot_zh_clozet", {"inputs": 512, "targets": 64}, {"temperature": 0.0}),
    ("senpos", "lot_zh_senpos", {"inputs": 512, "targets": 8}, {"temperature": 0.0}),
])
def test_finetune_configs(name, task, lengths, decoder):
  gin_utils.parse(["longlm/small.gin", f"lot/finetune_{name}.gin"], REQUIRED)
  assert gin.query_parameter("%MIXTURE_OR_TASK_NAME") == task
  assert gin.query_parameter("%TASK_FEATURE_LENGTHS") == lengths
  assert gin.query_parameter("%LEARNING_RATE") == 3e-5
  assert gin.query_parameter("%BATCH_SIZE") == (16 if name == "nlpcc" else 12)
  assert gin.query_parameter("%NUM_EMBEDDINGS") == 32640
  assert gin.query_parameter("%MIXTURE_OR_TASK_MODULE") == "crosstask.tasks.lot"
  params = gin.query_parameter(
      "crosstask.models.model.EncoderDecoderModel.default_decoder_params")
  assert params == decoder


def test_longlm_pretrain_config():
  gin_utils.parse(["longlm/small.gin", "lot/_longlm_vocab.gin", "runs/pretrain_longlm.gin"],
                  REQUIRED)
  assert gin.query_parameter("%MIXTURE_OR_TASK_NAME") == "longlm_pretrain_demo"
  assert gin.query_parameter("%TASK_FEATURE_LENGTHS") == {"inputs": 512, "targets": 512}
  assert gin.query_parameter("%LEARNING_RATE") == 1e-4
  assert gin.query_parameter("optimizers.adamw.weight_decay") == 0.0
  assert gin.query_parameter("%BATCH_SIZE") == 1000
