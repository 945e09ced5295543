"""Vocabularies as named, concrete objects that models, runtime and tasks all import.

`get('bytes')` is `seqio.ByteVocabulary` (no file needed); `get('/path/to/x.model')` is
a SentencePiece model in T5 layout. The same name always gives the same object, so a
task registered with a vocabulary keeps it whatever gin config is parsed later.

Task names carry their vocabulary: plain names (`csl_zh_abstract_to_title`) are
tokenized with bytes, and `task_name(name, vocabulary)` is the name of the same task
for another one (`csl_zh_abstract_to_title.sentencepiece_cn`), registered on demand by
the benchmark's `register(vocabulary)` (its `register_vocabulary` hook). The runtime
asks for that name when the model's vocabulary is not bytes, and refuses a run whose
task and model vocabularies differ.

Model gin files bind `VOCABULARY = @vocabularies.model_vocabulary()` with
`vocabularies.model_vocabulary.path = %VOCABULARY_PATH` (None: bytes), through gin's
dynamic registration (`from crosstask import vocabularies` in the gin file). This module
registers no gin configurable itself: upstream T5X imports task modules (which import
this one) after it has locked gin, and refuses any module that adds a configurable.

This module imports no TensorFlow or SeqIO at load, so parsing a model gin file
stays cheap and models may import it. Where SeqIO cannot be imported (the GPU image),
`get` gives `plain_vocabularies`' vocabularies of the same names (same ids, same text),
so a model gin file still builds its model there.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pathlib
import re

from crosstask import plain_vocabularies
from crosstask.plain_vocabularies import BYTES, canonical  # the names `get` reads

# Between a task's plain name and its vocabulary's key; never inside a plain name.
SEPARATOR = "."
_PROMPT_SUFFIX = re.compile(r"p\d+|prompts")  # prompt variants, their mixture


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
  file = _model_file(path)
  if extra_ids:
    builtin = builtin_sentinels(str(file))
    if builtin:
      raise ValueError(f"{str(path)!r} already holds {builtin} <extra_id_N> sentinel "
                       f"pieces; load it with extra_ids=0, not {extra_ids}")
  return seqio.SentencePieceVocabulary(str(file), extra_ids=extra_ids)


def _model_file(path: str | os.PathLike) -> pathlib.Path:
  file = pathlib.Path(os.path.expanduser(os.fspath(path)))
  if not file.is_file():
    raise FileNotFoundError(f"SentencePiece model {str(path)!r} does not exist "
                            "(or is not a file)")
  return file


def builtin_sentinels(path: str | os.PathLike) -> int:
  """How many `<extra_id_N>` pieces a SentencePiece model file holds itself."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  try:
    processor = spm.SentencePieceProcessor(model_file=os.fspath(path))
  except (OSError, RuntimeError) as e:
    raise ValueError(f"{str(path)!r} is not a SentencePiece model: {e}") from None
  return sum(processor.id_to_piece(i).lstrip("\u2581").startswith("<extra_id_")
             for i in range(processor.get_piece_size()))


def seqio_installed() -> bool:
  """Whether SeqIO and the TensorFlow it runs on can be imported here (not on the GPU
  image, where `crosstask.infer` reads a task's plain form instead)."""
  return all(importlib.util.find_spec(m) is not None for m in ("seqio", "tensorflow"))


@functools.lru_cache(maxsize=16)
def _load(name: str, extra_ids: int):
  if not seqio_installed():
    if extra_ids:
      raise ValueError(f"vocabulary {name!r} with {extra_ids} extra ids needs SeqIO, which "
                       "is not installed here; without it only extra_ids=0 is read")
    if name != BYTES:
      _model_file(name)
    return plain_vocabularies.get(name)
  if name == BYTES:
    return byte_vocabulary(extra_ids)
  return sentencepiece_vocabulary(name, extra_ids=extra_ids)


def get(name: str | os.PathLike | None = BYTES, extra_ids: int = 0):
  """The vocabulary called `name`: 'bytes' (or None), or a SentencePiece .model path.

  One object per (name, extra_ids), so tasks and model built from the same name share it.
  """
  return _load(canonical(name), int(extra_ids))


def model_vocabulary(path: str | os.PathLike | None = None, extra_ids: int = 0):
  """The model's vocabulary in gin: `get(path)`, bytes when `path` is None.

  Configurable only through a gin file's dynamic registration; bound as `vocabularies.model_vocabulary.path = %VOCABULARY_PATH`. Tasks never
  read this binding: a run whose model vocabulary is not bytes uses the tasks
  registered for it (`task_name`).
  """
  return get(path, extra_ids)


def is_byte_kind(vocabulary) -> bool:
  """Bytes, with or without extra ids: seqio's or `plain_vocabularies`'."""
  if isinstance(vocabulary, (plain_vocabularies.Bytes, plain_vocabularies.SentencePiece)):
    return isinstance(vocabulary, plain_vocabularies.Bytes)
  import seqio  # pylint: disable=g-import-not-at-top
  return isinstance(vocabulary, seqio.ByteVocabulary)


def is_bytes(vocabulary) -> bool:
  return is_byte_kind(vocabulary) and not vocabulary.extra_ids


def key(vocabulary) -> str:
  """A short name for task names: 'bytes', 'bytes_x4', 'sentencepiece_cn', 'mine_x100'.

  A SentencePiece model is named by its file's stem; two different files with the
  same stem in one process are refused rather than given one name.
  """
  extra = int(getattr(vocabulary, "extra_ids", 0) or 0)
  tail = f"_x{extra}" if extra else ""
  if is_byte_kind(vocabulary):
    return BYTES + tail
  path = getattr(vocabulary, "sentencepiece_model_file", None)
  if path is None:
    raise ValueError(f"{vocabulary!r} is neither bytes nor a SentencePiece model file; "
                     "register tasks for it under names of your own")
  stem = re.sub(r"\W+", "_", pathlib.Path(path).stem).strip("_").lower() or "spm"
  name = stem + tail
  other = _KEYS.setdefault(name, str(pathlib.Path(path).resolve()))
  if other != str(pathlib.Path(path).resolve()):
    raise ValueError(f"two SentencePiece models share the name {stem!r}: {other} and {path}; "
                     "rename one of the files")
  return name


_KEYS: dict[str, str] = {}


def task_name(name: str, vocabulary) -> str:
  """The name of task (or mixture) `name` tokenized with `vocabulary`: plain for bytes."""
  base = base_task_name(name)
  return base if is_bytes(vocabulary) else f"{base}{SEPARATOR}{key(vocabulary)}"


def base_task_name(name: str) -> str:
  """'lot_zh_outgen' for 'lot_zh_outgen.sentencepiece_cn' (reports group runs by task).

  Only a last part that names a vocabulary goes: a prompt variant's `.p<k>`
  and their mixture's `.prompts` (`tasks.common.prompts`) are part of the task's own name.
  """
  head, sep, tail = name.rpartition(SEPARATOR)
  if not sep or _PROMPT_SUFFIX.fullmatch(tail):
    return name
  return head


def describe(vocabulary) -> str:
  """'bytes (259 ids)' or 'SentencePiece /path/x.model (32596 ids)', for error messages."""
  if vocabulary is None:
    return "none"
  size = getattr(vocabulary, "vocab_size", "?")
  path = getattr(vocabulary, "sentencepiece_model_file", None)
  if path is not None:
    return f"SentencePiece {path} ({size} ids)"
  extra = int(getattr(vocabulary, "extra_ids", 0) or 0)
  kind = type(vocabulary).__name__
  kind = BYTES if kind in ("ByteVocabulary", "Bytes") else kind
  return f"{kind} ({size} ids{f', {extra} sentinels' if extra else ''})"


def embedding_check(vocab_size: int, num_embeddings: int, what: str = "the vocabulary") -> None:
  """ValueError naming both numbers when a vocabulary has more ids than embedding rows."""
  if vocab_size > num_embeddings:
    raise ValueError(
        f"{what} has {vocab_size} ids but the model's embedding table has only "
        f"{num_embeddings} rows (NUM_EMBEDDINGS / TransformerConfig.vocab_size): ids "
        f">= {num_embeddings} would index past the table. Set NUM_EMBEDDINGS to at least "
        f"{vocab_size} (rounded up to a multiple of 128), or use the vocabulary the model "
        "was built for (VOCABULARY_PATH).")
