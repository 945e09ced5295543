"""A seqio vocabulary that resolves `vocabularies.task_vocabulary()` at each use.

Registered tasks outlive any one gin config (tests and notebooks parse
several), so the task holds this stand-in and asks the gin-configured function
for the real vocabulary whenever it encodes, decodes or reports its size; the
function caches loaded models, so that costs a dictionary lookup.
"""

from __future__ import annotations

import seqio

from crosstask.tasks import vocabularies


class DeferredVocabulary(seqio.Vocabulary):
  """Delegates everything to the vocabulary gin's `task_vocabulary` returns now."""

  def __init__(self):  # pylint: disable=super-init-not-called
    # No state of its own: seqio.Vocabulary's extra_ids live in the resolved one.
    pass

  @property
  def resolved(self) -> seqio.Vocabulary:
    return vocabularies.task_vocabulary()

  # seqio.Vocabulary's abstract hooks, and the public API, all delegate.
  @property
  def _base_vocab_size(self):
    return self.resolved._base_vocab_size  # pylint: disable=protected-access

  def _encode(self, s):
    return self.resolved._encode(s)  # pylint: disable=protected-access

  def _decode(self, ids):
    return self.resolved._decode(ids)  # pylint: disable=protected-access

  def _encode_tf(self, s):
    return self.resolved._encode_tf(s)  # pylint: disable=protected-access

  def _decode_tf(self, ids):
    return self.resolved._decode_tf(ids)  # pylint: disable=protected-access

  def encode(self, s):
    return self.resolved.encode(s)

  def decode(self, ids):
    return self.resolved.decode(ids)

  def encode_tf(self, s):
    return self.resolved.encode_tf(s)

  def decode_tf(self, ids):
    return self.resolved.decode_tf(ids)

  @property
  def vocab_size(self) -> int:
    return self.resolved.vocab_size

  @property
  def extra_ids(self) -> int:
    return self.resolved.extra_ids

  @property
  def pad_id(self) -> int:
    return self.resolved.pad_id

  @property
  def eos_id(self):
    return self.resolved.eos_id

  @property
  def unk_id(self):
    return self.resolved.unk_id

  def __getattr__(self, name):
    if name.startswith("__"):
      raise AttributeError(name)
    return getattr(self.resolved, name)

  def __eq__(self, other):
    if isinstance(other, DeferredVocabulary):
      return True
    return self.resolved == other

  def __hash__(self):
    return hash(DeferredVocabulary)

  def __repr__(self):
    return f"DeferredVocabulary(now={self.resolved!r})"
