"""Synthetic SeqIO tasks for the runtime tests: copy and reverse short letter strings.

Deterministic (a fixed RNG), byte vocabulary, exact-match metric; importable by
subprocesses through `DatasetConfig.module = 'runtime_helpers'`. The sources use
`from_tensor_slices`, so their pipelines can checkpoint their position (like the
crosstask tasks). Also here: counted sources (how many examples a run pulls) and
a model whose loss is NaN on a poisoned example, for the fault tests.
"""

import pathlib
import random

import jax.numpy as jnp
import seqio
import tensorflow as tf

from crosstask.models import model as model_lib

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


# Examples pulled from the counted sources, counted inside tf.data (a resource the
# iterator checkpoint ignores, by the dataset option below) or in Python.
PULLED = tf.Variable(0, dtype=tf.int64, trainable=False)
PULLED_PY = [0]
POISON = '!'  # Example POISON_INDEX of runtime_poisoned's train split contains it.
POISON_INDEX = 40
POISON_ID = ord(POISON) + 3  # Its ByteVocabulary id.


def _counted_source(split: str, shuffle_files: bool, seed: int | None = None) -> tf.data.Dataset:
  del shuffle_files, seed
  words = _words(split, SIZES[split])

  def count(ex):
    with tf.control_dependencies([PULLED.assign_add(1)]):
      return {k: tf.identity(v) for k, v in ex.items()}
  options = tf.data.Options()
  options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
  return tf.data.Dataset.from_tensor_slices({
      'inputs': [f'copy {w}' for w in words], 'targets': words}).map(count).with_options(options)


def _generator_source(split: str, shuffle_files: bool, seed: int | None = None) -> tf.data.Dataset:
  """Python state tf.data cannot save: runs on it fall back to skipping batches."""
  del shuffle_files, seed
  words = _words(split, SIZES[split])

  def gen():
    for w in words:
      PULLED_PY[0] += 1
      yield {'inputs': f'copy {w}', 'targets': w}
  spec = tf.TensorSpec((), tf.string)
  return tf.data.Dataset.from_generator(gen, output_signature={'inputs': spec, 'targets': spec})


def _poisoned_source(split: str, shuffle_files: bool, seed: int | None = None) -> tf.data.Dataset:
  del shuffle_files, seed
  words = _words(split, SIZES[split])
  if split == 'train':
    words[POISON_INDEX] = POISON + words[POISON_INDEX]
  return tf.data.Dataset.from_tensor_slices({
      'inputs': [f'copy {w}' for w in words], 'targets': words})


class PoisonedModel(model_lib.EncoderDecoderModel):
  """Its loss (and so its gradients) are NaN on a batch holding a POISON token."""

  def loss_fn(self, params, batch, dropout_rng):
    loss, metrics = super().loss_fn(params, batch, dropout_rng)
    factor = jnp.where(jnp.any(batch['encoder_input_tokens'] == POISON_ID), jnp.nan, 1.0)
    return loss * factor, dict(metrics, loss=metrics['loss'] * factor)


def sentencepiece_model(folder, seed: int = 0) -> str:
  """A 300-piece SentencePiece model (T5 layout) of random letter words; another `seed`,
  other pieces. For the checks that a checkpoint's own tokenizer is the model's."""
  from crosstask.tasks import train_vocab
  rng = random.Random(f'sentencepiece-{seed}')
  lines = [' '.join(''.join(rng.choice('abcdefghij') for _ in range(4)) for _ in range(8))
           for _ in range(300)]
  return train_vocab.train(lines, str(pathlib.Path(folder) / 'sp'), vocab_size=300,
                           character_coverage=1.0)


def register() -> None:
  for name, fn in (('runtime_counted', _counted_source), ('runtime_generator', _generator_source),
                   ('runtime_poisoned', _poisoned_source)):
    if name not in seqio.TaskRegistry.names():
      seqio.TaskRegistry.add(
          name, source=seqio.FunctionDataSource(fn, splits=tuple(SIZES)),
          preprocessors=[seqio.preprocessors.tokenize, seqio.preprocessors.append_eos],
          output_features=FEATURES, metric_fns=[exact_match])
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
