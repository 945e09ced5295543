"""LongLM's text infilling and conditional continuation as TF-op preprocessors."""

import numpy as np
import pytest
import seqio
import tensorflow as tf

from crosstask.tasks.lot import pretraining as P

V = 1000  # sentinel k = V - 1 - k: <extra_id_1> = 998, <extra_id_2> = 997, ...
FEATURES = {k: seqio.Feature(seqio.PassThroughVocabulary(V, eos_id=1), add_eos=True)
            for k in ("inputs", "targets")}


def _tokens(n):
  """n ordinary token ids (10..859, repeating), never a sentinel."""
  return [10 + i % 850 for i in range(n)]


def _texts(lengths):
  rows = [np.array(_tokens(n), dtype=np.int32) for n in lengths]
  return tf.data.Dataset.from_generator(
      lambda: ({"targets": r} for r in rows),
      output_signature={"targets": tf.TensorSpec([None], tf.int32)})


def _run(preprocessor, lengths, seed=0):
  with seqio.utils.map_seed_manager(seed):
    ds = preprocessor(_texts(lengths), None, FEATURES)
  return list(ds.as_numpy_iterator())


def _is_sentinel(t):
  return t >= V - 101


def _reconstruct(inputs, targets):
  """Puts each span of the target back in place of its sentinel."""
  spans, current = {}, None
  for t in targets:
    if _is_sentinel(t):
      current = int(t)
      spans[current] = []
    else:
      spans[current].append(int(t))
  out = []
  for t in inputs:
    out.extend(spans[int(t)] if _is_sentinel(t) else [int(t)])
  return out


def test_infilling_masks_15_percent_in_numbered_spans_and_reconstructs():
  for ex, n in zip(_run(P.text_infilling, [200, 57, 400]), [200, 57, 400]):
    inputs, targets = ex["inputs"], ex["targets"]
    sentinels = [t for t in targets if _is_sentinel(t)]
    assert sentinels == [V - 1 - k for k in range(1, len(sentinels) + 1)]  # from <extra_id_1>
    assert [t for t in inputs if _is_sentinel(t)] == sentinels
    assert targets[0] == V - 2 and not _is_sentinel(targets[-1])  # no closing sentinel
    assert len(targets) - len(sentinels) == round(0.15 * n)
    assert not any(_is_sentinel(a) and _is_sentinel(b) for a, b in zip(inputs, inputs[1:]))
    assert _reconstruct(inputs, targets) == _tokens(n)


def test_infilling_span_lengths_follow_a_zero_truncated_poisson_3():
  lengths = []
  for ex in _run(P.text_infilling, [2000] * 20):
    span = 0
    for t in list(ex["targets"]) + [V - 1]:
      if _is_sentinel(t):
        if span:
          lengths.append(span)
        span = 0
      else:
        span += 1
  lengths = np.array(lengths)
  assert lengths.min() >= 1
  assert 2.8 < lengths.mean() < 3.5  # 3 / (1 - e^-3) = 3.16, the last span of each text cut
  assert (lengths >= 6).mean() > 0.05  # a Poisson tail, not seqio's fixed-mean segmentation


def test_infilling_is_deterministic_for_a_seed_and_varies_across_seeds():
  a, b, c = (_run(P.text_infilling, [300], seed=s)[0]["inputs"] for s in (1, 1, 2))
  np.testing.assert_array_equal(a, b)
  assert not np.array_equal(a, c)


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_short_texts_do_not_break_either_objective(n):
  for ex in _run(P.text_infilling, [n] * 20):  # 20 seeds: some Poisson draws are 0
    assert _reconstruct(ex["inputs"], ex["targets"]) == _tokens(n)
  ex = _run(P.conditional_continuation, [n])[0]
  assert ex["inputs"][-1] == ex["targets"][0] == V - 2


def test_continuation_splits_front_and_back_at_a_random_point():
  splits = []
  for ex in _run(P.conditional_continuation, [100] * 30):
    inputs, targets = list(ex["inputs"]), list(ex["targets"])
    assert inputs[-1] == targets[0] == V - 2  # `front <extra_id_1>` -> `<extra_id_1> back`
    assert inputs[:-1] + targets[1:] == _tokens(100)
    splits.append(len(inputs) - 1)
  assert min(splits) >= 1 and max(splits) <= 99 and len(set(splits)) > 10


def test_targets_end_with_eos_after_trim_and_segments_fit():
  ds = _texts([1200])
  ds = P.split_tokens(ds, 510)
  assert [len(ex["targets"]) for ex in ds.as_numpy_iterator()] == [510, 510, 180]
  with seqio.utils.map_seed_manager(0):
    ds = P.text_infilling(ds, None, FEATURES)
  ds = seqio.preprocessors.append_eos_after_trim(ds, output_features=FEATURES,
                                                 sequence_length={"inputs": 512, "targets": 512})
  for ex in ds.as_numpy_iterator():
    assert ex["targets"][-1] == 1 and ex["inputs"][-1] == 1
    assert not _is_sentinel(ex["targets"][-2])


def test_span_lengths_sum_to_the_noise_budget_for_every_seed():
  for seed in range(60):  # covers seeds whose single Poisson draw is 0 (e^-3 = 5%)
    for budget in (0, 1, 5, 30):
      lengths = P._span_lengths(tf.constant([seed, 7], tf.int32), budget).numpy()  # pylint: disable=protected-access
      assert lengths.sum() == budget and (lengths >= 0).all()
      assert (lengths[:-1] > 0).all()
