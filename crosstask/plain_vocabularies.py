"""`vocabularies.get`'s vocabularies without SeqIO: the same ids, the same text back.

Why: on a machine without TensorFlow (the GPU image) SeqIO cannot load, yet an eval job
still tokenizes its inputs and detokenizes its predictions. These read the same names
as `vocabularies.get` ('bytes' or a SentencePiece model file, no extra ids) and encode
and decode as seqio's ByteVocabulary and SentencePieceVocabulary do: PAD 0, EOS 1,
UNK 2; decoding stops after the first EOS and reads ids past the vocabulary as UNK.
Imports no TensorFlow or SeqIO (SentencePiece through the `sentencepiece` package).
"""

from __future__ import annotations

import functools
import os
from typing import Protocol

from crosstask import vocabularies

EOS_ID = 1
UNK_ID = 2


class PlainVocabulary(Protocol):
  """What the eval inputs and predictions need of a vocabulary."""
  vocab_size: int

  def encode(self, text: str) -> list[int]: ...

  def decode(self, ids: list[int]) -> str: ...


def _through_eos(ids: list[int], vocab_size: int) -> list[int]:
  """seqio's `Vocabulary.decode` before `_decode`: UNK past the vocabulary, cut after EOS."""
  ids = [UNK_ID if i >= vocab_size else int(i) for i in ids]
  return ids[:ids.index(EOS_ID) + 1] if EOS_ID in ids else ids


class Bytes:
  """UTF-8 bytes at ids 3..258 (seqio.ByteVocabulary, no extra ids)."""
  OFFSET = 3
  vocab_size = OFFSET + 256

  def encode(self, text: str) -> list[int]:
    return [b + self.OFFSET for b in text.encode('utf-8')]

  def decode(self, ids: list[int]) -> str:
    kept = [i - self.OFFSET for i in _through_eos(ids, self.vocab_size) if i >= self.OFFSET]
    return bytes(kept).decode('utf-8', errors='ignore')


class SentencePiece:
  """A SentencePiece model file (seqio.SentencePieceVocabulary, no extra ids)."""

  def __init__(self, path: str):
    import sentencepiece as spm  # pylint: disable=g-import-not-at-top
    self.processor = spm.SentencePieceProcessor(model_file=path)
    self.vocab_size = self.processor.get_piece_size()

  def encode(self, text: str) -> list[int]:
    return self.processor.encode_as_ids(text)

  def decode(self, ids: list[int]) -> str:
    return self.processor.decode_ids(_through_eos(ids, self.vocab_size))


@functools.lru_cache(maxsize=16)
def _load(name: str) -> PlainVocabulary:
  return Bytes() if name == vocabularies.BYTES else SentencePiece(name)


def get(name: str | os.PathLike | None = vocabularies.BYTES) -> PlainVocabulary:
  """The vocabulary `vocabularies.get(name)` names: 'bytes' (or None), or a .model path."""
  return _load(vocabularies.canonical(name))
