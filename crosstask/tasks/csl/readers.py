"""Readers for the CSL data in its two official forms, yielding full records.

* Benchmark form: `<root>/csl/benchmark/{ts,kg,cls_ctg,cls_dcp}/<split>.tsv`,
  rows `prompt \t text_a \t text_b`. The four files of a split hold the same
  papers in the same order, so joining them row by row gives full records; the
  join is checked (why: a shuffled or truncated file would silently pair one
  paper's title with another's abstract).
* Full-dataset form: `<root>/csl/csl_camera_readly.tsv` (ydli-ai/CSL "Full
  dataset"), one paper per row `title \t abstract \t keywords \t discipline \t
  category`, read as split `full`.

A record is `{"title", "abstract", "keywords": [..], "category", "discipline"}`.
The root is resolved at read time: $CROSSTASK_DATA_DIR, else the bundled sample.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Iterator

from crosstask import paths
from crosstask.tasks.csl import fields as F

BENCHMARK_TASKS = ("ts", "kg", "cls_ctg", "cls_dcp")
FULL_FILE = "csl_camera_readly.tsv"
FULL_SPLIT = "full"
FULL_COLUMNS = ("title", "abstract", "keywords", "discipline", "category")


class CSLDataError(ValueError):
  """Malformed or inconsistent CSL data; the message names file and line."""


@dataclasses.dataclass
class BadRows:
  """Counts (and the first messages) of rows skipped with on_bad_row='skip'."""
  count: int = 0
  messages: list[str] = dataclasses.field(default_factory=list)

  def add(self, message: str) -> None:
    self.count += 1
    if len(self.messages) < 20:
      self.messages.append(message)


def data_root() -> pathlib.Path:
  """$CROSSTASK_DATA_DIR if set, else the bundled sample (same layout)."""
  return paths.data_dir() or paths.SAMPLE_DIR


def benchmark_files(split: str, root: pathlib.Path | None = None) -> dict[str, pathlib.Path]:
  root = root or data_root()
  return {t: root / "csl" / "benchmark" / t / f"{split}.tsv" for t in BENCHMARK_TASKS}


def check_split(split: str, root: pathlib.Path | None = None) -> dict[str, pathlib.Path]:
  """The files of `split`; FileNotFoundError naming every file looked for if any is missing."""
  if split == FULL_SPLIT:
    path = (root or data_root()) / "csl" / FULL_FILE
    if not path.is_file():
      raise FileNotFoundError(f"CSL full dataset not found: looked for {path}")
    return {FULL_SPLIT: path}
  files = benchmark_files(split, root)
  missing = [str(p) for p in files.values() if not p.is_file()]
  if missing:
    raise FileNotFoundError(
        f"CSL split {split!r} needs all four benchmark files; missing: {', '.join(missing)}")
  return files


def read_tsv(path: pathlib.Path, ncols: int, on_bad_row: str = "raise",
             bad: BadRows | None = None) -> Iterator[tuple[int, list[str]]]:
  """(line number, columns) of each good row; bad rows raise or are counted."""
  for lineno, cols in _scan(path, ncols, on_bad_row, bad):
    if cols is not None:
      yield lineno, cols


def _scan(path, ncols, on_bad_row, bad):
  """(line number, columns or None for a skipped bad row) of each non-blank line."""
  if on_bad_row not in ("raise", "skip"):
    raise ValueError(f"on_bad_row must be 'raise' or 'skip', got {on_bad_row!r}")
  bad = bad if bad is not None else BadRows()
  with open(path, "rb") as f:
    for lineno, raw in enumerate(f, start=1):
      raw = raw.rstrip(b"\r\n")
      if not raw.strip():
        continue
      problem = None
      try:
        cols = raw.decode("utf-8").split("\t")
      except UnicodeDecodeError as e:
        problem = f"invalid UTF-8 at byte {e.start}"
      else:
        empty = [i for i, c in enumerate(cols, start=1) if not c.strip()]
        if len(cols) != ncols:
          problem = f"expected {ncols} tab-separated columns, got {len(cols)}"
        elif empty:
          problem = f"empty field in column {empty[0]}"
      if problem:
        message = f"{path}:{lineno}: {problem}"
        if on_bad_row == "raise":
          raise CSLDataError(message + " (pass on_bad_row='skip' to skip such rows)")
        bad.add(message)
        yield lineno, None
        continue
      yield lineno, [c.strip() for c in cols]


def _make_record(title, abstract, keywords, category, discipline) -> dict:
  return {"title": title, "abstract": abstract, "keywords": F.split_keywords(keywords),
          "category": category, "discipline": discipline}


def read_benchmark(split: str, root: pathlib.Path | None = None, on_bad_row: str = "raise",
                   bad: BadRows | None = None) -> Iterator[dict]:
  """Full records of `split` by joining the four benchmark files row by row."""
  files = check_split(split, root)
  bad = bad if bad is not None else BadRows()
  # Row-level problems are judged per row position, so a bad row in one file
  # drops that paper from the join rather than shifting the other files.
  rows = {t: list(_scan(p, 3, on_bad_row, bad)) for t, p in files.items()}
  counts = {t: len(r) for t, r in rows.items()}
  if len(set(counts.values())) != 1:
    raise CSLDataError("CSL benchmark files of split %r have different row counts: %s" % (
        split, ", ".join(f"{files[t]}={n}" for t, n in counts.items())))
  for ts, kg, ctg, dcp in zip(*(rows[t] for t in BENCHMARK_TASKS)):
    if any(cols is None for _, cols in (ts, kg, ctg, dcp)):
      continue
    (ln, (_, abstract, title)), (lk, (_, kg_text, keywords)) = ts, kg
    (lc, (_, ctg_title, category)), (ld, (_, dcp_abstract, discipline)) = ctg, dcp
    where = (f"{files['ts']}:{ln}, {files['kg']}:{lk}, {files['cls_ctg']}:{lc}, "
             f"{files['cls_dcp']}:{ld}")
    if ctg_title != title:
      raise CSLDataError(f"join out of step: title in ts ({title[:30]!r}) != title in "
                         f"cls_ctg ({ctg_title[:30]!r}) at {where}")
    if dcp_abstract != abstract or not kg_text.startswith(abstract):
      raise CSLDataError(f"join out of step: abstract differs between ts, kg and cls_dcp at "
                         f"{where}")
    yield _make_record(title, abstract, keywords, category, discipline)


def read_full(root: pathlib.Path | None = None, on_bad_row: str = "raise",
              bad: BadRows | None = None) -> Iterator[dict]:
  """Full records from the full-dataset TSV (`csl/csl_camera_readly.tsv`)."""
  path = check_split(FULL_SPLIT, root)[FULL_SPLIT]
  for _, (title, abstract, keywords, discipline, category) in read_tsv(path, 5, on_bad_row, bad):
    yield _make_record(title, abstract, keywords, category, discipline)


def read_records(split: str, root: pathlib.Path | None = None, on_bad_row: str = "raise",
                 bad: BadRows | None = None) -> Iterator[dict]:
  """Full records of `split` ('train', 'dev', 'test', or 'full' for the full dataset)."""
  if split == FULL_SPLIT:
    return read_full(root, on_bad_row, bad)
  return read_benchmark(split, root, on_bad_row, bad)


# ------------------------------------------------------------------------- writers


def _check_writable(record: dict, index: int) -> list[str]:
  """The record's fields as text in `F.FIELDS` order; an error naming record and field."""
  values = [F.KEYWORD_SEP.join(record[f]) if f == "keywords" else record[f] for f in F.FIELDS]
  for f, v in zip(F.FIELDS, values):
    if not v or "\t" in v or "\n" in v:
      raise ValueError(f"record {index}: cannot write {f} {v!r}: empty or contains a tab/newline")
  return values


def write_benchmark(records: list[dict], root: pathlib.Path, split: str) -> dict[str, pathlib.Path]:
  """Writes records as the four official benchmark files of `split` under `root`."""
  files = benchmark_files(split, root)
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


def write_full(records: list[dict], root: pathlib.Path) -> pathlib.Path:
  """Writes records in the full-dataset form (`csl/csl_camera_readly.tsv`)."""
  path = root / "csl" / FULL_FILE
  path.parent.mkdir(parents=True, exist_ok=True)
  lines = []
  for i, r in enumerate(records):
    title, abstract, keywords, category, discipline = _check_writable(r, i)
    lines.append("\t".join((title, abstract, keywords, discipline, category)) + "\n")
  path.write_text("".join(lines), encoding="utf-8")
  return path
