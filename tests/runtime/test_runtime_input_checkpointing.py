"""Every benchmark's task pipelines can save their position (the trainer relies on it).

The shared task layer builds sources with from_tensor_slices and TF-op
preprocessors; a `from_generator` or `py_function` slipped into a benchmark would
make restarts re-read every consumed batch, so it fails here, naming the task.
"""

import importlib
import os
import tempfile

import numpy as np
import pytest
import seqio
import tensorflow as tf

from crosstask.runtime import data, input_state
from crosstask.tasks import BENCHMARKS


def _registered_by(benchmark: str) -> list[str]:
  before = set(seqio.TaskRegistry.names())
  try:
    importlib.import_module(f'crosstask.tasks.{benchmark}')
  except ModuleNotFoundError as e:
    if e.name == f'crosstask.tasks.{benchmark}':
      pytest.skip(f'crosstask.tasks.{benchmark} is not written yet')
    raise
  names = sorted(set(seqio.TaskRegistry.names()) - before) or sorted(
      n for n in seqio.TaskRegistry.names() if n.startswith(benchmark))
  return names[:2]


@pytest.mark.parametrize('benchmark', BENCHMARKS)
def test_task_pipelines_save_and_restore_their_position(benchmark):
  names = _registered_by(benchmark)
  assert names, f'crosstask.tasks.{benchmark} registered no task'
  checked = []
  for name in names:
    task = seqio.get_mixture_or_task(name)
    split = 'train' if 'train' in task.splits else list(task.splits)[0]
    cfg = data.DatasetConfig(name, {'inputs': 64, 'targets': 32}, split, batch_size=2,
                             shuffle=True, seed=3)
    try:
      iterator = iter(data.get_dataset(cfg))
      next(iterator)
    except FileNotFoundError:  # Only the official data has this split.
      continue
    assert input_state.why_not_checkpointable(iterator) is None, name
    with tempfile.TemporaryDirectory() as tmp:
      prefix = tf.train.Checkpoint(ds=iterator).write(os.path.join(tmp, 'ds'))
      want = data.to_numpy(next(iterator))
      fresh = iter(data.get_dataset(cfg))
      tf.train.Checkpoint(ds=fresh).read(prefix).assert_consumed()
      got = data.to_numpy(next(fresh))
    for k in want:
      np.testing.assert_array_equal(got[k], want[k], err_msg=f'{name} {k}')
    checked.append(name)
  if not checked:
    pytest.skip(f'no data for {names} under the data root')
