"""The input position saved with each checkpoint: tf.data iterator state, per process.

Why: a restart should resume the stream where it stopped instead of re-reading the
N batches a run has consumed (T5X saves `tf.train.Checkpoint(ds=iterator)` beside
each checkpoint). Each process writes its own iterator as an orbax item, inside the
step's temporary directory, so it becomes visible only with the complete checkpoint.

TensorFlow is imported inside functions: the trainer imports without it.
"""

import dataclasses
import os
import tempfile
from typing import Any

import jax
import orbax.checkpoint as ocp

ITEM = 'input'  # The item's directory name inside checkpoint_<step>/.


def _prefix(directory) -> str:
  return os.path.join(str(directory), f'ds-{jax.process_index()}-of-{jax.process_count()}')


class IteratorHandler(ocp.CheckpointHandler):
  """Saves/restores a tf.data iterator with tf.train.Checkpoint (no pickling)."""

  def save(self, directory, args: 'IteratorSave') -> None:
    import tensorflow as tf
    tf.train.Checkpoint(ds=args.iterator).write(_prefix(directory))

  def restore(self, directory, args: 'IteratorRestore') -> Any:
    import tensorflow as tf
    prefix = _prefix(directory)
    if not os.path.exists(prefix + '.index'):
      raise FileNotFoundError(
          f'{directory} holds no input state for process {jax.process_index()} of '
          f'{jax.process_count()} (saved with a different number of processes?).')
    tf.train.Checkpoint(ds=args.iterator).read(prefix).assert_consumed()
    return args.iterator

  def finalize(self, directory) -> None:
    pass

  def close(self) -> None:
    pass


@ocp.args.register_with_handler(IteratorHandler, for_save=True)
@dataclasses.dataclass
class IteratorSave(ocp.args.CheckpointArgs):
  iterator: Any


@ocp.args.register_with_handler(IteratorHandler, for_restore=True)
@dataclasses.dataclass
class IteratorRestore(ocp.args.CheckpointArgs):
  iterator: Any


def why_not_checkpointable(iterator) -> str | None:
  """None when `iterator`'s state can be saved; else TensorFlow's reason.

  Pipelines built on `from_generator` or `py_function` hold Python state that
  tf.data cannot save; such runs fall back to skipping consumed batches.
  """
  import tensorflow as tf
  with tempfile.TemporaryDirectory() as tmp:
    try:
      tf.train.Checkpoint(ds=iterator).write(os.path.join(tmp, 'probe'))
    except (tf.errors.OpError, ValueError, TypeError) as e:
      # TF prefixes '{{function_node ...}}' and suffixes '[Op:...]'; keep the reason.
      text = str(e).strip().splitlines()[0]
      return text.split('}}')[-1].split('[Op:')[0].strip()[:300] or text[:300]
  return None
