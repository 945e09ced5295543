"""Readers for the LOT JSON-lines files and the NLPCC-2021 outline-to-story data.

Layout under the data root (the THUCloud tree is unknown; this mirrors the
`thu-coai/LOT-LongLM` dataset names): `lot/{clozet,senpos,plotcom,outgen}/
{train,val,test}.jsonl` and `lot/nlpcc2021_outline2story/{train,val,test}.jsonl` (the
NLPCC test file hides its stories: `{"story": "", "outline": [...]}`).
Records come out normalised by `records` (placeholders, label types); a bad
record raises `DataError` naming `path:line` and the field.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator

from crosstask.tasks.common import readers as common
from crosstask.tasks.lot import records

TASKS = ("clozet", "senpos", "plotcom", "outgen", "nlpcc")
TASK_DIRS = {"clozet": "clozet", "senpos": "senpos", "plotcom": "plotcom",
             "outgen": "outgen", "nlpcc": "nlpcc2021_outline2story"}
SPLIT_FILES = {"train": "train", "validation": "val", "test": "test"}


def split_path(task: str, split: str, root: str | os.PathLike | None = None) -> pathlib.Path:
  """The file of one task split (split names: train, validation, test)."""
  if task not in TASK_DIRS:
    raise ValueError(f"unknown LOT task {task!r}; use one of {TASKS}")
  if split not in SPLIT_FILES:
    raise ValueError(f"unknown LOT split {split!r}; use one of {sorted(SPLIT_FILES)}")
  root = pathlib.Path(root) if root is not None else common.data_root()
  return root / "lot" / TASK_DIRS[task] / f"{SPLIT_FILES[split]}.jsonl"


def _normalise(task: str, split: str | None = None):
  normalise = records.UNLABELLED.get((task, split), records.NORMALISERS[task])

  def fn(row: common.Row) -> dict:
    if not isinstance(row.value, dict):
      raise common.DataError(f"{row.where}: expected a JSON object, got "
                             f"{type(row.value).__name__}")
    try:
      return normalise(row.value)
    except records.RecordError as e:
      raise common.field_error(row.where, e.field, e.problem) from None

  return fn


def read_file(task: str, path: str | os.PathLike, *, split: str | None = None,
              on_bad_row: str = "raise", bad: common.BadRows | None = None) -> Iterator[dict]:
  """Normalised records of one LOT file; bad records raise (or are counted). `split`
  "test" of "nlpcc" reads NLPCC-2021's unlabelled test file (empty stories)."""
  if task not in records.NORMALISERS:
    raise ValueError(f"unknown LOT task {task!r}; use one of {TASKS}")
  rows = common.read_jsonl(path, on_bad_row=on_bad_row, bad=bad)
  return common.convert(rows, _normalise(task, split), on_bad_row=on_bad_row, bad=bad)


def read_split(task: str, split: str, root: str | os.PathLike | None = None, *,
               on_bad_row: str = "raise", bad: common.BadRows | None = None) -> list[dict]:
  """All records of a split, read now (a missing file fails here, naming it)."""
  path = common.require_file(split_path(task, split, root), f"LOT {task} {split} split")
  return list(read_file(task, path, split=split, on_bad_row=on_bad_row, bad=bad))
