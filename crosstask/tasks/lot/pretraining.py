"""LongLM's two pretraining objectives as SeqIO token preprocessors (TF ops only).

Paper §4 / `figure/pretrain_task.png`:
* text infilling: spans with Poisson(3) lengths cover 15% of the tokens; each
  span becomes one sentinel in the input; the target is `<X> span <Y> span ...`
  and ends with EOS, with no closing sentinel (unlike T5's span corruption);
* conditional continuation: the front part of a text in, the back part out,
  split at a random point; input `front <X>`, target `<X> back` + EOS.
Sentinels count from `<extra_id_1>` (every released LongLM example starts
there): sentinel k is id `vocab_size - 1 - k`, inserted as ids, because the
SentencePiece form of `<extra_id_1>` inside text does not tokenize to it.

Our choices where the paper is silent: zero-length Poisson draws are skipped
(a zero-truncated Poisson), spans never touch, the split point is uniform over
[1, L-1], segments are cut to a fixed token length. Randomness comes from
seqio's per-example seeds (stateless ops), so the pipeline stays deterministic
and checkpointable.
"""

from __future__ import annotations

from collections.abc import Mapping

import seqio
import tensorflow as tf

NOISE_DENSITY = 0.15
MEAN_SPAN_LENGTH = 3.0
FIRST_SENTINEL = 1


def sentinel_id(vocab_size, k):
  """Id of `<extra_id_k>` in a T5-layout vocabulary (top ids, descending)."""
  return vocab_size - 1 - k


def _vocab_size(output_features: Mapping[str, seqio.Feature]) -> int:
  return output_features["targets"].vocabulary.vocab_size


def split_tokens(dataset: tf.data.Dataset, max_tokens: int,
                 feature: str = "targets") -> tf.data.Dataset:
  """Cuts each token sequence into consecutive segments of at most max_tokens."""

  def segments(ex):
    pieces = tf.data.Dataset.from_tensor_slices(ex[feature]).batch(max_tokens)
    return pieces.map(lambda t: {feature: t})

  return dataset.flat_map(segments)


def _span_lengths(seed, num_noise):
  """Zero-truncated Poisson(3) lengths whose sum is exactly num_noise (last one cut)."""
  draws = tf.random.stateless_poisson([num_noise + 1], seed, MEAN_SPAN_LENGTH, dtype=tf.int32)
  draws = tf.boolean_mask(draws, draws > 0)
  draws = tf.concat([draws, tf.ones([num_noise + 1], tf.int32)], 0)  # never run short or empty
  ends = tf.minimum(tf.cumsum(draws), num_noise)
  ends = tf.boolean_mask(ends, tf.concat([[True], ends[1:] > ends[:-1]], 0))
  return ends - tf.concat([[0], ends[:-1]], 0)


def infilling_mask(seed, length, noise_density=NOISE_DENSITY):
  """(is_noise bool [L], span index int32 [L], 0 outside spans, from 1 inside).

  round(L * density) noise tokens (at least 1 when L >= 2), spans placed at
  distinct gaps between the kept tokens so that no two spans touch.
  """
  num_noise = tf.cast(tf.round(tf.cast(length, tf.float32) * noise_density), tf.int32)
  num_noise = tf.clip_by_value(num_noise, tf.minimum(1, length - 1), length - 1)
  num_noise = tf.maximum(num_noise, 0)
  lengths = _span_lengths(tf.random.experimental.stateless_fold_in(seed, 0), num_noise)
  num_kept = length - num_noise
  # At most num_kept + 1 gaps exist; drop surplus spans' tokens back into text.
  lengths = tf.boolean_mask(lengths, lengths > 0)  # none when num_noise is 0
  lengths = lengths[:num_kept + 1]
  num_spans = tf.size(lengths)
  scores = tf.random.stateless_uniform([num_kept + 1], tf.random.experimental.stateless_fold_in(seed, 1))
  gaps = tf.sort(tf.argsort(scores)[:num_spans])
  starts = tf.cast(gaps, tf.int32) + tf.concat([[0], tf.cumsum(lengths)[:-1]], 0)
  delta = tf.zeros([length + 1], tf.int32)
  delta = tf.tensor_scatter_nd_add(delta, starts[:, None], tf.ones_like(starts))
  delta = tf.tensor_scatter_nd_add(delta, (starts + lengths)[:, None], -tf.ones_like(starts))
  is_noise = tf.cumsum(delta)[:length] > 0
  first = tf.tensor_scatter_nd_add(tf.zeros([length + 1], tf.int32), starts[:, None],
                                   tf.ones_like(starts))[:length]
  span_index = tf.where(is_noise, tf.cumsum(first), 0)
  return is_noise, span_index


def infill_tokens(tokens, seed, vocab_size, noise_density=NOISE_DENSITY):
  """(inputs, targets) token ids of one text-infilling example (no EOS yet)."""
  length = tf.size(tokens)
  is_noise, span = infilling_mask(seed, length, noise_density)
  first = tf.logical_and(is_noise, tf.concat([[True], span[1:] != span[:-1]], 0))
  sentinel = sentinel_id(vocab_size, span - 1 + FIRST_SENTINEL)
  inputs = tf.boolean_mask(tf.where(first, sentinel, tokens),
                           tf.logical_or(~is_noise, first))
  pairs = tf.stack([tf.where(first, sentinel, -1), tf.where(is_noise, tokens, -1)], axis=1)
  pairs = tf.reshape(pairs, [-1])
  targets = tf.boolean_mask(pairs, pairs >= 0)
  return inputs, targets


def continuation_tokens(tokens, seed, vocab_size):
  """(inputs, targets): `front <extra_id_1>` -> `<extra_id_1> back`, split uniform in [1, L-1]."""
  length = tf.size(tokens)
  split = tf.random.stateless_uniform([], seed, 1, tf.maximum(length, 2), dtype=tf.int32)
  split = tf.minimum(split, tf.maximum(length - 1, 1))
  sentinel = tf.fill([1], tf.cast(sentinel_id(vocab_size, FIRST_SENTINEL), tokens.dtype))
  return tf.concat([tokens[:split], sentinel], 0), tf.concat([sentinel, tokens[split:]], 0)


@seqio.map_over_dataset(num_seeds=1)
def _infill(ex, seed, *, vocab_size, noise_density):
  inputs, targets = infill_tokens(ex["targets"], seed, vocab_size, noise_density)
  return {"inputs": inputs, "targets": targets}


@seqio.map_over_dataset(num_seeds=1)
def _continue(ex, seed, *, vocab_size):
  inputs, targets = continuation_tokens(ex["targets"], seed, vocab_size)
  return {"inputs": inputs, "targets": targets}


def text_infilling(dataset, sequence_length=None, output_features=None, *,
                   noise_density: float = NOISE_DENSITY):
  """SeqIO preprocessor: tokenized `targets` text -> LongLM infilling example."""
  del sequence_length
  return _infill(dataset, vocab_size=_vocab_size(output_features),  # pylint: disable=unexpected-keyword-arg
                 noise_density=noise_density)


def conditional_continuation(dataset, sequence_length=None, output_features=None):
  """SeqIO preprocessor: tokenized `targets` text -> LongLM continuation example."""
  del sequence_length
  return _continue(dataset, vocab_size=_vocab_size(output_features))  # pylint: disable=unexpected-keyword-arg
