"""First-fit-decreasing packing: every example exactly once, fuller rows than SeqIO's, resumable."""

import os
import tempfile

import numpy as np
import pytest
import seqio
import tensorflow as tf

from crosstask.runtime.data import packing
from crosstask.runtime.data import pipeline as data

LENGTHS = {"inputs": 16, "targets": 6}


def _dataset(examples) -> tf.data.Dataset:
  def gen():
    yield from examples
  spec = {k: tf.TensorSpec([None], tf.int32) for k in ("inputs", "targets")}
  return tf.data.Dataset.from_generator(gen, output_signature=spec)


def _examples(n, seed=0, longest=(20, 8)):
  """Random examples; the default lengths run past LENGTHS, so trimming is exercised."""
  rng = np.random.default_rng(seed)
  return [{"inputs": rng.integers(2, 50, rng.integers(1, longest[0])).astype(np.int32),
           "targets": rng.integers(2, 50, rng.integers(1, longest[1])).astype(np.int32)}
          for _ in range(n)]


def _segments(row) -> list[tuple[tuple, tuple]]:
  out = []
  for s in range(1, int(row["inputs_segment_ids"].max()) + 1):
    parts = []
    for k in ("inputs", "targets"):
      mask = row[f"{k}_segment_ids"] == s
      np.testing.assert_array_equal(row[f"{k}_positions"][mask], np.arange(mask.sum()))
      assert (row[k][~(row[f"{k}_segment_ids"] > 0)] == 0).all()  # padding is 0 everywhere
      parts.append(tuple(row[k][mask]))
    out.append(tuple(parts))
  return out


def test_every_example_once_trimmed_with_positions_and_shared_segment_ids():
  examples = _examples(200)
  rows = list(packing.first_fit_pack(_dataset(examples), LENGTHS, window=64).as_numpy_iterator())
  got = sorted(seg for row in rows for seg in _segments(row))
  want = sorted((tuple(e["inputs"][:16]), tuple(e["targets"][:6])) for e in examples)
  assert got == want
  for row in rows:
    assert row["inputs"].shape == (16,) and row["targets_segment_ids"].shape == (6,)
    # Segments are numbered from 1 in the order they sit in the row.
    ids = row["inputs_segment_ids"][row["inputs_segment_ids"] > 0]
    assert (np.diff(ids) >= 0).all() and ids[0] == 1


def test_fills_rows_next_fit_leaves_half_empty():
  # Capacity 16: next-fit (SeqIO) closes a row whenever the next example does not
  # fit: [10] [10 5] [6 5] [6] -> 4 rows. First-fit-decreasing: [10 6] [10 6] [5 5].
  lengths = [10, 10, 5, 6, 5, 6]
  examples = [{"inputs": np.full(n, 7, np.int32), "targets": np.array([3], np.int32)}
              for n in lengths]
  ours = list(packing.first_fit_pack(_dataset(examples), LENGTHS).as_numpy_iterator())
  theirs = list(seqio.utils.trim_and_pack_dataset(_dataset(examples), LENGTHS).as_numpy_iterator())
  assert [sorted(np.bincount(r["inputs_segment_ids"])[1:].tolist()) for r in ours] == \
      [[6, 10], [6, 10], [5, 5]]
  assert len(theirs) == 4


def test_rows_come_in_the_order_of_their_earliest_example():
  # Example i carries token i + 2; the row holding example 0 comes first, and so on.
  examples = [{"inputs": np.full(n, i + 2, np.int32), "targets": np.array([i + 2], np.int32)}
              for i, n in enumerate([3, 12, 4, 11, 9, 2, 7])]
  rows = list(packing.first_fit_pack(_dataset(examples), LENGTHS).as_numpy_iterator())
  earliest = [min(set(r["targets"][r["targets"] > 0].tolist())) for r in rows]
  assert earliest == sorted(earliest) and earliest[0] == 2


def test_fuller_than_seqio_on_a_random_stream():
  # Up to 3/4 of a row's inputs and short targets: the inputs bind, as with CSL abstracts.
  examples = _examples(300, seed=1, longest=(12, 2))
  ours = list(packing.first_fit_pack(_dataset(examples), LENGTHS).as_numpy_iterator())
  theirs = list(seqio.utils.trim_and_pack_dataset(_dataset(examples), LENGTHS).as_numpy_iterator())
  fill = lambda rows: np.mean([(r["inputs"] > 0).mean() for r in rows])
  assert len(ours) < 0.85 * len(theirs), (len(ours), len(theirs))
  assert fill(ours) > 0.9 and fill(theirs) < 0.8, (fill(ours), fill(theirs))


def test_packed_iterator_saves_and_restores_its_position():
  examples = _examples(300, seed=2, longest=(17, 7))  # the converter refuses over-long ones
  source = tf.data.Dataset.from_tensor_slices(
      {k: tf.ragged.constant([e[k] for e in examples]) for k in ("inputs", "targets")}
  ).map(lambda x: {k: v for k, v in x.items()})
  converter = data.feature_converter(True)
  assert isinstance(converter, packing.FirstFitEncDecFeatureConverter)
  build = lambda: iter(converter(source, LENGTHS).batch(4))
  iterator = build()
  for _ in range(5):
    next(iterator)
  with tempfile.TemporaryDirectory() as tmp:
    prefix = tf.train.Checkpoint(ds=iterator).write(os.path.join(tmp, "ds"))
    want = next(iterator)
    fresh = build()
    tf.train.Checkpoint(ds=fresh).read(prefix).assert_consumed()
    got = next(fresh)
  assert set(got) >= {"encoder_input_tokens", "encoder_segment_ids", "decoder_input_tokens",
                      "decoder_target_tokens", "decoder_loss_weights", "decoder_positions"}
  for k in want:
    np.testing.assert_array_equal(got[k].numpy(), want[k].numpy(), err_msg=k)


def test_packer_choice():
  assert type(data.feature_converter(True, "seqio")) is seqio.EncDecFeatureConverter
  assert type(data.feature_converter(False)) is seqio.EncDecFeatureConverter
  with pytest.raises(ValueError, match=r"packer='next_fit'.*first_fit.*seqio"):
    data.feature_converter(True, "next_fit")
  with pytest.raises(ValueError, match="'targets' not found"):
    packing.first_fit_pack(_dataset(_examples(2)).map(lambda x: {"inputs": x["inputs"]}),
                           LENGTHS)
