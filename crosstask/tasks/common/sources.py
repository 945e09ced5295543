"""Records -> a SeqIO source whose datasets support iterator checkpointing.

A split's records are read when its dataset is built (so registration reads
nothing, and a missing file fails right there with the files named, not inside
tf.data), laid out in Python, and handed to `tf.data.Dataset.from_tensor_slices`.
Why not `from_generator`: a generator-backed dataset cannot be saved with
`tf.train.Checkpoint(iterator=...)`, which the trainer uses to store the input
position with each model checkpoint.

Imports where TensorFlow and SeqIO are absent (the GPU image): a task's plain form
(`plain.arrow`) holds the same dataset function, which its fingerprint describes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

try:
  import tensorflow as tf
except ImportError:  # Only `dataset_fn` reads it, and only SeqIO calls that.
  tf = None

if TYPE_CHECKING:
  import seqio


def _examples(records: Iterable[dict], to_example, keys: Sequence[str], split: str) -> dict:
  columns = {k: [] for k in keys}
  for i, record in enumerate(records):
    ex = to_example(record)
    missing = [k for k in keys if k not in ex]
    if missing:
      raise ValueError(f"split {split!r}, record {i}: to_example gave no {missing} "
                       f"(it gave {sorted(ex)})")
    for k in keys:
      value = ex[k]
      if not isinstance(value, str):
        raise TypeError(f"split {split!r}, record {i}: feature {k!r} is "
                        f"{type(value).__name__}, expected str")
      columns[k].append(value)
  return columns


def records_source(read_split: Callable[[str], Iterable[dict]], splits: Sequence[str], *,
                   to_example: Callable[[dict], dict[str, str]],
                   extra_features: Sequence[str] = (),
                   make_source: Callable[..., Any] | None = None) -> seqio.FunctionDataSource:
  """A FunctionDataSource of {"inputs", "targets", *extra_features} string scalars.

  `read_split(split)` returns the split's records; `to_example(record)` their
  text. Extra features (e.g. joined references, an id) travel with the example
  so postprocessors (`example=`) and metrics can see them. `make_source(dataset_fn,
  splits=...)` builds the source instead of seqio.FunctionDataSource (`plain.Source`).
  """
  keys = ("inputs", "targets", *extra_features)

  def dataset_fn(split: str, shuffle_files: bool = False, seed=None) -> tf.data.Dataset:
    del shuffle_files, seed  # one in-memory "file" per split; task shuffling is seeded
    columns = _examples(read_split(split), to_example, keys, split)
    return tf.data.Dataset.from_tensor_slices(
        {k: tf.constant(v, dtype=tf.string, shape=[len(v)]) for k, v in columns.items()})

  if make_source is None:
    import seqio  # pylint: disable=g-import-not-at-top,redefined-outer-name
    make_source = seqio.FunctionDataSource
  return make_source(dataset_fn, splits=list(splits))
