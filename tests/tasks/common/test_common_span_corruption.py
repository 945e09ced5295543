"""T5's span corruption in numpy: counts, sentinel order, and targets that undo it."""

import numpy as np
import pytest

from crosstask.tasks.common import span_corruption as sc

VOCAB, SENTINELS = 359, 100


def reconstruct(inputs: np.ndarray, targets: np.ndarray) -> list[int]:
  """The original text: each sentinel in the inputs replaced by the target tokens that
  follow the same sentinel in the targets."""
  first_sentinel = VOCAB - SENTINELS
  spans, current = {}, None
  for t in targets.tolist():
    if t >= first_sentinel:
      current = spans.setdefault(t, [])
    else:
      current.append(t)
  out = []
  for t in inputs.tolist():
    out.extend(spans.pop(t) if t >= first_sentinel else [t])
  assert not spans, f"target spans never used: {sorted(spans)}"
  return out


@pytest.mark.parametrize("length", [2, 3, 7, 20, 70, 568])
def test_noise_counts_spans_and_sentinel_order(length):
  rng = np.random.default_rng(length)
  tokens = rng.integers(3, VOCAB - SENTINELS, length)
  want_noise = min(max(round(length * 0.15), 1), length - 1)
  want_spans = max(round(want_noise / 3), 1)
  for _ in range(20):
    inputs, targets = sc.corrupt(tokens, rng, VOCAB, SENTINELS)
    sentinels_in = inputs[inputs >= VOCAB - SENTINELS].tolist()
    sentinels_out = targets[targets >= VOCAB - SENTINELS].tolist()
    # The first span gets the top id, each later one the next lower id, in both.
    assert sentinels_in == sentinels_out == list(range(VOCAB - 1, VOCAB - 1 - want_spans, -1))
    assert len(targets) - want_spans == want_noise  # noise tokens, exactly T5's count
    assert len(inputs) == length - want_noise + want_spans
    assert targets[0] == VOCAB - 1 and inputs[-1] == VOCAB - 1 - (want_spans - 1)  # ends in noise
    assert reconstruct(inputs, targets) == tokens.tolist()
    assert (len(inputs) + 1, len(targets) + 1) == sc.corrupted_lengths(length)


def test_noise_density_and_mean_span_length_over_many_texts():
  rng = np.random.default_rng(0)
  noise = spans = total = 0
  span_lengths = []
  for _ in range(300):
    mask = sc.noise_mask(568, rng)
    noise, total = noise + mask.sum(), total + mask.size
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(int), [0]])))
    span_lengths.extend(edges[1::2] - edges[::2])
    spans += len(edges) // 2
  assert noise / total == pytest.approx(0.15, abs=0.001)
  assert np.mean(span_lengths) == pytest.approx(3.0, abs=0.05)
  assert min(span_lengths) >= 1


def test_noise_is_placed_differently_by_different_seeds():
  masks = {sc.noise_mask(100, np.random.default_rng(seed)).tobytes() for seed in range(10)}
  assert len(masks) == 10


def test_raw_length_is_t5s_for_its_pretraining_lengths():
  # T5's random_spans_helper: 568 raw tokens give 512 inputs and 114 targets.
  assert sc.raw_length(512, 114) == 568
  assert sc.corrupted_lengths(568) == (512, 114)
  raw = sc.raw_length(64, 16)
  inputs, targets = sc.corrupted_lengths(raw)
  assert inputs <= 64 and targets <= 16 and sc.corrupted_lengths(raw + 1)[0] > 64


def test_bad_inputs_are_refused_with_the_reason():
  rng = np.random.default_rng(0)
  with pytest.raises(ValueError, match="below the sentinels"):
    sc.corrupt(np.array([5, 6, VOCAB - 1, 7]), rng, VOCAB, SENTINELS)
  with pytest.raises(ValueError, match="at least 2 tokens"):
    sc.corrupt(np.array([5]), rng, VOCAB, SENTINELS)
  with pytest.raises(ValueError, match="more than the 2 sentinels"):
    sc.corrupt(np.arange(3, 103), rng, VOCAB, 2)
  with pytest.raises(ValueError, match="no text fits"):
    sc.raw_length(2, 1)
