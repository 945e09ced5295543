"""The task vocabulary: one gin binding that both the tasks and the model use.

`task_vocabulary(path=None, extra_ids=0)` is gin-configurable: bytes when
`path` is None (no file needed), else a SentencePiece model in T5 layout.
Model gin files bind `VOCABULARY = @vocabularies.task_vocabulary()` and
`vocabularies.task_vocabulary.path = %VOCABULARY_PATH`; tasks built by
`common.factory.arrow_task` hold a `deferred_vocabulary()` that calls the same
function whenever it is used, so setting VOCABULARY_PATH changes both sides at
once (why: a task tokenized with one vocabulary and a model sized for another
train silently on garbage).

This module imports no TensorFlow or SeqIO at load, so parsing a model gin
file stays cheap; the vocabularies themselves are seqio objects.
"""

from __future__ import annotations

import functools
import os
import pathlib

import gin


def byte_vocabulary(extra_ids: int = 0):
  """UTF-8 bytes (ids 3..258 after pad/eos/unk): the zero-set-up default."""
  import seqio  # pylint: disable=g-import-not-at-top
  return seqio.ByteVocabulary(extra_ids=extra_ids)


def sentencepiece_vocabulary(path: str | os.PathLike, extra_ids: int = 0):
  """A SentencePiece model in T5 layout, plus `extra_ids` sentinels on top.

  The file is checked here, because seqio reads it lazily and would otherwise
  fail far from the cause. Some released models (the mT5-derived
  sentencepiece_cn.model among them) already end in 100 `<extra_id_N>`
  pieces; those need extra_ids=0, and seqio's span corruption finds their
  sentinels at the top ids all the same.
  """
  import seqio  # pylint: disable=g-import-not-at-top
  file = pathlib.Path(os.path.expanduser(os.fspath(path)))
  if not file.is_file():
    raise FileNotFoundError(f"SentencePiece model {str(path)!r} does not exist "
                            "(or is not a file)")
  if extra_ids:
    builtin = builtin_sentinels(str(file))
    if builtin:
      raise ValueError(f"{str(path)!r} already holds {builtin} <extra_id_N> sentinel "
                       f"pieces; load it with extra_ids=0, not {extra_ids}")
  return seqio.SentencePieceVocabulary(str(file), extra_ids=extra_ids)


def builtin_sentinels(path: str | os.PathLike) -> int:
  """How many `<extra_id_N>` pieces a SentencePiece model file holds itself."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  try:
    processor = spm.SentencePieceProcessor(model_file=os.fspath(path))
  except (OSError, RuntimeError) as e:
    raise ValueError(f"{str(path)!r} is not a SentencePiece model: {e}") from None
  return sum(processor.id_to_piece(i).lstrip("\u2581").startswith("<extra_id_")
             for i in range(processor.get_piece_size()))


@functools.lru_cache(maxsize=16)
def _load(path: str | None, extra_ids: int):
  if path is None:
    return byte_vocabulary(extra_ids)
  return sentencepiece_vocabulary(path, extra_ids=extra_ids)


@gin.configurable(module="vocabularies")
def task_vocabulary(path: str | os.PathLike | None = None, extra_ids: int = 0):
  """The vocabulary of tasks and model: bytes (`path` None) or a SentencePiece model.

  Bound in gin as `vocabularies.task_vocabulary.path = %VOCABULARY_PATH`.
  """
  if path is not None and str(path).strip().lower() in ("", "byte", "bytes"):
    path = None
  key = None if path is None else str(pathlib.Path(os.path.expanduser(os.fspath(path))))
  return _load(key, int(extra_ids))


def deferred_vocabulary():
  """A vocabulary that is `task_vocabulary()` under the gin config in force when used."""
  from crosstask.tasks.common import deferred  # pylint: disable=g-import-not-at-top
  return deferred.DeferredVocabulary()


def embedding_check(vocab_size: int, num_embeddings: int, what: str = "the vocabulary") -> None:
  """ValueError naming both numbers when a vocabulary has more ids than embedding rows."""
  if vocab_size > num_embeddings:
    raise ValueError(
        f"{what} has {vocab_size} ids but the model's embedding table has only "
        f"{num_embeddings} rows (NUM_EMBEDDINGS / TransformerConfig.vocab_size): ids "
        f">= {num_embeddings} would index past the table. Set NUM_EMBEDDINGS to at least "
        f"{vocab_size} (rounded up to a multiple of 128), or use the vocabulary the model "
        "was built for (VOCABULARY_PATH).")
