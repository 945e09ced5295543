"""A small Chinese demo corpus for LongLM pretraining, built at read time.

LongLM's 120G of novels is not public; C3's passages (many of them narratives)
and CMRC 2018's contexts under the data root stand in. The NLPCC-2021 stories
are the downstream OutGen data, so any document sharing a 20-character string
with one of them is dropped (nothing of the kind exists today; the check keeps
it that way). Every 20th document is held out for the Table-9-style report.
Nothing is copied into the project: the corpus is read from the data root.
"""

from __future__ import annotations

import json
import os
import pathlib

from crosstask.tasks.common import readers as common

C3_FILES = tuple(f"clue/c3/c3-{kind}-{split}.json" for kind in ("m", "d")
                 for split in ("train", "dev"))
CMRC_FILE = "clue/cmrc2018/cmrc2018_dev.json"
NLPCC_FILES = ("lot/nlpcc2021_outline2story/val.jsonl", "lot/nlpcc2021_outline2story/train.jsonl")
SHINGLE = 20
HOLD_OUT_EVERY = 20
MIN_CHARS = 20


def _c3_documents(path: pathlib.Path) -> list[str]:
  docs = []
  for i, item in enumerate(common.read_json(path)):
    if not (isinstance(item, list) and item and isinstance(item[0], list)):
      raise common.DataError(f"{path}[record {i}]: expected [[passage lines], questions, id]")
    docs.append("".join(str(line).strip() for line in item[0]))
  return docs


def _cmrc_documents(path: pathlib.Path) -> list[str]:
  data = common.read_json(path)
  return [p["context"] for article in data.get("data", []) for p in article["paragraphs"]]


def _shingles(text: str) -> set[str]:
  text = "".join(text.split())
  return {text[i:i + SHINGLE] for i in range(max(1, len(text) - SHINGLE + 1))}


def overlaps(text: str, banned: set[str]) -> bool:
  """Whether `text` (whitespace deleted) shares a 20-character string with `banned`."""
  text = "".join(text.split())
  return any(text[i:i + SHINGLE] in banned for i in range(max(1, len(text) - SHINGLE + 1)))


def excluded_shingles(root: pathlib.Path) -> set[str]:
  """20-character strings of every NLPCC story under the root."""
  shingles: set[str] = set()
  for name in NLPCC_FILES:
    path = root / name
    if path.is_file():
      for row in common.read_jsonl(path):
        shingles |= _shingles(row.value.get("story", ""))
  return shingles


def documents(root: str | os.PathLike | None = None, *, with_cmrc: bool = True
              ) -> tuple[list[str], int]:
  """(documents, number dropped for overlapping an NLPCC story)."""
  root = pathlib.Path(root) if root is not None else common.data_root()
  paths = [root / f for f in C3_FILES]
  missing = [str(p) for p in paths if not p.is_file()]
  if missing:
    raise FileNotFoundError("the LongLM demo corpus is built from C3 under the data root "
                            f"(set CROSSTASK_DATA_DIR); missing: {', '.join(missing)}")
  docs = [d for p in paths for d in _c3_documents(p)]
  if with_cmrc and (root / CMRC_FILE).is_file():
    docs += _cmrc_documents(root / CMRC_FILE)
  docs = [d for d in docs if len(d) >= MIN_CHARS]
  banned = excluded_shingles(root)
  kept = [d for d in docs if not overlaps(d, banned)]
  return kept, len(docs) - len(kept)


def split_documents(docs: list[str], split: str) -> list[str]:
  """train: all but every 20th document; validation: every 20th (~5%)."""
  if split == "train":
    return [d for i, d in enumerate(docs) if i % HOLD_OUT_EVERY]
  if split == "validation":
    return docs[::HOLD_OUT_EVERY]
  raise ValueError(f"the demo corpus has splits 'train' and 'validation', not {split!r}")


def write_jsonl(path: str | os.PathLike, docs: list[str]) -> pathlib.Path:
  """Writes `{"text": ...}` lines (to inspect or reuse the corpus outside the run)."""
  path = pathlib.Path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    for d in docs:
      f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
  return path
