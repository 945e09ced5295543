"""Readers for CiteSum and its transfer sets, each in its official layout.

Paths are relative to the data root ($CROSSTASK_DATA_DIR, else the bundled
sample); crosstask split names are train / validation / test everywhere.

* CiteSum `citesum/{train,val,test}.json`: JSON lines `src, tgt, paper_id,
  title, discipline`; `discipline` is a dict (HF card), a JSON string or a
  Python-repr string (derived parquet copies), or missing.
* SciTLDR `scitldr/SciTLDR-A/{train,dev,test}.jsonl`: `source` sentences,
  `target` TLDRs with the author's first and peer reviewers' after it.
* XSum: the official `xsum/bbc-summary-data/<id>.summary` files with
  `xsum/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json`, parsed as HF `xsum` 1.2.0
  does; or a JSON-lines export `xsum/<split>.jsonl` (`document, summary, id`).
* Gigaword `gigaword/org_data/{train,dev,test}.{src,tgt}.txt`, parsed as HF
  `gigaword` 1.2.0 does (`<unk>` -> `UNK` in train and dev only).

Every malformed row fails (or, with on_bad_row="skip", is counted) naming
file and line.
"""

from __future__ import annotations

import ast
import codecs
import io
import json
import os
import pathlib
from collections.abc import Iterator, Mapping

from crosstask.tasks.common import readers as R

SPLITS = ("train", "validation", "test")
CITESUM_FILES = {"train": "train.json", "validation": "val.json", "test": "test.json"}
SCITLDR_FILES = {"train": "train.jsonl", "validation": "dev.jsonl", "test": "test.jsonl"}
GIGAWORD_FILES = {"train": "train", "validation": "dev", "test": "test"}
XSUM_SPLIT_FILE = "XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json"
# Whole lines (newline included) HF xsum 1.2.0 drops: BBC share-widget text.
XSUM_REMOVE_LINES = frozenset(f"{line}\n" for line in (
    "Share this with", "Email", "Facebook", "Messenger", "Twitter", "Pinterest",
    "WhatsApp", "Linkedin", "LinkedIn", "Copy this link",
    "These are external links and will open in a new window"))
XSUM_SECTIONS = ("URL", "TITLE", "FIRST-SENTENCE", "RESTBODY")

PathLike = str | os.PathLike


def _root(root: PathLike | None) -> pathlib.Path:
  return pathlib.Path(root) if root is not None else R.data_root()


def _split_file(files: Mapping[str, str], split: str, what: str) -> str:
  try:
    return files[split]
  except KeyError:
    raise ValueError(f"{what} has no split {split!r}; choose one of {sorted(files)}") from None


def _object(row: R.Row) -> dict:
  if not isinstance(row.value, dict):
    raise R.DataError(f"{row.where}: expected a JSON object, got {type(row.value).__name__}")
  return row.value


def _text(record: Mapping, field: str, where: str, *, required: bool = True) -> str:
  """A string field, whitespace-stripped; missing/null is '' unless required."""
  value = record.get(field)
  if value is None and not required:
    return ""
  if not isinstance(value, str):
    raise R.field_error(where, field, f"expected a string, got {type(value).__name__}")
  if required and not value.strip():
    raise R.field_error(where, field, "is empty")
  return value.strip()


# ---------------------------------------------------------------------------- CiteSum


def parse_discipline(value, where: str) -> dict:
  """`{"venue", "journal", "fields_of_study": [..]}` from any of the released forms."""
  if value is None or (isinstance(value, str) and not value.strip()):
    value = {}
  if isinstance(value, str):
    try:
      value = json.loads(value)
    except json.JSONDecodeError:
      try:  # a Python repr, as str(dict) writes it
        value = ast.literal_eval(value)
      except (ValueError, SyntaxError):
        raise R.field_error(where, "discipline",
                            f"not a dict, JSON or Python-repr string: {value[:60]!r}") from None
  if not isinstance(value, dict):
    raise R.field_error(where, "discipline", f"expected a dict, got {type(value).__name__}")
  fields = value.get("mag_field_of_study") or []
  if isinstance(fields, str):
    fields = [fields]
  if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
    raise R.field_error(where, "discipline.mag_field_of_study",
                        f"expected a list of strings, got {fields!r}")
  return {"venue": value.get("venue") or "", "journal": value.get("journal") or "",
          "fields_of_study": [f.strip() for f in fields if f.strip()]}


def citesum_record(row: R.Row) -> dict:
  """One CiteSum row as a crosstask record.

  `discipline` is the top field of study ("We take the top field of study for
  each paper if there are multiple", §2.2), '' when the paper has none.
  `introduction`/`conclusion` are kept only when the data carry them.
  """
  raw = _object(row)
  R.require(raw, ("src", "tgt"), row.where)
  paper_id = raw.get("paper_id")
  if paper_id is not None and not isinstance(paper_id, (str, int)):
    raise R.field_error(row.where, "paper_id", f"expected str or int, got {paper_id!r}")
  meta = parse_discipline(raw.get("discipline"), row.where)
  record = {
      "paper_id": "" if paper_id is None else str(paper_id),
      "abstract": _text(raw, "src", row.where),
      "tldr": _text(raw, "tgt", row.where),
      "title": _text(raw, "title", row.where, required=False),
      "discipline": meta["fields_of_study"][0] if meta["fields_of_study"] else "",
      "fields_of_study": meta["fields_of_study"],
      "venue": meta["venue"],
      "journal": meta["journal"],
  }
  for extra in ("introduction", "conclusion"):
    if extra in raw:
      record[extra] = _text(raw, extra, row.where, required=False)
  return record


def citesum_path(split: str, root: PathLike | None = None) -> pathlib.Path:
  return _root(root) / "citesum" / _split_file(CITESUM_FILES, split, "CiteSum")


def read_citesum(split: str, root: PathLike | None = None, *, on_bad_row: str = "raise",
                 bad: R.BadRows | None = None) -> Iterator[dict]:
  """CiteSum records of `split` (train / validation / test)."""
  path = R.require_file(citesum_path(split, root), f"CiteSum {split} file")
  rows = R.read_jsonl(path, on_bad_row=on_bad_row, bad=bad)
  return R.convert(rows, citesum_record, on_bad_row=on_bad_row, bad=bad)


# ---------------------------------------------------------------------------- SciTLDR


def _string_list(raw: Mapping, field: str, where: str) -> list[str]:
  value = raw.get(field)
  if isinstance(value, str):
    value = [value]  # the official oracle script accepts a bare target string too
  if not isinstance(value, list) or not value:
    raise R.field_error(where, field, f"expected a non-empty list of strings, got {value!r:.60}")
  for i, item in enumerate(value):
    if not isinstance(item, str):
      raise R.field_error(where, f"{field}[{i}]", f"expected a string, got {item!r:.60}")
  return value


def scitldr_record(row: R.Row) -> dict:
  """One SciTLDR paper: `references` lists every TLDR, the author's first.

  `tldr` (the training target) is the author TLDR, `target[0]`; the README
  defines the rest as peer-review TLDRs. Input text is `" ".join(source)`
  (the paper uses the abstract only).
  """
  raw = _object(row)
  R.require(raw, ("source", "target"), row.where)
  sentences = _string_list(raw, "source", row.where)
  references = [" ".join(t.split()) for t in _string_list(raw, "target", row.where)]
  if not all(references):
    raise R.field_error(row.where, "target", "contains an empty TLDR")
  return {
      "paper_id": str(raw.get("paper_id", "")),
      "title": _text(raw, "title", row.where, required=False),
      "sentences": sentences,
      "abstract": " ".join(sentences),
      "tldr": raw["target"][0] if isinstance(raw["target"], list) else raw["target"],
      "references": references,
  }


def scitldr_path(split: str, root: PathLike | None = None, variant: str = "A") -> pathlib.Path:
  return (_root(root) / "scitldr" / f"SciTLDR-{variant}" /
          _split_file(SCITLDR_FILES, split, "SciTLDR"))


def read_scitldr(split: str, root: PathLike | None = None, *, on_bad_row: str = "raise",
                 bad: R.BadRows | None = None) -> Iterator[dict]:
  """SciTLDR-A records of `split` (validation = the official dev file)."""
  path = R.require_file(scitldr_path(split, root), f"SciTLDR-A {split} file")
  rows = R.read_jsonl(path, on_bad_row=on_bad_row, bad=bad)
  return R.convert(rows, scitldr_record, on_bad_row=on_bad_row, bad=bad)


# ---------------------------------------------------------------------------- XSum


def parse_xsum_summary(path: PathLike) -> dict:
  """`{"id", "document", "summary"}` of one `.summary` file, as HF xsum 1.2.0 parses it.

  Share-widget lines and blank lines are dropped, the rest joined and cut at
  `[SN]`: FIRST-SENTENCE is the summary, RESTBODY the document (lines kept).
  """
  path = pathlib.Path(path)
  lines = [(lineno, line) for lineno, line in _lines(path)
           if line not in XSUM_REMOVE_LINES and line.strip()]
  segs = "".join(line for _, line in lines).split("[SN]")
  names = segs[1:9:2]
  if len(segs) < 9 or tuple(names) != XSUM_SECTIONS:
    markers = [f"{n}:{l.strip()}" for n, l in lines if l.startswith("[SN]")]
    raise R.DataError(
        f"{path}: expected sections [SN]URL[SN], [SN]TITLE[SN], [SN]FIRST-SENTENCE[SN], "
        f"[SN]RESTBODY[SN] in that order; found {markers or 'none'} (line:marker)")
  document, summary = segs[8].strip(), segs[6].strip()
  if not summary:
    raise R.DataError(f"{path}: empty FIRST-SENTENCE section (the summary)")
  return {"id": path.name[:-len(".summary")], "document": document, "summary": summary}


def _xsum_raw(split: str, root: pathlib.Path) -> Iterator[dict]:
  split_path = R.require_file(root / "xsum" / XSUM_SPLIT_FILE, "XSum split file")
  ids = R.read_json(split_path)
  if not isinstance(ids, dict) or not isinstance(ids.get(split), list):
    raise R.field_error(str(split_path), split, "expected a list of BBC ids")
  data_dir = root / "xsum" / "bbc-summary-data"
  for i, id_ in enumerate(ids[split]):
    path = data_dir / f"{id_}.summary"
    if not path.is_file():
      raise FileNotFoundError(f"XSum article {path} listed in {split_path}[{split} {i}] "
                              "is missing")
    yield parse_xsum_summary(path)


def xsum_jsonl_record(row: R.Row) -> dict:
  raw = _object(row)
  R.require(raw, ("document", "summary"), row.where)
  return {"id": str(raw.get("id", "")), "document": _text(raw, "document", row.where),
          "summary": _text(raw, "summary", row.where)}


def read_xsum(split: str, root: PathLike | None = None, *, on_bad_row: str = "raise",
              bad: R.BadRows | None = None) -> Iterator[dict]:
  """XSum records of `split`: the JSON-lines export if present, else the official files."""
  _split_file(dict.fromkeys(SPLITS, ""), split, "XSum")
  base = _root(root)
  export = base / "xsum" / f"{split}.jsonl"
  if export.is_file():
    rows = R.read_jsonl(export, on_bad_row=on_bad_row, bad=bad)
    return R.convert(rows, xsum_jsonl_record, on_bad_row=on_bad_row, bad=bad)
  if not (base / "xsum" / XSUM_SPLIT_FILE).is_file():
    raise FileNotFoundError(f"XSum {split} not found: looked for {export} and for "
                            f"{base / 'xsum' / XSUM_SPLIT_FILE} with bbc-summary-data/")
  return _xsum_raw(split, base)


# ---------------------------------------------------------------------------- Gigaword


def _lines(path: pathlib.Path) -> list[tuple[int, str]]:
  """(line number, line) as HF's loaders read a file in text mode: universal newlines
  (`\r\n` and `\r` end a line too, each read as `\n`), a leading BOM dropped."""
  raw = path.read_bytes().removeprefix(codecs.BOM_UTF8)
  try:
    text = raw.decode("utf-8")
  except UnicodeDecodeError as e:
    before = raw[:e.start].replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    raise R.DataError(f"{path}:{len(before)}: invalid UTF-8 at byte {len(before[-1])}"
                      ) from None
  text = text.replace("\r\n", "\n").replace("\r", "\n")
  return list(enumerate(io.StringIO(text).readlines(), start=1))


def _without_trailing_blanks(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
  while lines and not lines[-1][1].strip():
    lines = lines[:-1]
  return lines


def gigaword_paths(split: str, root: PathLike | None = None) -> tuple[pathlib.Path, pathlib.Path]:
  name = _split_file(GIGAWORD_FILES, split, "Gigaword")
  base = _root(root) / "gigaword" / "org_data"
  return base / f"{name}.src.txt", base / f"{name}.tgt.txt"


def read_gigaword(split: str, root: PathLike | None = None, *, on_bad_row: str = "raise",
                  bad: R.BadRows | None = None) -> Iterator[dict]:
  """Gigaword `{"document", "headline"}` pairs, line i of `.src` with line i of `.tgt`.

  Line counts must agree (checked before anything is yielded: a missing line
  would silently pair every later article with the wrong headline).
  """
  on_bad_row = R.check_on_bad_row(on_bad_row)
  bad = bad if bad is not None else R.BadRows()
  src_path, tgt_path = gigaword_paths(split, root)
  # Blank lines at the end of a file (an editor's) pair with nothing; inside, they stay
  # rows, and an empty one is refused below.
  src = _without_trailing_blanks(_lines(R.require_file(src_path, f"Gigaword {split} articles")))
  tgt = _without_trailing_blanks(_lines(R.require_file(tgt_path, f"Gigaword {split} headlines")))
  if len(src) != len(tgt):
    raise R.DataError(f"Gigaword {split}: {src_path} has {len(src)} lines but {tgt_path} "
                      f"has {len(tgt)}; they must pair up line by line")
  replace_unk = split != "test"  # HF 1.2.0: the test set already writes UNK
  for (lineno, document), (_, headline) in zip(src, tgt):
    document, headline = document.strip(), headline.strip()
    if not document or not headline:
      message = f"{src_path if not document else tgt_path}:{lineno}: empty line"
      if on_bad_row == "raise":
        raise R.DataError(message + R.SKIP_HINT)
      bad.add(message)
      continue
    if replace_unk:
      document, headline = document.replace("<unk>", "UNK"), headline.replace("<unk>", "UNK")
    yield {"document": document, "headline": headline}


READERS = {"citesum": read_citesum, "scitldr": read_scitldr, "xsum": read_xsum,
           "gigaword": read_gigaword}
