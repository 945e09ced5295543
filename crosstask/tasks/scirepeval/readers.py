"""Readers for every file format the official SciRepEval code reads, as plain records.

* meta files (texts to embed; HF split `evaluation`): simple rows
  `{doc_id|corpus_id, title, abstract, ...}` and IR rows
  `{doc_id?, query: str | paper, candidates: [paper (+ score)]}`;
* training files: classification / regression rows, IR rows with graded
  candidates, SPECTER triplets `{query, pos, neg}`; label lists (one per line);
* evaluation files (re-exported from `crosstask.metrics.scirepeval.data`):
  probe splits `{paper_id, label}`, qrels, reviewer metadata, embeddings JSONL.

A paper becomes `{"doc_id": str, "title": str, "abstract": str, ["venue"], ["year"]}`:
ids normalised to strings (why: the official code mixes int and str ids), a
null or empty abstract becomes "" (the text is then the title alone), a float
year `2019.0` becomes "2019", an empty year or venue is dropped. JSON arrays and
JSON lines are both accepted; errors name `path:line` or `path[record i]`.
Pure Python: no TensorFlow or SeqIO.
"""

from __future__ import annotations

import math
import os
import pathlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from crosstask.metrics.scirepeval.data import (ScirepevalDataError, iter_json_records,
                                            located, normalise_id, read_embeddings,
                                            read_probe_split, read_qrels,
                                            read_reviewer_metadata, require_fields,
                                            require_file, require_object, write_embeddings)

__all__ = ["ScirepevalDataError", "paper", "read_meta", "read_ir_rows", "read_training",
           "read_triplets", "read_label_list", "read_embeddings", "read_probe_split",
           "read_qrels", "read_reviewer_metadata", "write_embeddings"]

ID_KEYS = ("doc_id", "corpus_id")
PathLike = str | os.PathLike


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
  record = require_object(record, where)
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
  out = [paper(record, where) for where, record in iter_json_records(path)]
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
  for where, record in iter_json_records(path):
    record = require_object(record, where)
    require_fields(record, ("query", "candidates"), where)
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
  labels = [l.strip() for l in p.read_text(encoding="utf-8").splitlines()]
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
  for where, record in iter_json_records(path):
    record = require_object(record, where)
    require_fields(record, (label_field,), where)
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
  for where, record in iter_json_records(path):
    record = require_object(record, where)
    require_fields(record, ("query", "pos", "neg"), where)
    triplet = {}
    for part in ("query", "pos", "neg"):
      value = require_object(record[part], f"{where} {part}")
      sha = value.get("sha")
      triplet[part] = paper(value, f"{where} {part}",
                            fallback_id=str(sha) if sha else None)
    out.append(triplet)
  return out


def iter_papers_of_ir_rows(rows: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, dict]]:
  """('query' | 'candidates', paper) for each distinct doc_id, queries first within a row."""
  seen: set[str] = set()
  for row in rows:
    for role, item in [("query", row["query"])] + [("candidates", c) for c in row["candidates"]]:
      if item["doc_id"] and item["doc_id"] in seen:
        continue
      seen.add(item["doc_id"])
      yield role, item
