"""The time-to-quality benchmark's examples: every benchmark's text, span-corrupted once.

Why here and in numpy: both trainers must see the same examples in the same order, so
the stream is made once by the parent (a seeded numpy generator), saved, and read by
both sides; nothing about it depends on either framework.

Text: every string of at least MIN_CHARS characters (with a space or a non-ASCII
character, so ids and label names stay out) in every `.tsv`, `.json` and `.jsonl` file
under the data root, each distinct string once. Tokens: the byte vocabulary's ids
(`seqio.ByteVocabulary`: UTF-8 byte + 3) with SENTINELS sentinel ids on top. Texts are
shuffled and concatenated without separators and cut into equal pieces, as T5's
pretraining mixture does; whole documents are held out for validation.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator, Sequence

import numpy as np

from crosstask.tasks.common import readers
from crosstask.tasks.common import span_corruption

MIN_CHARS = 12
BYTE_OFFSET = 3  # pad 0, EOS 1, UNK 2, then the 256 bytes
SENTINELS = 100
VOCAB_SIZE = BYTE_OFFSET + 256 + SENTINELS  # 359
EOS = 1
SUFFIXES = (".tsv", ".json", ".jsonl")


def byte_ids(text: str) -> np.ndarray:
  """The byte vocabulary's ids of `text` (no EOS)."""
  return np.frombuffer(text.encode("utf-8"), np.uint8).astype(np.int32) + BYTE_OFFSET


def _strings(value) -> Iterator[str]:
  if isinstance(value, str):
    yield value
  elif isinstance(value, dict):
    for v in value.values():
      yield from _strings(v)
  elif isinstance(value, list):
    for v in value:
      yield from _strings(v)


def _is_text(s: str) -> bool:
  return len(s) >= MIN_CHARS and (" " in s or not s.isascii())


def _json_lines(path: pathlib.Path) -> bool:
  """A `.json` file holding one object per line (FewCLUE's) rather than one document."""
  with open(path, "rb") as f:
    first = next((line for line in f if line.strip()), b"")
  try:
    return isinstance(json.loads(first), dict)
  except (UnicodeDecodeError, json.JSONDecodeError):
    return False


def file_values(path: pathlib.Path) -> Iterator:
  """The records of one data file; bad JSON or TSV raises a DataError naming file and line."""
  if path.suffix == ".tsv":
    yield from (row.value for row in readers.read_tsv(path, allow_empty=True))
  elif path.suffix == ".jsonl" or _json_lines(path):
    yield from (row.value for row in readers.read_jsonl(path))
  else:
    yield readers.read_json(path)


def benchmark_texts(root: pathlib.Path) -> tuple[list[str], dict[str, dict]]:
  """(distinct texts in file order, {benchmark folder: files, texts, bytes})."""
  files = sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())
  if not files:
    raise FileNotFoundError(f"no {'/'.join(SUFFIXES)} files under the data root {root}")
  seen: dict[str, None] = {}
  stats: dict[str, dict] = {}
  for path in files:
    bench = stats.setdefault(path.relative_to(root).parts[0], {"files": 0, "texts": 0, "bytes": 0})
    bench["files"] += 1
    for value in file_values(path):
      for s in _strings(value):
        s = s.strip()
        if _is_text(s) and s not in seen:
          seen[s] = None
          bench["texts"] += 1
          bench["bytes"] += len(s.encode("utf-8"))
  return list(seen), stats


def _pieces(texts: Sequence[str], order: np.ndarray, length: int) -> np.ndarray:
  """The texts in `order`, concatenated and cut into [n, length] token rows (rest dropped)."""
  ids = np.concatenate([byte_ids(texts[i]) for i in order])
  return ids[:len(ids) // length * length].reshape(-1, length)


def _corrupted(rows: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
  """[n, inputs] and [n, targets] uint16 arrays of span-corrupted rows, EOS appended."""
  pairs = [span_corruption.corrupt(row, rng, VOCAB_SIZE, SENTINELS) for row in rows]
  eos = np.array([EOS], np.int32)
  inputs = np.stack([np.concatenate([i, eos]) for i, _ in pairs]).astype(np.uint16)
  targets = np.stack([np.concatenate([t, eos]) for _, t in pairs]).astype(np.uint16)
  return inputs, targets


def example_stream(texts: Sequence[str], num_train: int, num_val: int, raw_length: int,
                   seed: int = 0) -> dict[str, np.ndarray]:
  """Train and validation examples: {train,val}_{inputs,targets} uint16, row i = example i.

  Validation takes the first shuffled documents until they fill `num_val` rows; the
  rest are the training documents, reshuffled each time the stream passes over them.
  """
  rng = np.random.default_rng(seed)
  order = rng.permutation(len(texts))
  sizes = np.cumsum([len(texts[i].encode("utf-8")) for i in order])
  held = int(np.searchsorted(sizes, num_val * raw_length)) + 1
  val_rows = _pieces(texts, order[:held], raw_length)[:num_val]
  train_docs = order[held:]
  if len(val_rows) < num_val or not len(train_docs):
    raise ValueError(f"{len(texts)} texts ({sizes[-1] if len(sizes) else 0} bytes) are too "
                     f"few for {num_val} validation rows of {raw_length} tokens and a "
                     "training set")
  train_rows = []
  while sum(len(r) for r in train_rows) < num_train:
    epoch = _pieces(texts, rng.permutation(train_docs), raw_length)
    if not len(epoch):
      raise ValueError(f"the training texts are shorter than one row of {raw_length} tokens")
    train_rows.append(epoch)
  train_rows = np.concatenate(train_rows)[:num_train]
  out = {}
  for split, rows in (("train", train_rows), ("val", val_rows)):
    out[f"{split}_inputs"], out[f"{split}_targets"] = _corrupted(rows, rng)
  return out
