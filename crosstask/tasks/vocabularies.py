"""Vocabularies for crosstask tasks, chosen by one environment variable.

Every CSL task registers with `default_vocabulary()`, so that the same task
names work out of the box (bytes, no file needed) and with a real Chinese
SentencePiece model: set `CROSSTASK_VOCAB=/path/to/model.model` before the
tasks are imported (or `CROSSTASK_VOCAB=byte`, the same as unset).
"""

import os
import pathlib

import sentencepiece as spm
import seqio

VOCAB_ENV = "CROSSTASK_VOCAB"
BYTE = "byte"


def byte_vocabulary(extra_ids: int = 0) -> seqio.ByteVocabulary:
  """UTF-8 bytes (ids 3..258 after pad/eos/unk): the zero-set-up default."""
  return seqio.ByteVocabulary(extra_ids=extra_ids)


def sentencepiece_vocabulary(path: str, extra_ids: int = 0) -> seqio.SentencePieceVocabulary:
  """A SentencePiece model in T5 layout, plus `extra_ids` sentinels on top.

  The file is checked here, because seqio reads it lazily and would otherwise
  fail far from the cause. Some released models (the mT5-derived
  sentencepiece_cn.model among them) already end in 100 `<extra_id_N>`
  pieces; those need extra_ids=0, and seqio's span corruption finds their
  sentinels at the top ids all the same.
  """
  file = pathlib.Path(os.path.expanduser(str(path)))
  if not file.is_file():
    raise FileNotFoundError(f"SentencePiece model {str(path)!r} does not exist "
                            "(or is not a file)")
  if extra_ids:
    builtin = builtin_sentinels(str(file))
    if builtin:
      raise ValueError(f"{str(path)!r} already holds {builtin} <extra_id_N> sentinel "
                       f"pieces; load it with extra_ids=0, not {extra_ids}")
  return seqio.SentencePieceVocabulary(str(file), extra_ids=extra_ids)


def builtin_sentinels(path: str) -> int:
  """How many `<extra_id_N>` pieces a SentencePiece model file holds itself."""
  try:
    processor = spm.SentencePieceProcessor(model_file=str(path))
  except (OSError, RuntimeError) as e:
    raise ValueError(f"{str(path)!r} is not a SentencePiece model: {e}") from None
  return sum(processor.id_to_piece(i).lstrip("\u2581").startswith("<extra_id_")
             for i in range(processor.get_piece_size()))


def default_vocabulary(extra_ids: int = 0) -> seqio.Vocabulary:
  """The vocabulary named by $CROSSTASK_VOCAB: a .model path, or "byte"/unset."""
  value = os.environ.get(VOCAB_ENV, "").strip()
  if not value or value.lower() == BYTE:
    return byte_vocabulary(extra_ids)
  try:
    return sentencepiece_vocabulary(value, extra_ids=extra_ids)
  except FileNotFoundError as e:
    raise FileNotFoundError(f"{VOCAB_ENV}={value!r}: {e}") from None
