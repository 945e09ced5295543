"""Eval and infer say how many examples TASK_FEATURE_LENGTHS cut, before scoring them."""

import seqio

import runtime_helpers
from crosstask.runtime.data import pipeline
from crosstask.runtime.data import truncation
from crosstask.runtime.predict import evaluation


def _config(lengths):
  return pipeline.DatasetConfig('runtime_copy', lengths, 'validation', 4, False, 0,
                                module='runtime_helpers')


def test_the_evaluator_warns_of_targets_the_lengths_cut(tmp_path, capsys):
  """A target longer than its length can never be produced whole (SeqIO trims it
  without a word, and the metric still compares against the whole text)."""
  words = runtime_helpers._words('validation', runtime_helpers.SIZES['validation'])
  longer = [w for w in words if len(w) + 1 > 6]  # its bytes and EOS
  assert 0 < len(longer) < len(words)
  evaluation.Evaluator(_config({'inputs': 16, 'targets': 6}), str(tmp_path / 'a'))
  err = capsys.readouterr().err
  assert err == (f"WARNING: task 'runtime_copy' split 'validation': {len(longer)} of "
                 f"{len(words)} targets ({100 * len(longer) / len(words):.1f}%) are longer "
                 "than TASK_FEATURE_LENGTHS['targets']=6 tokens (the longest: "
                 f"{max(map(len, words)) + 1}) and were cut: the model cannot produce them "
                 "whole. Raise the length to score them whole.\n")
  evaluation.Evaluator(_config({'inputs': 16, 'targets': 16}), str(tmp_path / 'b'))
  assert capsys.readouterr().err == ''


def test_tokens_not_read_from_the_text_are_not_counted():
  """Features a preprocessor made otherwise than by tokenizing their text (span
  corruption's) say nothing about cutting: they are left out, not miscounted."""
  features = {'inputs': seqio.Feature(seqio.ByteVocabulary(), add_eos=True)}
  ids = lambda text: [b + 3 for b in text.encode()]  # noqa: E731  ByteVocabulary's ids
  examples = [{'inputs_pretokenized': b'abcdef', 'inputs': ids('abc') + [1]},
              {'inputs_pretokenized': b'abcdef', 'inputs': ids('xyz') + [1]},
              {'inputs_pretokenized': b'ab', 'inputs': ids('ab') + [1]}]
  (cut,) = truncation.cuts(examples, features, {'inputs': 4})
  assert (cut.feature, cut.cut, cut.examples, cut.longest) == ('inputs', 1, 2, 7)
