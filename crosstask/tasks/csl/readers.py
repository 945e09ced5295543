"""CSL's two official data forms, read into full records (CSL's knowledge only).

* Benchmark form: `<root>/csl/benchmark/{ts,kg,cls_ctg,cls_dcp}/<split>.tsv`,
  rows `prompt \t text_a \t text_b`. The four files of a split hold the same
  papers in the same order, so joining them row by row gives full records; the
  join is checked (why: a shuffled or truncated file would silently pair one
  paper's title with another's abstract).
* Full-dataset form: `<root>/csl/csl_camera_readly.tsv` (ydli-ai/CSL "Full
  dataset"), one paper per row `title \t abstract \t keywords \t discipline \t
  category`, read as split `full`.

A record is `{"title", "abstract", "keywords": [..], "category", "discipline"}`.
The root (str or os.PathLike) defaults to `common.readers.data_root()`, resolved
at read time: $CROSSTASK_DATA_DIR, else the bundled sample. Row errors, file:line
locations and `on_bad_row` come from `common.readers`.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator

from crosstask.tasks.common import readers as common
from crosstask.tasks.common.readers import BadRows
from crosstask.tasks.common.readers import DataError
from crosstask.tasks.common.readers import data_root
from crosstask.tasks.csl import schema as S

BENCHMARK_TASKS = ("ts", "kg", "cls_ctg", "cls_dcp")
FULL_FILE = "csl_camera_readly.tsv"
FULL_SPLIT = "full"
FULL_COLUMNS = ("title", "abstract", "keywords", "discipline", "category")
CSLDataError = DataError  # the name CSL code and tests have used

__all__ = ["BadRows", "CSLDataError", "DataError", "data_root", "benchmark_files",
           "check_split", "read_benchmark", "read_full", "read_records", "write_benchmark",
           "write_full"]

Root = str | os.PathLike | None


def _root(root: Root) -> pathlib.Path:
  return data_root() if root is None else common.as_path(root)


def benchmark_files(split: str, root: Root = None) -> dict[str, pathlib.Path]:
  root = _root(root)
  return {t: root / "csl" / "benchmark" / t / f"{split}.tsv" for t in BENCHMARK_TASKS}


def check_split(split: str, root: Root = None) -> dict[str, pathlib.Path]:
  """The files of `split`; FileNotFoundError naming every file looked for if any is missing."""
  if split == FULL_SPLIT:
    path = _root(root) / "csl" / FULL_FILE
    if not path.is_file():
      raise FileNotFoundError(f"CSL full dataset not found: looked for {path}")
    return {FULL_SPLIT: path}
  files = benchmark_files(split, root)
  missing = [str(p) for p in files.values() if not p.is_file()]
  if missing:
    raise FileNotFoundError(
        f"CSL split {split!r} needs all four benchmark files; missing: {', '.join(missing)}")
  return files


def _make_record(title, abstract, keywords, category, discipline) -> dict:
  return {"title": title, "abstract": abstract, "keywords": S.split_keywords(keywords),
          "category": category, "discipline": discipline}


def read_benchmark(split: str, root: Root = None, on_bad_row: str = "raise",
                   bad: BadRows | None = None) -> Iterator[dict]:
  """Full records of `split` by joining the four benchmark files row by row."""
  common.check_on_bad_row(on_bad_row)
  files = check_split(split, root)
  bad = bad if bad is not None else BadRows()
  # Row problems are judged per row position (scan_tsv keeps a skipped row as
  # None), so a bad row in one file drops that paper rather than shifting the join.
  rows = {t: list(common.scan_tsv(p, 3, on_bad_row=on_bad_row, bad=bad))
          for t, p in files.items()}
  counts = {t: len(r) for t, r in rows.items()}
  if len(set(counts.values())) != 1:
    raise DataError("CSL benchmark files of split %r have different row counts: %s" % (
        split, ", ".join(f"{files[t]}={n}" for t, n in counts.items())))
  for ts, kg, ctg, dcp in zip(*(rows[t] for t in BENCHMARK_TASKS)):
    if any(r.value is None for r in (ts, kg, ctg, dcp)):
      continue
    (_, abstract, title), (_, kg_text, keywords) = ts.value, kg.value
    (_, ctg_title, category), (_, dcp_abstract, discipline) = ctg.value, dcp.value
    where = ", ".join(r.where for r in (ts, kg, ctg, dcp))
    if ctg_title != title:
      raise DataError(f"join out of step: title in ts ({title[:30]!r}) != title in "
                      f"cls_ctg ({ctg_title[:30]!r}) at {where}")
    if dcp_abstract != abstract or not kg_text.startswith(abstract):
      raise DataError(f"join out of step: abstract differs between ts, kg and cls_dcp at {where}")
    yield _make_record(title, abstract, keywords, category, discipline)


def read_full(root: Root = None, on_bad_row: str = "raise",
              bad: BadRows | None = None) -> Iterator[dict]:
  """Full records from the full-dataset TSV (`csl/csl_camera_readly.tsv`)."""
  path = check_split(FULL_SPLIT, root)[FULL_SPLIT]
  for row in common.read_tsv(path, 5, on_bad_row=on_bad_row, bad=bad):
    title, abstract, keywords, discipline, category = row.value
    yield _make_record(title, abstract, keywords, category, discipline)


def read_records(split: str, root: Root = None, on_bad_row: str = "raise",
                 bad: BadRows | None = None) -> Iterator[dict]:
  """Full records of `split` ('train', 'dev', 'test', or 'full' for the full dataset)."""
  common.check_on_bad_row(on_bad_row)
  if split == FULL_SPLIT:
    return read_full(root, on_bad_row, bad)
  return read_benchmark(split, root, on_bad_row, bad)


# ------------------------------------------------------------------------- writers


def _check_writable(record: dict, index: int) -> list[str]:
  """The record's fields as text in schema order; an error naming record and field."""
  values = [S.KEYWORD_SEP.join(record[f]) if f == "keywords" else record[f] for f in S.FIELDS]
  for f, v in zip(S.FIELDS, values):
    if not v or "\t" in v or "\n" in v:
      raise ValueError(f"record {index}: cannot write {f} {v!r}: empty or contains a tab/newline")
  return values


def write_benchmark(records: list[dict], root: str | os.PathLike,
                    split: str) -> dict[str, pathlib.Path]:
  """Writes records as the four official benchmark files of `split` under `root`."""
  files = benchmark_files(split, common.as_path(root))
  rows = {t: [] for t in BENCHMARK_TASKS}
  for i, r in enumerate(records):
    title, abstract, keywords, category, discipline = _check_writable(r, i)
    rows["ts"].append(("to title", abstract, title))
    rows["kg"].append(("to keywords", f"{abstract} {title}", keywords))
    rows["cls_ctg"].append(("to category", title, category))
    rows["cls_dcp"].append(("to discipline", abstract, discipline))
  for t, path in files.items():
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(row) + "\n" for row in rows[t]), encoding="utf-8")
  return files


def write_full(records: list[dict], root: str | os.PathLike) -> pathlib.Path:
  """Writes records in the full-dataset form (`csl/csl_camera_readly.tsv`)."""
  path = common.as_path(root) / "csl" / FULL_FILE
  path.parent.mkdir(parents=True, exist_ok=True)
  lines = []
  for i, r in enumerate(records):
    title, abstract, keywords, category, discipline = _check_writable(r, i)
    lines.append("\t".join((title, abstract, keywords, discipline, category)) + "\n")
  path.write_text("".join(lines), encoding="utf-8")
  return path
