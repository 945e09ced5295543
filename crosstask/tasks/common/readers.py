"""Readers for the official data formats, reporting where a bad row is.

Every reader yields `Row(where, value)`: `where` is `path:line` for line formats
(TSV, JSON lines) and `path[record 3]` (or a SQuAD path to the question) for
whole-file JSON, so a benchmark's own checks can name the same place. A bad
row raises `DataError`, or with `on_bad_row="skip"` is counted in a `BadRows`
and left out (why: one malformed line in a 400k-row file should not cost the
run, but it must not vanish silently either).
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import os
import pathlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from crosstask import paths

PathLike = str | os.PathLike
ON_BAD_ROW = ("raise", "skip")
# What the researcher can do: the jobs read every row (a malformed one is not dropped
# behind their back); a reader called from Python counts and skips them on request.
SKIP_HINT = (" (fix or remove the row; a reader called from Python skips such rows with "
             "on_bad_row='skip')")


DataError = paths.DataError  # Malformed data: the message names the file and line.


@dataclasses.dataclass
class BadRows:
  """Counts (and keeps the first messages of) rows skipped with on_bad_row='skip'."""
  count: int = 0
  messages: list[str] = dataclasses.field(default_factory=list)

  def add(self, message: str) -> None:
    self.count += 1
    if len(self.messages) < 20:
      self.messages.append(message)


@dataclasses.dataclass(frozen=True)
class Row:
  """One row of a data file and where it came from."""
  where: str
  value: Any


def as_path(path: PathLike) -> pathlib.Path:
  """`path` (str or os.PathLike, `~` expanded) as a pathlib.Path."""
  return pathlib.Path(os.path.expanduser(os.fspath(path)))


def data_root() -> pathlib.Path:
  """$CROSSTASK_DATA_DIR if set, else the bundled sample; resolved at call time."""
  return paths.data_dir() or paths.SAMPLE_DIR


def require_file(path: PathLike, what: str) -> pathlib.Path:
  """`path` as a Path; FileNotFoundError naming it and what it should be."""
  file = as_path(path)
  if not file.is_file():
    raise FileNotFoundError(f"{what} not found: looked for {file}")
  return file


def check_on_bad_row(value) -> str:
  if value not in ON_BAD_ROW:
    raise ValueError(f"on_bad_row must be 'raise' or 'skip', got {value!r}")
  return value


def field_error(where: str, field: str, problem: str) -> DataError:
  return DataError(f"{where}: field {field!r}: {problem}")


def require(record: Mapping, fields: Sequence[str], where: str) -> None:
  """DataError naming the fields `record` lacks (or that it is no JSON object)."""
  if not isinstance(record, Mapping):
    raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
  missing = [f for f in fields if f not in record]
  if missing:
    raise DataError(f"{where}: missing field(s) {', '.join(map(repr, missing))}; "
                    f"has {sorted(record)}")


def _bad_rows(on_bad_row: str, bad: BadRows | None) -> BadRows:
  """Checks `on_bad_row`; the BadRows to count skipped rows in (a new one for None)."""
  check_on_bad_row(on_bad_row)
  return bad if bad is not None else BadRows()


def _problem(message: str, on_bad_row: str, bad: BadRows) -> None:
  """Raises the located `message`, or counts it when skipping."""
  if on_bad_row == "raise":
    raise DataError(message + SKIP_HINT)
  bad.add(message)


def scan_tsv(path: PathLike, ncols: int | None = None, *, on_bad_row: str = "raise",
             bad: BadRows | None = None, allow_empty: bool = False,
             skip_header: bool = False) -> Iterator[Row]:
  """Every non-blank line as a Row (a leading BOM dropped); a skipped bad line comes as
  Row(where, None).

  Keeping skipped lines in place lets a caller join several files row by row
  (CSL's four benchmark files) without one bad line shifting the others.
  """
  bad = _bad_rows(on_bad_row, bad)
  file = require_file(path, "TSV file")
  header = skip_header
  with open(file, "rb") as f:
    for lineno, raw in enumerate(f, start=1):
      raw = raw.rstrip(b"\r\n")
      if lineno == 1:
        raw = raw.removeprefix(codecs.BOM_UTF8)
      if not raw.strip():
        continue
      if header:
        header = False
        continue
      where = f"{file}:{lineno}"
      problem = None
      try:
        cols = raw.decode("utf-8").split("\t")
      except UnicodeDecodeError as e:
        problem = f"invalid UTF-8 at byte {e.start}"
      else:
        empty = [i for i, c in enumerate(cols, start=1) if not c.strip()]
        if ncols is not None and len(cols) != ncols:
          problem = f"expected {ncols} tab-separated columns, got {len(cols)}"
        elif empty and not allow_empty:
          problem = f"empty field in column {empty[0]}"
      if problem:
        _problem(f"{where}: {problem}", on_bad_row, bad)
        yield Row(where, None)
        continue
      yield Row(where, [c.strip() for c in cols])


def read_tsv(path: PathLike, ncols: int | None = None, *, on_bad_row: str = "raise",
             bad: BadRows | None = None, allow_empty: bool = False,
             skip_header: bool = False) -> Iterator[Row]:
  """Rows of tab-separated columns (stripped); blank lines are ignored."""
  for row in scan_tsv(path, ncols, on_bad_row=on_bad_row, bad=bad, allow_empty=allow_empty,
                      skip_header=skip_header):
    if row.value is not None:
      yield row


def scan_jsonl(path: PathLike, *, on_bad_row: str = "raise",
               bad: BadRows | None = None) -> Iterator[Row]:
  """Every non-blank line as a Row of its JSON object; a skipped bad line comes as
  Row(where, None), so a reader that numbers records by their place in the file (a
  file without ids) numbers the rest as the file does. A leading BOM is dropped."""
  bad = _bad_rows(on_bad_row, bad)
  file = require_file(path, "JSON-lines file")
  with open(file, "rb") as f:
    for lineno, raw in enumerate(f, start=1):
      if lineno == 1:
        raw = raw.removeprefix(codecs.BOM_UTF8)
      if not raw.strip():
        continue
      where = f"{file}:{lineno}"
      problem = None
      try:  # Without its newline: an error at the line's end is at its last column, not 1.
        value = json.loads(raw.decode("utf-8").rstrip("\r\n"))
      except UnicodeDecodeError as e:
        problem = f"invalid UTF-8 at byte {e.start}"
      except json.JSONDecodeError as e:
        problem = f"invalid JSON at column {e.colno}: {e.msg}"
      else:
        if not isinstance(value, dict):
          problem = f"expected a JSON object, got {type(value).__name__}"
      if problem:
        _problem(f"{where}: {problem}", on_bad_row, bad)
        yield Row(where, None)
        continue
      yield Row(where, value)


def read_jsonl(path: PathLike, *, on_bad_row: str = "raise",
               bad: BadRows | None = None) -> Iterator[Row]:
  """One JSON object per non-blank line (a leading BOM dropped)."""
  for row in scan_jsonl(path, on_bad_row=on_bad_row, bad=bad):
    if row.value is not None:
      yield row


def read_json(path: PathLike) -> Any:
  """A whole JSON file; a syntax error names path:line:column."""
  file = require_file(path, "JSON file")
  raw = file.read_bytes()
  try:
    text = raw.decode("utf-8-sig")
  except UnicodeDecodeError as e:
    line = raw[:e.start].count(b"\n") + 1
    raise DataError(f"{file}:{line}: invalid UTF-8 at byte {e.start}") from None
  try:
    return json.loads(text)
  except json.JSONDecodeError as e:
    raise DataError(f"{file}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None


def _whole_json(path: PathLike, on_bad_row: str, bad: BadRows | None
                ) -> tuple[Any, pathlib.Path, BadRows]:
  """(the file's JSON value, its path, the BadRows) for a reader of a whole-file JSON."""
  bad = _bad_rows(on_bad_row, bad)  # A bad on_bad_row is named before the file is read.
  return read_json(path), as_path(path), bad


def read_json_records(path: PathLike, *, on_bad_row: str = "raise",
                      bad: BadRows | None = None) -> Iterator[Row]:
  """The records of a file holding one JSON list (objects or lists, e.g. CLUE C3)."""
  data, file, bad = _whole_json(path, on_bad_row, bad)
  if not isinstance(data, list):
    raise DataError(f"{file}: expected a JSON list of records, got {type(data).__name__}")
  for i, value in enumerate(data):
    where = f"{file}[record {i}]"
    if not isinstance(value, (dict, list)):
      _problem(f"{where}: expected a JSON object or list, got {type(value).__name__}",
               on_bad_row, bad)
      continue
    yield Row(where, value)


def _answer_start(value, where: str) -> int:
  """A character offset: an int, or an int written as a string (which JSON writers from
  other tools emit; the official scorers read only the answer texts)."""
  if isinstance(value, str) and value.strip().lstrip("-").isdigit():
    return int(value)
  if isinstance(value, bool) or not isinstance(value, int):
    raise field_error(where, "answer_start", f"expected an int, got {value!r}")
  return value


def _squad_question(qa, where: str, title: str, context: str) -> dict:
  require(qa, ("id", "question", "answers"), where)
  answers = qa["answers"]
  if not isinstance(answers, list):
    raise field_error(where, "answers", f"expected a list, got {type(answers).__name__}")
  texts, starts = [], []
  for j, answer in enumerate(answers):
    require(answer, ("text",), f"{where}/answer {j}")
    texts.append(str(answer["text"]))
    starts.append(_answer_start(answer.get("answer_start", -1), f"{where}/answer {j}"))
  return {"id": str(qa["id"]), "title": title, "context": context,
          "question": str(qa["question"]), "answers": texts, "answer_starts": starts}


def read_squad(path: PathLike, *, on_bad_row: str = "raise",
               bad: BadRows | None = None) -> Iterator[Row]:
  """One Row per question of a SQuAD-style file (CMRC 2018 and friends)."""
  data, file, bad = _whole_json(path, on_bad_row, bad)
  require(data, ("data",), str(file))
  for i, article in enumerate(data["data"]):
    where_article = f"{file}[data {i}]"
    try:
      require(article, ("paragraphs",), where_article)
    except DataError as e:
      _problem(str(e), on_bad_row, bad)
      continue
    title = str(article.get("title", ""))
    for p, paragraph in enumerate(article["paragraphs"]):
      where_par = f"{file}[data {i}/paragraph {p}]"
      try:
        require(paragraph, ("context", "qas"), where_par)
      except DataError as e:
        _problem(str(e), on_bad_row, bad)
        continue
      for q, qa in enumerate(paragraph["qas"]):
        qid = qa.get("id") if isinstance(qa, Mapping) else None
        where = f"{file}[data {i}/paragraph {p}/qa {q}" + (f" id={qid}]" if qid else "]")
        try:
          yield Row(where, _squad_question(qa, where, title, str(paragraph["context"])))
        except DataError as e:
          _problem(str(e), on_bad_row, bad)


def convert(rows: Iterable[Row], fn: Callable[[Row], Any], *, on_bad_row: str = "raise",
            bad: BadRows | None = None) -> Iterator[dict]:
  """`fn` applied to each row: one record, several (an iterable), or None to drop the row.

  A DataError from `fn` is re-raised, or counted in `bad` when skipping.
  """
  bad = _bad_rows(on_bad_row, bad)
  for row in rows:
    try:
      out = fn(row)
      # Materialised inside the try, so a generator's DataError is handled too.
      records = [] if out is None else [out] if isinstance(out, Mapping) else list(out)
    except DataError as e:
      if on_bad_row == "raise":
        raise
      bad.add(str(e))
      continue
    for record in records:
      yield dict(record)
