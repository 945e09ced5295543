"""Readers for the evaluation-side SciRepEval files: embeddings, probe splits, qrels, reviewers.

Pure Python + numpy (no TensorFlow, SeqIO or JAX), so the scorer starts fast and
runs anywhere. Every id is normalised to `str` at read time (why: the official
code looks probe ids up as `str(...)` but IR ids as they come, so an int in one
file and a string in another silently drop pairs). Errors name `path:line`.
"""

from __future__ import annotations

import csv
import json
import math
import os
import pathlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

PathLike = str | os.PathLike
_FLOAT_INT = re.compile(r"^\d+\.0+$")


class ScirepevalDataError(ValueError):
  """Malformed SciRepEval data; the message names the file and line (and field).

  A ValueError like the task layer's `DataError`, but not a subclass of it: the
  metrics package imports nothing of the task layer.
  """


def located(where: str, problem: str) -> ScirepevalDataError:
  return ScirepevalDataError(f"{where}: {problem}")


def require_file(path: PathLike, what: str) -> pathlib.Path:
  p = pathlib.Path(path)
  if not p.is_file():
    raise FileNotFoundError(f"{what} not found: {p}")
  return p


def normalise_id(value: Any, where: str, field: str) -> str:
  """Ids as strings: 123, 123.0 and "123" are the same paper; null is an error."""
  if isinstance(value, bool) or value is None or value == "":
    raise located(where, f"field {field!r}: missing id (got {value!r})")
  if isinstance(value, float):
    if not value.is_integer():
      raise located(where, f"field {field!r}: id {value!r} is not an integer")
    return str(int(value))
  if isinstance(value, int):
    return str(value)
  if isinstance(value, str):
    text = value.strip()
    # "102.0": an integer id that passed through a float column (pandas, CSV).
    return text.split(".")[0] if _FLOAT_INT.match(text) else text
  raise located(where, f"field {field!r}: id must be a string or integer, got "
                f"{type(value).__name__}")


def iter_jsonl(path: PathLike) -> Iterator[tuple[str, Any]]:
  """(where, value) for each non-blank line of a JSON-lines file."""
  p = require_file(path, "JSON-lines file")
  with open(p, "rb") as f:
    for n, raw in enumerate(f, 1):
      where = f"{p}:{n}"
      try:
        line = raw.decode("utf-8")
      except UnicodeDecodeError as e:
        raise located(where, f"not UTF-8 ({e.reason} at byte {e.start})") from None
      if not line.strip():
        continue
      try:
        yield where, json.loads(line)
      except json.JSONDecodeError as e:
        raise located(where, f"bad JSON at column {e.colno}: {e.msg}") from None


def iter_json_records(path: PathLike) -> Iterator[tuple[str, Any]]:
  """(where, record) for a JSON array file, or for JSON lines when the file is not an array.

  The official sample data mixes both (`fos_small.json` is an array,
  `search_small.jsonl` JSON lines), so the form is sniffed from the first byte.
  """
  p = require_file(path, "JSON file")
  with open(p, "rb") as f:
    head = f.read(4096).lstrip()
  if not head.startswith(b"["):
    yield from iter_jsonl(p)
    return
  try:
    data = json.loads(p.read_bytes().decode("utf-8"))
  except UnicodeDecodeError as e:
    raise located(str(p), f"not UTF-8 ({e.reason} at byte {e.start})") from None
  except json.JSONDecodeError as e:
    raise located(f"{p}:{e.lineno}", f"bad JSON at column {e.colno}: {e.msg}") from None
  for i, record in enumerate(data):
    yield f"{p}[record {i}]", record


def require_object(value: Any, where: str) -> dict:
  if not isinstance(value, dict):
    raise located(where, f"expected a JSON object, got {type(value).__name__}")
  return value


def require_fields(record: Mapping, fields: tuple[str, ...], where: str) -> None:
  missing = [f for f in fields if f not in record]
  if missing:
    raise located(where, f"missing field(s) {missing} (has {sorted(record)})")


# ------------------------------------------------------------------ embeddings

def read_embeddings(path: PathLike, *, float16: bool = False) -> dict[str, np.ndarray]:
  """`{"doc_id": ..., "embedding": [...]}` lines -> {doc_id: float32 vector}.

  `float16=True` mimics the official reload (`np.float16`), which tasks sharing a
  saved cache (Max hIndex, SciDocs MeSH, CoView/CoCite/CoRead) are scored with.
  A repeated doc_id keeps the last vector, as the official dict does.
  """
  out: dict[str, np.ndarray] = {}
  dim = None
  for where, value in iter_jsonl(path):
    record = require_object(value, where)
    key = "doc_id" if "doc_id" in record else "corpus_id" if "corpus_id" in record else None
    if key is None:
      raise located(where, "missing field 'doc_id'")
    if "embedding" not in record:
      raise located(where, "missing field 'embedding'")
    doc_id = normalise_id(record[key], where, key)
    try:
      vector = np.asarray(record["embedding"], dtype=np.float64)
    except (TypeError, ValueError):
      raise located(where, "field 'embedding': not a list of numbers") from None
    if vector.ndim != 1 or not len(vector):
      raise located(where, f"field 'embedding': expected a non-empty flat list, got shape "
                    f"{vector.shape}")
    if not np.all(np.isfinite(vector)):
      raise located(where, "field 'embedding': contains NaN or infinity")
    if dim is not None and len(vector) != dim:
      raise located(where, f"field 'embedding': length {len(vector)} but earlier lines have "
                    f"{dim}")
    dim = len(vector)
    out[doc_id] = vector.astype(np.float16 if float16 else np.float32)
  return out


def write_embeddings(path: PathLike, embeddings: Mapping[str, np.ndarray] |
                     list[tuple[str, np.ndarray]]) -> pathlib.Path:
  """The official cache format, one `{"doc_id", "embedding"}` object per line."""
  items = embeddings.items() if isinstance(embeddings, Mapping) else embeddings
  p = pathlib.Path(path)
  p.parent.mkdir(parents=True, exist_ok=True)
  tmp = p.with_name(p.name + ".tmp")
  with open(tmp, "w", encoding="utf-8") as f:
    for doc_id, vector in items:
      f.write(json.dumps({"doc_id": str(doc_id),
                          "embedding": [float(x) for x in np.asarray(vector).ravel()]}) + "\n")
  os.replace(tmp, p)  # Never leaves a half-written cache under the real name.
  return p


# ------------------------------------------------------------------ probe splits

def _label(value: Any, where: str) -> Any:
  """Ints stay ints, floats floats; multi-hot lists become int lists; numeric text is parsed."""
  if isinstance(value, bool):
    return int(value)
  if isinstance(value, (int, float)):
    if isinstance(value, float) and not math.isfinite(value):
      raise located(where, f"field 'label': {value!r} is not a finite number")
    return value
  if isinstance(value, list):
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
      raise located(where, "field 'label': a list label must hold numbers")
    return [int(v) for v in value]
  if isinstance(value, str):
    text = value.strip()
    if text.startswith("["):  # A multi-hot vector written into a CSV cell.
      try:
        return _label(json.loads(text), where)
      except json.JSONDecodeError:
        raise located(where, f"field 'label': bad list {value!r}") from None
    try:
      number = float(text)
    except ValueError:
      raise located(where, f"field 'label': {value!r} is not a number") from None
    if not math.isfinite(number):
      raise located(where, f"field 'label': {value!r} is not a finite number")
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() \
        else number
  raise located(where, f"field 'label': unsupported type {type(value).__name__}")


def read_probe_split(path: PathLike) -> list[tuple[str, Any]]:
  """`{paper_id, label}` rows (CSV with a header, or JSON lines) in file order.

  Order matters: the grid search's 3 folds are unshuffled, so they depend on it.
  """
  p = require_file(path, "probe split")
  rows = []
  if p.suffix == ".csv":
    with open(p, encoding="utf-8", newline="") as f:
      reader = csv.DictReader(f)
      if not reader.fieldnames or not {"paper_id", "label"} <= set(reader.fieldnames):
        raise located(f"{p}:1", f"header must name 'paper_id' and 'label', got "
                      f"{reader.fieldnames}")
      for record in reader:
        where = f"{p}:{reader.line_num}"
        rows.append((normalise_id(record["paper_id"], where, "paper_id"),
                     _label(record["label"], where)))
  else:
    for where, value in iter_jsonl(p):
      record = require_object(value, where)
      require_fields(record, ("paper_id", "label"), where)
      rows.append((normalise_id(record["paper_id"], where, "paper_id"),
                   _label(record["label"], where)))
  if not rows:
    raise located(str(p), "no rows")
  return rows


# ------------------------------------------------------------------ qrels, reviewers

def read_qrels(path: PathLike) -> dict[str, dict[str, int]]:
  """`{query_id, cand_id, score}` lines -> {query_id: {cand_id: score}}.

  A repeated (query, candidate) pair keeps the LAST score: the official
  `get_qc_pairs` assigns in a loop, so later rows overwrite earlier ones.
  """
  qrels: dict[str, dict[str, int]] = {}
  for where, value in iter_jsonl(path):
    record = require_object(value, where)
    require_fields(record, ("query_id", "cand_id", "score"), where)
    score = record["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or (
        isinstance(score, float) and not score.is_integer()):
      raise located(where, f"field 'score': expected an integer grade, got {score!r}")
    qid = normalise_id(record["query_id"], where, "query_id")
    qrels.setdefault(qid, {})[normalise_id(record["cand_id"], where, "cand_id")] = int(score)
  if not qrels:
    raise located(str(path), "no qrels")
  return qrels


def read_reviewer_metadata(path: PathLike) -> dict[str, list[str]]:
  """`{r_id, papers: [doc_id]}` lines -> {reviewer id: [paper ids]}."""
  out = {}
  for where, value in iter_jsonl(path):
    record = require_object(value, where)
    require_fields(record, ("r_id", "papers"), where)
    papers = record["papers"]
    if not isinstance(papers, list) or not papers:
      raise located(where, "field 'papers': expected a non-empty list of paper ids")
    out[normalise_id(record["r_id"], where, "r_id")] = [
        normalise_id(pid, where, "papers") for pid in papers]
  return out
