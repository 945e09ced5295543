"""The cross-task run configs follow the paper's Appendix B, with steps from the episode size."""

import gin
import pytest

import runtime_subprocess as rs
from crosstask.runtime.config import gin_utils
from crosstask.tasks.csl import scenarios


@pytest.fixture
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _evaluate(macro):
  """What gin passes for `macro` when the run starts (its reference, called)."""
  return gin.query_parameter(f"%{macro}").scoped_configurable_fn()


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
  assert _evaluate("TRAIN_SPLIT") == train_split
  assert _evaluate("EVAL_SPLIT") == train_split.split("_")[0] + "_validation"
  partition = bindings[0].split("'")[1]
  assert _evaluate("MIXTURE_OR_TASK_NAME") == scenarios.mixture_name(partition, stage)
  # Steps are counted from the episode by the runtime when the run starts.
  per_epoch = -(-scenarios.split_size(partition, stage, train_split) // batch)
  assert _evaluate("EVAL_PERIOD") == per_epoch
  assert _evaluate("TRAIN_STEPS") == 15 * per_epoch
  assert _evaluate("WARMUP_STEPS") == round(1.5 * per_epoch)
