"""The cross-task run configs follow the paper's Appendix B, with steps from the episode size."""

import gin
import pytest

import runtime_subprocess as rs
from crosstask.runtime import gin_utils
from crosstask.tasks.csl import scenarios


@pytest.fixture
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _scoped(scope, fn):
  with gin.config_scope(scope):
    return fn()


@pytest.mark.parametrize("gin_file, bindings, stage, batch, train_split", [
    ("csl/xtask_meta.gin", ["PARTITION='2-1'"], "meta", 32, "s0_meta"),
    ("csl/xtask_fewshot.gin", ["PARTITION='1-3'", "SHOTS=4", "EPISODE_SEED=2",
                               "INITIAL_CHECKPOINT_PATH='/tmp/meta'"], "few", 1, "s2_k4"),
])
def test_xtask_configs_follow_appendix_b(clean_gin, official_data, gin_file, bindings, stage,
                                         batch, train_split):
  del official_data
  gin_utils.parse([rs.TINY, gin_file], ["MODEL_DIR='/tmp/x'", *bindings])
  assert gin.query_parameter("%BATCH_SIZE") == batch
  assert gin.query_parameter("%LEARNING_RATE") == 3e-4
  assert gin.query_parameter("%TASK_FEATURE_LENGTHS") == {"inputs": 256, "targets": 256}
  assert gin.query_parameter("%EPOCHS") == 15
  assert gin.query_parameter("%MIXTURE_OR_TASK_MODULE") == "crosstask.tasks.csl"
  assert gin.query_parameter("%CHECKPOINTS_TO_KEEP") is None  # every epoch kept
  assert _scoped("train_split", scenarios.episode_split) == train_split
  assert _scoped("eval_split", scenarios.episode_split) == train_split.split("_")[0] + "_validation"
  partition = bindings[0].split("'")[1]
  per_epoch = -(-scenarios.split_size(partition, stage, train_split) // batch)
  assert _scoped("one_epoch", scenarios.epoch_steps) == per_epoch
  assert _scoped("train_steps", scenarios.epoch_steps) == 15 * per_epoch
  assert _scoped("warmup", scenarios.epoch_steps) == round(1.5 * per_epoch)
  assert scenarios.xtask_mixture() == scenarios.mixture_name(partition, stage)
