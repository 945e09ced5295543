"""First-fit-decreasing packing: fuller packed rows than SeqIO's next-fit, same features.

SeqIO's `trim_and_pack_dataset` walks a window of examples in stream order and
closes a row as soon as the next example does not fit (next-fit). With CSL
abstracts of about a third of a 512-token row that leaves a quarter of the
input slots as padding (`benchmarks/finetune_csl.py`). Here each window is
packed first-fit-decreasing: examples in order of size, each into the first
row where every feature still fits. Rows come out in the order of their
earliest example, so the stream keeps its order at the row level.

The output has exactly SeqIO's packed features (`<key>`, `<key>_positions`,
`<key>_segment_ids`), so `EncDecFeatureConverter` and the model are unchanged.
Segment ids count the examples of a row (1, 2, ...) across all features
together, so an example's inputs and targets always share a number. Everything
is TensorFlow ops inside `Dataset.map`, so the input position still checkpoints
with `tf.train.Checkpoint(iterator=...)`.
"""

from __future__ import annotations

from collections.abc import Mapping

import seqio
import tensorflow as tf

PACKERS = ("first_fit", "seqio")


def _pack_window(x: Mapping[str, tf.Tensor], feature_lengths: Mapping[str, int]) -> dict:
  """One padded window of examples -> [rows, length] packed features."""
  keys = list(feature_lengths)
  capacity = tf.constant([feature_lengths[k] for k in keys], tf.int32)
  tokens = {k: tf.cast(x[k], tf.int32) for k in keys}
  # Like SeqIO: an example's length is its count of non-zero (non-padding) ids.
  lengths = tf.stack([tf.reduce_sum(tf.cast(tokens[k] != 0, tf.int32), axis=1) for k in keys],
                     axis=1)  # [n, K]
  n = tf.shape(lengths)[0]
  # Decreasing by the share of a row the example takes in its tightest feature.
  share = tf.reduce_max(tf.cast(lengths, tf.float32) / tf.cast(capacity, tf.float32), axis=1)
  order = tf.argsort(share, direction="DESCENDING", stable=True)

  def place(j, remaining, counts, row_of, offset, segment):
    i = order[j]
    need = lengths[i]
    fits = tf.reduce_all(remaining >= need[None, :], axis=1)
    row = tf.argmax(tf.cast(fits, tf.int32), output_type=tf.int32)  # first row that fits
    offset = tf.tensor_scatter_nd_update(offset, [[i]], [capacity - remaining[row]])
    remaining = tf.tensor_scatter_nd_sub(remaining, [[row]], [need])
    counts = tf.tensor_scatter_nd_add(counts, [[row]], [1])
    row_of = tf.tensor_scatter_nd_update(row_of, [[i]], [row])
    segment = tf.tensor_scatter_nd_update(segment, [[i]], [counts[row]])
    return j + 1, remaining, counts, row_of, offset, segment

  # n rows are always enough: an unused row has the full capacity, and every
  # example was trimmed to it.
  _, _, _, row_of, offset, segment = tf.while_loop(
      lambda j, *_: j < n, place,
      (tf.constant(0), tf.tile(capacity[None, :], [n, 1]), tf.zeros([n], tf.int32),
       tf.zeros([n], tf.int32), tf.zeros([n, len(keys)], tf.int32), tf.zeros([n], tf.int32)))
  num_rows = tf.reduce_max(row_of) + 1
  # Rows in the order of their earliest example.
  first = tf.math.unsorted_segment_min(tf.range(n), row_of, num_rows)
  rank = tf.math.invert_permutation(tf.argsort(first, stable=True))
  row_of = tf.gather(rank, row_of)

  packed = {}
  for col, k in enumerate(keys):
    width = tf.shape(tokens[k])[1]
    pos = tf.broadcast_to(tf.range(width)[None, :], [n, width])
    valid = pos < lengths[:, col:col + 1]
    index = tf.stack([tf.boolean_mask(tf.broadcast_to(row_of[:, None], [n, width]), valid),
                      tf.boolean_mask(offset[:, col:col + 1] + pos, valid)], axis=1)
    shape = tf.stack([num_rows, feature_lengths[k]])

    def scatter(values, index=index, valid=valid, shape=shape):
      return tf.scatter_nd(index, tf.boolean_mask(values, valid), shape)

    packed[k] = scatter(tokens[k])
    packed[f"{k}_positions"] = scatter(pos)
    packed[f"{k}_segment_ids"] = scatter(tf.broadcast_to(segment[:, None], [n, width]))
  return packed


def first_fit_pack(ds: tf.data.Dataset, feature_lengths: Mapping[str, int],
                   window: int | None = None) -> tf.data.Dataset:
  """Trims each feature to its length, then packs windows of `window` examples.

  `window` defaults to SeqIO's (the longest feature length), so both packers
  see the same examples at a time and differ only in how they fill rows.
  """
  for k in feature_lengths:
    if k not in ds.element_spec:
      raise ValueError(f"Feature {k!r} not found in dataset; it has {sorted(ds.element_spec)}.")
    if not ds.element_spec[k].shape.is_compatible_with(tf.TensorShape([None])):
      raise ValueError(f"Features to be packed must be one-dimensional; {k!r} has shape "
                       f"{ds.element_spec[k].shape}.")
  window = window or max(feature_lengths.values())
  ds = ds.map(lambda x: {k: x[k][:n] for k, n in feature_lengths.items()},
              num_parallel_calls=tf.data.AUTOTUNE)
  ds = ds.padded_batch(window, padded_shapes={k: [-1] for k in feature_lengths})
  ds = ds.map(lambda x: _pack_window(x, feature_lengths), num_parallel_calls=tf.data.AUTOTUNE)

  def set_shapes(x):
    for k, v in x.items():
      v.set_shape([feature_lengths[k.removesuffix("_positions").removesuffix("_segment_ids")]])
    return x

  return ds.unbatch().map(set_shapes, num_parallel_calls=tf.data.AUTOTUNE)


class FirstFitEncDecFeatureConverter(seqio.EncDecFeatureConverter):
  """`seqio.EncDecFeatureConverter` whose packing is `first_fit_pack`."""

  def _pack_or_pad(self, ds: tf.data.Dataset, packed_lengths: Mapping[str, int]
                   ) -> tf.data.Dataset:
    if self.pack:
      return first_fit_pack(ds, packed_lengths)
    return super()._pack_or_pad(ds, packed_lengths)
