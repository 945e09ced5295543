"""Readers for every file format the official SciRepEval code reads, as plain records.

* meta files (texts to embed; HF split `evaluation`): simple rows
  `{doc_id|corpus_id, title, abstract, ...}` and IR rows
  `{doc_id?, query: str | paper, candidates: [paper (+ score)]}`;
* training files: classification / regression rows, IR rows with graded
  candidates, SPECTER triplets `{query, pos, neg}`; label lists (one per line);
* evaluation files: probe splits `{paper_id, label}`, qrels, reviewer metadata,
  and embeddings JSONL (read and written).

A paper becomes `{"doc_id": str, "title": str, "abstract": str, ["venue"], ["year"]}`:
ids normalised to strings (why: the official code looks probe ids up as `str(...)`
but IR ids as they come, so an int in one file and a string in another silently
drop pairs), a null or empty abstract becomes "" (the text is then the title
alone), a float year `2019.0` becomes "2019", an empty year or venue is dropped.
JSON arrays and JSON lines are both accepted; errors name `path:line` or
`path[record i]`. Pure Python and numpy: no TensorFlow or SeqIO.
"""

from __future__ import annotations

import codecs
import csv
import json
import math
import os
import pathlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from crosstask.tasks.common import readers as common
from crosstask.tasks.common.readers import DataError, PathLike, require_file

_FLOAT_INT = re.compile(r"^\d+\.0+$")


def located(where: str, problem: str) -> DataError:
  return DataError(f"{where}: {problem}")


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


def json_rows(path: PathLike) -> Iterator[common.Row]:
  """The rows of a JSON array file, or of JSON lines when the file is not an array.

  The official sample data mixes both (`fos_small.json` is an array,
  `search_small.jsonl` JSON lines), so the form is sniffed from the first byte.
  """
  p = require_file(path, "JSON file")
  with open(p, "rb") as f:
    head = f.read(4096).removeprefix(codecs.BOM_UTF8).lstrip()
  return common.read_json_records(p) if head.startswith(b"[") else common.read_jsonl(p)


def objects(rows: Iterable[common.Row], fields: tuple[str, ...] = ()
            ) -> Iterator[tuple[str, dict]]:
  """(where, record) for each row, which must be a JSON object holding `fields`."""
  for row in rows:
    common.require(row.value, fields, row.where)
    yield row.where, row.value


# ------------------------------------------------------------------ papers, meta, training

ID_KEYS = ("doc_id", "corpus_id")


def _text(value: Any, where: str, field: str) -> str:
  if value is None:
    return ""
  if isinstance(value, float) and math.isnan(value):  # pandas' missing value
    return ""
  if not isinstance(value, str):
    raise located(where, f"field {field!r}: expected text, got {type(value).__name__}")
  return value.strip()


def _year(value: Any, where: str) -> str | None:
  """2019, 2019.0 and "2019" -> "2019"; None, "" and NaN -> None (field omitted)."""
  if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
    return None
  try:
    number = float(value)
  except (TypeError, ValueError):
    raise located(where, f"field 'year': {value!r} is not a year") from None
  if isinstance(value, bool) or not number.is_integer():
    raise located(where, f"field 'year': {value!r} is not a whole year")
  return str(int(number))


def paper(record: Any, where: str, *, id_required: bool = True,
          fallback_id: str | None = None) -> dict[str, str]:
  """A normalised paper from a meta/candidate/triplet record."""
  common.require(record, (), where)
  key = next((k for k in ID_KEYS if record.get(k) not in (None, "")), None)
  if key is not None:
    doc_id = normalise_id(record[key], where, key)
  elif fallback_id is not None or not id_required:
    doc_id = fallback_id or ""
  else:
    raise located(where, f"missing field 'doc_id' (or 'corpus_id'); has {sorted(record)}")
  out = {"doc_id": doc_id, "title": _text(record.get("title"), where, "title"),
         "abstract": _text(record.get("abstract"), where, "abstract")}
  if not out["title"] and not out["abstract"]:
    raise located(where, f"paper {doc_id!r} has neither title nor abstract")
  venue = _text(record.get("venue"), where, "venue") if "venue" in record else ""
  if venue:
    out["venue"] = venue
  year = _year(record.get("year"), where)
  if year is not None:
    out["year"] = year
  return out


def read_meta(path: PathLike) -> list[dict[str, str]]:
  """A simple-format meta file: one paper per row, keyed by doc_id (or corpus_id)."""
  out = [paper(row.value, row.where) for row in json_rows(path)]
  if not out:
    raise located(str(path), "no papers")
  return out


def _query(value: Any, where: str, row_id: str | None) -> dict[str, str]:
  if isinstance(value, str):  # Search: the query is raw text, keyed by the row's doc_id.
    if not value.strip():
      raise located(where, "field 'query': empty query text")
    return {"doc_id": row_id or "", "query": value.strip()}
  return paper(value, f"{where} query", fallback_id=row_id)


def read_ir_rows(path: PathLike, *, graded: bool = False) -> list[dict[str, Any]]:
  """IR rows `{doc_id?, query, candidates}`; `graded` also requires candidate scores.

  A text query becomes `{"doc_id": row doc_id, "query": text}` (official: the
  title of a pseudo-paper with the row's doc_id).
  """
  rows = []
  for where, record in objects(json_rows(path), ("query", "candidates")):
    row_id = next((normalise_id(record[k], where, k) for k in ID_KEYS
                   if record.get(k) not in (None, "")), None)
    cands = record["candidates"]
    if not isinstance(cands, list) or not cands:
      raise located(where, "field 'candidates': expected a non-empty list")
    candidates = []
    for i, c in enumerate(cands):
      cw = f"{where} candidate {i}"
      cand = paper(c, cw)
      if graded or "score" in c:
        score = c.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or (
            isinstance(score, float) and not score.is_integer()):
          raise located(cw, f"field 'score': expected an integer grade, got {score!r}")
        cand["score"] = int(score)
      candidates.append(cand)
    row = {"query": _query(record["query"], where, row_id), "candidates": candidates}
    if row_id is not None:
      row["doc_id"] = row_id
    rows.append(row)
  if not rows:
    raise located(str(path), "no rows")
  return rows


def read_label_list(path: PathLike) -> list[str]:
  """`fos_labels.txt` / `mesh_descriptors.txt`: one label per line; line order = class index."""
  p = require_file(path, "label list")
  # Blank lines at the end (an editor's) are no labels; the official {l.strip(): i} over
  # readlines() would make one more class, '', of them (a blank line inside is refused).
  labels = [l.strip() for l in p.read_text(encoding="utf-8-sig").rstrip().splitlines()]
  if any(not l for l in labels):
    raise located(f"{p}:{labels.index('') + 1}", "empty label line")
  if len(set(labels)) != len(labels):
    dup = next(l for l in labels if labels.count(l) > 1)
    raise located(f"{p}:{labels.index(dup) + 1}", f"duplicate label {dup!r}")
  return labels


def read_training(path: PathLike, label_field: str, *,
                  label_set: Sequence[str] | None = None) -> list[dict[str, Any]]:
  """Classification / regression training rows: a paper plus `label` from `label_field`.

  `labels_text` (FoS) gives a list of names, `descriptor` (MeSH) one name,
  `log_citations` / `scaled_year` a float. Names are checked against `label_set`.
  """
  out = []
  allowed = set(label_set) if label_set is not None else None
  for where, record in objects(json_rows(path), (label_field,)):
    value = record[label_field]
    if isinstance(value, list):
      if not value or not all(isinstance(v, str) for v in value):
        raise located(where, f"field {label_field!r}: expected a non-empty list of names")
      names = value
    elif isinstance(value, str):
      names = [value]
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
      names = None
    else:
      raise located(where, f"field {label_field!r}: unsupported label {value!r}")
    if names is not None and allowed is not None:
      unknown = [n for n in names if n not in allowed]
      if unknown:
        raise located(where, f"field {label_field!r}: unknown label(s) {unknown}")
    out.append({**paper(record, where), "label": value})
  if not out:
    raise located(str(path), "no rows")
  return out


def read_triplets(path: PathLike) -> list[dict[str, dict[str, str]]]:
  """SPECTER citation triplets `{query, pos, neg}` (papers keyed by corpus_id or sha)."""
  out = []
  for where, record in objects(json_rows(path), ("query", "pos", "neg")):
    triplet = {}
    for part in ("query", "pos", "neg"):
      value = record[part]
      common.require(value, (), f"{where} {part}")
      sha = value.get("sha")
      triplet[part] = paper(value, f"{where} {part}",
                            fallback_id=str(sha) if sha else None)
    out.append(triplet)
  return out


def iter_papers_of_ir_rows(rows: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, dict]]:
  """('query' | 'candidates', paper) for each distinct doc_id: every row's query, then
  every row's candidates, as the official `IRDataset.batches` embeds them, so a paper
  that is one row's candidate and another's query is embedded as a query."""
  seen: set[str] = set()
  items = [("query", row["query"]) for row in rows] + [
      ("candidates", c) for row in rows for c in row["candidates"]]
  for role, item in items:
    if item["doc_id"] and item["doc_id"] in seen:
      continue
    seen.add(item["doc_id"])
    yield role, item


# ------------------------------------------------------------------ embeddings

def read_embeddings(path: PathLike, *, float16: bool = False) -> dict[str, np.ndarray]:
  """`{"doc_id": ..., "embedding": [...]}` lines -> {doc_id: float32 vector}.

  `float16=True` mimics the official reload (`np.float16`), which tasks sharing a
  saved cache (Max hIndex, SciDocs MeSH, CoView/CoCite/CoRead) are scored with.
  A repeated doc_id keeps the last vector, as the official dict does.
  """
  out: dict[str, np.ndarray] = {}
  dim = None
  for where, record in objects(common.read_jsonl(path)):
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
    with open(p, encoding="utf-8-sig", newline="") as f:
      reader = csv.DictReader(f)
      if not reader.fieldnames or not {"paper_id", "label"} <= set(reader.fieldnames):
        raise located(f"{p}:1", f"header must name 'paper_id' and 'label', got "
                      f"{reader.fieldnames}")
      for record in reader:
        where = f"{p}:{reader.line_num}"
        rows.append((normalise_id(record["paper_id"], where, "paper_id"),
                     _label(record["label"], where)))
  else:
    for where, record in objects(common.read_jsonl(p), ("paper_id", "label")):
      rows.append((normalise_id(record["paper_id"], where, "paper_id"),
                   _label(record["label"], where)))
  if not rows:
    raise located(str(p), "no rows")
  return rows


# ------------------------------------------------------------------ qrels, reviewers

def read_qrels(path: PathLike) -> dict[str, dict[str, int]]:
  """`{query_id, cand_id, score}` lines -> {query_id: {cand_id: score}}.

  A repeated (query, candidate) pair keeps its FIRST score, as the official
  `IREvaluator.get_qc_pairs` does (it sets a pair only if it is not there yet).
  """
  qrels: dict[str, dict[str, int]] = {}
  for where, record in objects(common.read_jsonl(path), ("query_id", "cand_id", "score")):
    score = record["score"]
    if isinstance(score, bool) or not isinstance(score, (int, float)) or (
        isinstance(score, float) and not score.is_integer()):
      raise located(where, f"field 'score': expected an integer grade, got {score!r}")
    qid = normalise_id(record["query_id"], where, "query_id")
    qrels.setdefault(qid, {}).setdefault(normalise_id(record["cand_id"], where, "cand_id"),
                                         int(score))
  if not qrels:
    raise located(str(path), "no qrels")
  return qrels


def read_reviewer_metadata(path: PathLike) -> dict[str, list[str]]:
  """`{r_id, papers: [doc_id]}` lines -> {reviewer id: [paper ids]}."""
  out = {}
  for where, record in objects(common.read_jsonl(path), ("r_id", "papers")):
    papers = record["papers"]
    if not isinstance(papers, list) or not papers:
      raise located(where, "field 'papers': expected a non-empty list of paper ids")
    out[normalise_id(record["r_id"], where, "r_id")] = [
        normalise_id(pid, where, "papers") for pid in papers]
  return out
