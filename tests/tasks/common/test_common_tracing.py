"""Pipelines traced without AutoGraph: the runtime's datasets skip its rewriting, and a
user's preprocessor that branches on a tensor still builds, through AutoGraph, into
the examples SeqIO gives."""

import numpy as np
import seqio
import tensorflow as tf
from tensorflow.python.autograph.core import ag_ctx

from crosstask.runtime.data import pipeline
from crosstask import tracing

VOCAB = seqio.ByteVocabulary()
FEATURES = {"inputs": seqio.Feature(VOCAB), "targets": seqio.Feature(VOCAB)}
TRACED_UNDER = []  # the AutoGraph status each traced preprocessor saw


def _source(split, shuffle_files, seed=None):
  del split, shuffle_files, seed
  return tf.data.Dataset.from_tensor_slices({"inputs": ["ab", "abcdef", "x"],
                                             "targets": ["1", "22", "333"]})


@seqio.map_over_dataset
def _records_status(ex):
  TRACED_UNDER.append(ag_ctx.control_status_ctx().status)
  return ex


@seqio.map_over_dataset
def _long_inputs_doubled(ex):
  # Python `if` on a tensor: traceable only once AutoGraph rewrites it into tf.cond.
  if tf.strings.length(ex["inputs"]) > 2:
    ex = dict(ex, inputs=tf.strings.join([ex["inputs"], ex["inputs"]]))
  return ex


def _register(name, preprocessor):
  if name not in seqio.TaskRegistry.names():
    seqio.TaskRegistry.add(
        name, source=seqio.FunctionDataSource(_source, splits=("train",)),
        preprocessors=[preprocessor, seqio.preprocessors.tokenize],
        output_features=FEATURES)


def _rows(ds):
  return [{k: np.asarray(v).tolist() for k, v in ex.items()} for ex in ds.as_numpy_iterator()]


def test_the_runtime_pipeline_traces_preprocessors_without_autograph():
  _register("tracing_status", _records_status)
  cfg = pipeline.DatasetConfig("tracing_status", {"inputs": 8, "targets": 4}, "train",
                               batch_size=3, shuffle=False, seed=0)
  TRACED_UNDER.clear()
  plain = _rows(pipeline.get_dataset(cfg, num_epochs=1))
  assert TRACED_UNDER == [ag_ctx.Status.DISABLED]
  # What tf.data does left to itself (AutoGraph converts it): the same batch.
  TRACED_UNDER.clear()
  with_autograph = _rows(seqio.get_dataset(
      "tracing_status", task_feature_lengths={"inputs": 8, "targets": 4}, dataset_split="train",
      shuffle=False, num_epochs=1, feature_converter=pipeline.feature_converter(False)).batch(3))
  assert len(TRACED_UNDER) == 1 and TRACED_UNDER[0] != ag_ctx.Status.DISABLED
  assert plain == with_autograph


def test_a_preprocessor_that_needs_autograph_builds_with_it():
  _register("tracing_needs_autograph", _long_inputs_doubled)
  task = seqio.get_mixture_or_task("tracing_needs_autograph")
  built = _rows(tracing.without_autograph(task.get_dataset, None, split="train", shuffle=False))
  assert built == _rows(task.get_dataset(None, split="train", shuffle=False))
  assert [VOCAB.decode(r["inputs"]) for r in built] == ["ab", "abcdefabcdef", "x"]
