"""T5's span corruption in pure numpy: one example stream two frameworks can share.

Why not seqio's preprocessor (or LongLM's infilling in tasks/lot/pretraining.py, a
variant with Poisson spans and no closing sentinel): both run inside a tf.data
pipeline, and a comparison of two trainers (benchmarks/time_to_quality.py) needs the
examples made once, on the host, deterministically, and fed to both unchanged,
without TensorFlow.

T5's objective (Raffel et al. 2020, `random_spans_noise_mask`): round(L * 0.15) noise
tokens in round(noise / 3) spans; the noise and the kept tokens are each cut into that
many non-empty pieces at uniformly random points and interleaved, kept piece first,
so every example ends in noise. Each noise span becomes one sentinel in the inputs;
the targets are `<s0> span0 <s1> span1 ...`. Sentinel k is id `vocab_size - 1 - k`
(the T5 layout: sentinels are the top ids, the first span gets the highest). No EOS is
added here.
"""

from __future__ import annotations

import numpy as np

NOISE_DENSITY = 0.15
MEAN_SPAN_LENGTH = 3.0


def noise_counts(length: int, noise_density: float = NOISE_DENSITY,
                 mean_span_length: float = MEAN_SPAN_LENGTH) -> tuple[int, int]:
  """(noise tokens, noise spans) of a `length`-token text, as T5 counts them.

  At least one noise token and one span; at least one kept token (length >= 2).
  """
  if length < 2:
    raise ValueError(f"span corruption needs at least 2 tokens, got {length}")
  num_noise = min(max(int(round(length * noise_density)), 1), length - 1)
  num_spans = max(int(round(num_noise / mean_span_length)), 1)
  return num_noise, num_spans


def corrupted_lengths(length: int, noise_density: float = NOISE_DENSITY,
                      mean_span_length: float = MEAN_SPAN_LENGTH) -> tuple[int, int]:
  """(inputs, targets) lengths, one EOS each included, of a corrupted `length`-token text."""
  num_noise, num_spans = noise_counts(length, noise_density, mean_span_length)
  return length - num_noise + num_spans + 1, num_noise + num_spans + 1


def raw_length(inputs_length: int, targets_length: int, noise_density: float = NOISE_DENSITY,
               mean_span_length: float = MEAN_SPAN_LENGTH) -> int:
  """The longest text whose corrupted inputs and targets (EOS included) fit both lengths.

  T5's `random_spans_helper` answers the same question for the inputs alone (568 raw
  tokens for 512 inputs, 114 targets).
  """
  best = None
  for length in range(2, 4 * inputs_length + 8):
    inputs, targets = corrupted_lengths(length, noise_density, mean_span_length)
    if inputs <= inputs_length and targets <= targets_length:
      best = length
  if best is None:
    raise ValueError(f"no text fits lengths {inputs_length}/{targets_length} after span "
                     f"corruption (inputs and targets each need room for a sentinel and EOS)")
  return best


def _segment_lengths(num_items: int, num_segments: int, rng: np.random.Generator) -> np.ndarray:
  """`num_items` cut into `num_segments` non-empty pieces at uniformly random points."""
  cuts = np.sort(rng.choice(np.arange(1, num_items), num_segments - 1, replace=False))
  return np.diff(np.concatenate([[0], cuts, [num_items]]))


def noise_mask(length: int, rng: np.random.Generator, noise_density: float = NOISE_DENSITY,
               mean_span_length: float = MEAN_SPAN_LENGTH) -> np.ndarray:
  """bool [length]: which tokens are noise (kept and noise spans alternate, kept first)."""
  num_noise, num_spans = noise_counts(length, noise_density, mean_span_length)
  noise = _segment_lengths(num_noise, num_spans, rng)
  kept = _segment_lengths(length - num_noise, num_spans, rng)
  is_noise = np.stack([np.zeros(num_spans, bool), np.ones(num_spans, bool)], 1).ravel()
  return np.repeat(is_noise, np.stack([kept, noise], 1).ravel())


def corrupt(tokens: np.ndarray, rng: np.random.Generator, vocab_size: int, num_sentinels: int,
            noise_density: float = NOISE_DENSITY, mean_span_length: float = MEAN_SPAN_LENGTH
            ) -> tuple[np.ndarray, np.ndarray]:
  """(inputs, targets) int32 of one span-corrupted text, without EOS.

  The top `num_sentinels` ids of the vocabulary are the sentinels; a text holding one
  of them, or needing more spans than there are sentinels, is refused.
  """
  tokens = np.asarray(tokens, np.int32)
  first_sentinel = vocab_size - num_sentinels
  if tokens.size and (tokens.max() >= first_sentinel or tokens.min() < 0):
    raise ValueError(f"token ids must lie in [0, {first_sentinel}) below the sentinels, "
                     f"got {tokens.min()}..{tokens.max()}")
  mask = noise_mask(len(tokens), rng, noise_density, mean_span_length)
  starts = mask & ~np.concatenate([[False], mask[:-1]])
  if starts.sum() > num_sentinels:
    raise ValueError(f"{starts.sum()} noise spans need more than the {num_sentinels} sentinels")
  sentinels = (vocab_size - np.cumsum(starts)).astype(np.int32)  # span k -> vocab_size - 1 - k
  inputs = np.where(starts, sentinels, tokens)[~mask | starts]
  # Every noise token, preceded by its span's sentinel where the span starts.
  pairs = np.stack([np.where(starts, sentinels, -1), np.where(mask, tokens, -1)], 1).ravel()
  return inputs, pairs[pairs >= 0].astype(np.int32)
