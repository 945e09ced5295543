"""Eval and infer inputs without TensorFlow: text examples -> the model's batches in numpy.

Why: the GPU image has no TensorFlow, so no SeqIO task and no tf.data, yet the job's
examples must reach `Inference` exactly as `crosstask.infer` feeds them. This does, in
numpy, what a task's `get_dataset` (tokenize, then `append_eos_after_trim`: at most
length - 1 tokens and EOS) and `seqio.EncDecFeatureConverter(pack=False)` do: each
feature zero-padded to its length, decoder inputs the targets shifted right behind a 0,
loss weights 1 on the targets' tokens. Vocabularies: `crosstask.plain_vocabularies`.
"""

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from crosstask import plain_vocabularies

# What `features` stands for, as a SeqIO task names it (its fingerprint): the preprocessors
# by qualified name, and the features' dtype as seqio.Feature writes it (`str(tf.int32)`).
SEQIO_PREPROCESSORS = ('seqio.preprocessors.tokenize', 'seqio.preprocessors.append_eos_after_trim')
SEQIO_DTYPE = "<dtype: 'int32'>"


def _padded(ids: list[int], length: int) -> np.ndarray:
  row = np.zeros(length, np.int32)
  ids = ids[:length - 1] + [plain_vocabularies.EOS_ID]
  row[:len(ids)] = ids
  return row


def _tokens(examples: Sequence[Mapping[str, str]], key: str,
            vocabulary: plain_vocabularies.PlainVocabulary, length: int) -> np.ndarray:
  rows = [_padded(vocabulary.encode(ex[key]), length) for ex in examples]
  return np.array(rows, np.int32).reshape(len(rows), length)


def features(examples: Sequence[Mapping[str, str]],
             vocabulary: plain_vocabularies.PlainVocabulary,
             lengths: Mapping[str, int]) -> dict[str, np.ndarray]:
  """The converter's unpacked features of `examples` ({"inputs", "targets"} text), one
  row each, for `lengths` ({"inputs": encoder length, "targets": decoder length})."""
  inputs = _tokens(examples, 'inputs', vocabulary, lengths['inputs'])
  targets = _tokens(examples, 'targets', vocabulary, lengths['targets'])
  shifted = np.pad(targets[:, :-1], ((0, 0), (1, 0)))
  return {'encoder_input_tokens': inputs, 'decoder_target_tokens': targets,
          'decoder_input_tokens': shifted,
          'decoder_loss_weights': (targets != 0).astype(np.int32)}


def batches(feats: Mapping[str, np.ndarray], batch_size: int
            ) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
  """(example indices, features) of `batch_size` rows, the last maybe fewer: what
  `Inference` reads from an enumerated dataset batched by `batch_size`."""
  rows = len(next(iter(feats.values())))
  for start in range(0, rows, batch_size):
    end = min(start + batch_size, rows)
    yield np.arange(start, end), {k: v[start:end] for k, v in feats.items()}
