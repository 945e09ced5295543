"""`vocabularies.get`'s vocabularies without SeqIO: the same ids, the same text back.

Why: on a machine without TensorFlow (the GPU image) SeqIO cannot load, yet an eval job
still tokenizes its inputs and detokenizes its predictions. These read the same names
as `vocabularies.get` ('bytes' or a SentencePiece model file, no extra ids; the names
are defined here, below `vocabularies`, which gives these where SeqIO is absent) and
encode and decode as seqio's ByteVocabulary and SentencePieceVocabulary do: PAD 0,
EOS 1, UNK 2; decoding stops after the first EOS and reads ids past the vocabulary as
UNK. Imports no TensorFlow or SeqIO (SentencePiece through the `sentencepiece` package).
"""

from __future__ import annotations

import functools
import os
import pathlib
from typing import Protocol

BYTES = "bytes"
EOS_ID = 1
UNK_ID = 2


def canonical(name: str | os.PathLike | None) -> str:
  """'bytes' for None/''/'byte(s)', else the absolute path of the model file."""
  if name is None or str(name).strip().lower() in ("", "byte", "bytes"):
    return BYTES
  return str(pathlib.Path(os.path.expanduser(os.fspath(name))).resolve())


class PlainVocabulary(Protocol):
  """What the eval inputs and predictions need of a vocabulary."""
  vocab_size: int
  # The seqio class giving the same ids and text, by name: a task's fingerprint names it.
  seqio_class: str

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
  seqio_class = "ByteVocabulary"
  eos_id, extra_ids = EOS_ID, 0

  def encode(self, text: str) -> list[int]:
    return [b + self.OFFSET for b in text.encode('utf-8')]

  def decode(self, ids: list[int]) -> str:
    kept = [i - self.OFFSET for i in _through_eos(ids, self.vocab_size) if i >= self.OFFSET]
    return bytes(kept).decode('utf-8', errors='ignore')


class SentencePiece:
  """A SentencePiece model file (seqio.SentencePieceVocabulary, no extra ids).

  `sentencepiece_model_file` and `sp_model` (the model proto as the processor
  serializes it, which is seqio's `sp_model`) are named as seqio names them: task
  names and fingerprints read them.
  """
  seqio_class = "SentencePieceVocabulary"
  eos_id, extra_ids = EOS_ID, 0

  def __init__(self, path: str):
    import sentencepiece as spm  # pylint: disable=g-import-not-at-top
    self.processor = spm.SentencePieceProcessor(model_file=path)
    self.vocab_size = self.processor.get_piece_size()
    self.sentencepiece_model_file = path
    self.sp_model = self.processor.serialized_model_proto()

  def encode(self, text: str) -> list[int]:
    return self.processor.encode_as_ids(text)

  def decode(self, ids: list[int]) -> str:
    return self.processor.decode_ids(_through_eos(ids, self.vocab_size))


@functools.lru_cache(maxsize=16)
def _load(name: str) -> PlainVocabulary:
  return Bytes() if name == BYTES else SentencePiece(name)


def get(name: str | os.PathLike | None = BYTES) -> PlainVocabulary:
  """The vocabulary `vocabularies.get(name)` names: 'bytes' (or None), or a .model path."""
  return _load(canonical(name))
