"""Synthetic SeqIO tasks for the runtime tests: copy and reverse short letter strings.

Deterministic (a fixed RNG), byte vocabulary, exact-match metric; importable by
subprocesses through `DatasetConfig.module = 'runtime_helpers'`.
"""

import random

import seqio
import tensorflow as tf

VOCAB = seqio.ByteVocabulary()
FEATURES = {
    'inputs': seqio.Feature(VOCAB, add_eos=True),
    'targets': seqio.Feature(VOCAB, add_eos=True),
}
SIZES = {'train': 256, 'validation': 16}


def _words(split: str, n: int) -> list[str]:
  rng = random.Random(f'runtime-{split}')
  return [''.join(rng.choice('abcdefgh') for _ in range(rng.randint(3, 8))) for _ in range(n)]


def _source(transform):
  def fn(split: str, shuffle_files: bool, seed: int | None = None) -> tf.data.Dataset:
    del shuffle_files, seed
    words = _words(split, SIZES[split])
    return tf.data.Dataset.from_tensor_slices({
        'inputs': [f'{transform.__name__} {w}' for w in words],
        'targets': [transform(w) for w in words]})
  return seqio.FunctionDataSource(fn, splits=tuple(SIZES))


def copy(w: str) -> str:
  return w


def reverse(w: str) -> str:
  return w[::-1]


def exact_match(targets, predictions) -> dict[str, float]:
  return {'exact_match': 100.0 * sum(t == p for t, p in zip(targets, predictions))
                         / max(len(targets), 1)}


def register() -> None:
  for fn in (copy, reverse):
    name = f'runtime_{fn.__name__}'
    if name in seqio.TaskRegistry.names():
      continue
    seqio.TaskRegistry.add(
        name, source=_source(fn),
        preprocessors=[seqio.preprocessors.tokenize, seqio.preprocessors.append_eos],
        output_features=FEATURES, metric_fns=[exact_match])
  if 'runtime_copy_reverse' not in seqio.MixtureRegistry.names():
    seqio.MixtureRegistry.add('runtime_copy_reverse', ['runtime_copy', 'runtime_reverse'],
                              default_rate=1.0)


register()
