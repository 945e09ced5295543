"""The SciRepEval run configs parse with a model file, and name what they run."""

import gin
import pytest

import runtime_subprocess as rs
from crosstask import embed, relevance  # noqa: F401  configurables
from crosstask.runtime.config import gin_utils  # noqa: F401


@pytest.fixture
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.mark.parametrize("gin_file,bindings,query,want", [
    ("scirepeval/embed.gin", ["CHECKPOINT_PATH='/c'", "META_FILE='m.jsonl'",
                              "EMBEDDINGS_FILE='e.jsonl'", "TASK='fos'"],
     "POOLING", "mean"),
    ("scirepeval/relevance.gin", ["CHECKPOINT_PATH='/c'", "META_FILE='m.jsonl'", "TASK='search'",
                                  "RELEVANCE_OUTPUT_DIR='/o'"],
     "MAX_LENGTH", 512),
    ("scirepeval/finetune_in_train.gin", ["MODEL_DIR='/tmp/x'"],
     "MIXTURE_OR_TASK_NAME", "scirepeval_in_train"),
])
def test_configs_parse(clean_gin, gin_file, bindings, query, want):
  gin_utils.parse([rs.TINY, gin_file], bindings)
  assert gin.query_parameter(f"{query}/macro.value") == want


def test_sample_tiny_config_parses(clean_gin):
  gin_utils.parse(["scirepeval/sample_tiny.gin"], ["MODEL_DIR='/tmp/x'"])
  assert gin.query_parameter("MIXTURE_OR_TASK_NAME/macro.value") == "scirepeval_sample"
  assert gin.query_parameter("TRAIN_SPLIT/macro.value") == "sample"
