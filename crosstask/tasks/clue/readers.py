"""Readers for the eleven CLUE and nine FewCLUE tasks in their official layouts.

`read(benchmark, task, split)` yields one plain record per example, in a shape
per task kind (below), whatever the release's quirks:

* `label_desc` (TNEWS) vs `label_des` (IFLYTEK) are checked against the label id;
  labels are strings in CLUE and ints in FewCLUE TNEWS/IFLYTEK: always a str here.
* `idx` vs `id` vs `index`: the record's own id, as in the file (str or int), is
  kept as `id`; a file without ids gets the record's position.
* NLI rows labelled `-` (no majority) are dropped from labelled splits.
* ChID (CLUE) answers live in `<split>_answer.json`; one record per blank.
* C3 file names of the CLUE zip (`d-train.json`) and of nlpdata (`c3-d-train.json`) give
  the genre; the one-file test split takes each document's from its lines (`c3_genre`).
* CLUE 1.1 tests are `test`, the 1.0 files `test_1_0`; FewCLUE has `train_0..4`,
  `dev_0..4`, `train_few_all`/`dev_few_all` (aliases `train`/`validation`),
  `test_public` (labelled), `test`, `unlabeled`.

Errors name the file and line (or record) and the field. A task folder is
`<root>/clue/<task>/` or `<root>/fewclue/<task>/`; `folder=` reads another one
(e.g. the one-record format samples in the shared data).

Record shapes (every record also has `id`):
  pair      sentence1, sentence2, label           AFQMC, BUSTM
  nli       sentence1, sentence2, label           CMNLI, OCNLI, diagnostics (label None)
  tnews     sentence, keywords, label
  iflytek   sentence, label
  wsc       text, span1_index, span1_text, span2_index, span2_text, label
  csl       abst, keyword (list), label
  eprstmt   sentence, label
  csldcp    content, label
  chid      line_id, candidates, content (passage), tag (its blank), answer (int)
  c3        kind ('d'|'m'), document (lines), question, choice, answer (int)
  cmrc      context, question, answers, answer_starts
`label`/`answer` is None in unlabelled splits.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence

from crosstask.tasks.clue import labels as L
from crosstask.tasks.common import readers as R

CLUE, FEWCLUE = "clue", "fewclue"
FEW_SPLITS = tuple(f"{p}_{k}" for p in ("train", "dev") for k in (*range(5), "few_all"))
FEW_ALIASES = {"train": "train_few_all", "validation": "dev_few_all"}
UNLABELLED = ("test", "test_1_0", "unlabeled")
CHID_BLANK = re.compile(r"#idiom\d*#")


@dataclasses.dataclass(frozen=True)
class TaskSpec:
  """A task's record kind and, per split, alternative file lists (first complete one wins)."""
  kind: str
  files: Mapping[str, tuple[tuple[str, ...], ...]]


def _one(*names: str) -> tuple[tuple[str, ...], ...]:
  return tuple((n,) for n in names)


_CLUE_LINES = {"train": _one("train.json"), "validation": _one("dev.json"),
               "test": _one("test.json")}
_CLUE_1_0 = {**_CLUE_LINES, "test_1_0": _one("test1.0.json")}

CLUE_TASKS: dict[str, TaskSpec] = {
    "afqmc": TaskSpec("pair", _CLUE_LINES),
    "tnews": TaskSpec("tnews", _CLUE_1_0),
    "iflytek": TaskSpec("iflytek", _CLUE_LINES),
    "cmnli": TaskSpec("nli", {s: f + tuple(("cmnli_public/" + n[0],) for n in f)
                              for s, f in _CLUE_LINES.items()}),
    "ocnli": TaskSpec("nli", {**_CLUE_LINES, "train": _one("train.50k.json", "train.json")}),
    "cluewsc2020": TaskSpec("wsc", _CLUE_1_0),
    "csl": TaskSpec("csl", _CLUE_LINES),
    "cmrc2018": TaskSpec("cmrc", {
        "train": _one("train.json", "cmrc2018_train.json"),
        "validation": _one("dev.json", "cmrc2018_dev.json"),
        "trial": _one("trial.json", "cmrc2018_trial.json"), "test": _one("test.json")}),
    "chid": TaskSpec("chid", _CLUE_1_0),
    "c3": TaskSpec("c3", {
        "train": (("d-train.json", "m-train.json"), ("c3-d-train.json", "c3-m-train.json")),
        "validation": (("d-dev.json", "m-dev.json"), ("c3-d-dev.json", "c3-m-dev.json")),
        "test_public": (("c3-d-test.json", "c3-m-test.json"), ("d-test.json", "m-test.json")),
        "test": _one("test.json", "test1.1.json")}),
    "diagnostics": TaskSpec("nli", {"test": _one("diagnostics_test.json")}),
}

_FEW_FILES = {s: _one(f"{s}.json") for s in (*FEW_SPLITS, "test_public", "test", "unlabeled")}
FEWCLUE_TASKS: dict[str, TaskSpec] = {
    t: TaskSpec(kind, _FEW_FILES) for t, kind in (
        ("eprstmt", "eprstmt"), ("csldcp", "csldcp"), ("tnews", "tnews"),
        ("iflytek", "iflytek"), ("ocnli", "nli"), ("bustm", "pair"), ("chid", "chid"),
        ("csl", "csl"), ("cluewsc", "wsc"))}

TASKS = {CLUE: CLUE_TASKS, FEWCLUE: FEWCLUE_TASKS}


def task_spec(benchmark: str, task: str) -> TaskSpec:
  if benchmark not in TASKS:
    raise ValueError(f"benchmark must be {CLUE!r} or {FEWCLUE!r}, got {benchmark!r}")
  if task not in TASKS[benchmark]:
    raise ValueError(f"unknown {benchmark} task {task!r}; choose one of {sorted(TASKS[benchmark])}")
  return TASKS[benchmark][task]


def splits(benchmark: str, task: str) -> tuple[str, ...]:
  """The split names a task can be read as (aliases included)."""
  names = tuple(task_spec(benchmark, task).files)
  return names + tuple(FEW_ALIASES) if benchmark == FEWCLUE else names


def is_labelled(split: str) -> bool:
  return split not in UNLABELLED


def task_folder(benchmark: str, task: str, root: str | os.PathLike | None = None) -> pathlib.Path:
  return R.as_path(root or R.data_root()) / benchmark / task


def split_files(benchmark: str, task: str, split: str,
                folder: str | os.PathLike | None = None) -> list[pathlib.Path]:
  """The files of `split`; FileNotFoundError naming every file looked for."""
  spec = task_spec(benchmark, task)
  split = FEW_ALIASES.get(split, split) if benchmark == FEWCLUE else split
  if split not in spec.files:
    raise ValueError(f"{benchmark} {task} has no split {split!r}; "
                     f"use one of {list(splits(benchmark, task))}")
  base = R.as_path(folder) if folder is not None else task_folder(benchmark, task)
  options = [[base / name for name in names] for names in spec.files[split]]
  for paths in options:
    if all(p.is_file() for p in paths):
      return paths
  looked = " or ".join("+".join(str(p) for p in paths) for paths in options)
  raise FileNotFoundError(f"{benchmark} {task} split {split!r} not found: looked for {looked}")


# ----------------------------------------------------------------------------- helpers


def _text(record: Mapping, field: str, where: str, *, allow_empty: bool = False) -> str:
  value = record[field]
  if not isinstance(value, str) or (not allow_empty and not value.strip()):
    raise R.field_error(where, field, f"expected non-empty text, got {value!r}")
  return value


def _label(record: Mapping, field: str, where: str, allowed: Mapping[str, str],
           labelled: bool) -> str | None:
  """The label id as a string, checked against `allowed`; None in unlabelled splits."""
  if not labelled:  # a test file's placeholder ('', -1, '-') is no label
    value = record.get(field)
    key = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    return key if key in allowed else None
  R.require(record, (field,), where)
  value = record[field]
  key = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
  if key not in allowed:
    shown = list(allowed)[:6]
    raise R.field_error(where, field, f"unknown label {value!r}; expected one of {shown}"
                        + (" ..." if len(allowed) > 6 else ""))
  return key


def _own_id(record: Mapping, position: int):
  for key in ("id", "idx", "index", "query_id"):
    if key in record:
      return record[key]
  return position


# --------------------------------------------------------------------- line formats


def _pair(rec, where, labelled):
  R.require(rec, ("sentence1", "sentence2"), where)
  return {"sentence1": _text(rec, "sentence1", where), "sentence2": _text(rec, "sentence2", where),
          "label": _label(rec, "label", where, L.SIMILARITY, labelled)}


def _nli(rec, where, labelled):
  if "premise" in rec:  # diagnostics: premise/hypothesis, never labelled
    R.require(rec, ("premise", "hypothesis"), where)
    return {"sentence1": _text(rec, "premise", where),
            "sentence2": _text(rec, "hypothesis", where), "label": None}
  R.require(rec, ("sentence1", "sentence2"), where)
  if labelled and rec.get("label") == "-":
    return None  # no majority label: dropped from train/dev, as CLUE's processors do
  return {"sentence1": _text(rec, "sentence1", where), "sentence2": _text(rec, "sentence2", where),
          "label": _label(rec, "label", where, L.NLI, labelled)}


def _tnews(rec, where, labelled):
  R.require(rec, ("sentence",), where)
  label = _label(rec, "label", where, L.LABELS["tnews"], labelled)
  desc = rec.get("label_desc")
  if label is not None and desc not in (None, "") and desc != L.TNEWS[label][0]:
    raise R.field_error(where, "label_desc", f"{desc!r} does not match label {label} "
                        f"({L.TNEWS[label][0]})")
  keywords = rec.get("keywords") or ""
  if not isinstance(keywords, str):
    raise R.field_error(where, "keywords", f"expected a comma-joined string, got {keywords!r}")
  return {"sentence": _text(rec, "sentence", where), "keywords": keywords, "label": label}


def _iflytek(rec, where, labelled):
  R.require(rec, ("sentence",), where)
  label = _label(rec, "label", where, L.LABELS["iflytek"], labelled)
  desc = rec.get("label_des")
  if label is not None and desc not in (None, "") and desc != L.LABELS["iflytek"][label]:
    raise R.field_error(where, "label_des", f"{desc!r} does not match label {label} "
                        f"({L.LABELS['iflytek'][label]})")
  return {"sentence": _text(rec, "sentence", where), "label": label}


def _span_index(text: str, span: str, index, where: str, name: str) -> int:
  """The character offset of `span`: the given one, else its nearest occurrence."""
  if not isinstance(index, int) or isinstance(index, bool):
    raise R.field_error(where, f"target.{name}_index", f"expected an int, got {index!r}")
  if text[index:index + len(span)] == span:
    return index
  found = [m.start() for m in re.finditer(re.escape(span), text)]
  if not found:
    raise R.field_error(where, f"target.{name}_text", f"{span!r} does not occur in the text")
  return min(found, key=lambda i: abs(i - index))


def _wsc(rec, where, labelled):
  R.require(rec, ("text", "target"), where)
  text, target = _text(rec, "text", where), rec["target"]
  R.require(target, ("span1_index", "span1_text", "span2_index", "span2_text"), f"{where} target")
  out = {"text": text}
  for name in ("span1", "span2"):
    span = _text(target, f"{name}_text", f"{where} target")
    out[f"{name}_text"] = span
    out[f"{name}_index"] = _span_index(text, span, target[f"{name}_index"], where, name)
  out["label"] = _label(rec, "label", where, L.COREFERENCE, labelled)
  return out


def _csl(rec, where, labelled):
  R.require(rec, ("abst", "keyword"), where)
  keywords = rec["keyword"]
  if not isinstance(keywords, list) or not keywords or not all(
      isinstance(k, str) and k.strip() for k in keywords):
    raise R.field_error(where, "keyword",
                        f"expected a non-empty list of keywords, got {keywords!r}")
  return {"abst": _text(rec, "abst", where), "keyword": list(keywords),
          "label": _label(rec, "label", where, L.KEYWORDS, labelled)}


def _eprstmt(rec, where, labelled):
  R.require(rec, ("sentence",), where)
  return {"sentence": _text(rec, "sentence", where),
          "label": _label(rec, "label", where, L.SENTIMENT, labelled)}


def _csldcp(rec, where, labelled):
  R.require(rec, ("content",), where)
  return {"content": _text(rec, "content", where),
          "label": _label(rec, "label", where, L.LABELS["csldcp"], labelled)}


def _candidates(rec, where) -> list[str]:
  R.require(rec, ("candidates", "content"), where)
  cands = rec["candidates"]
  if not isinstance(cands, list) or len(cands) < 2 or not all(
      isinstance(c, str) and c.strip() for c in cands):
    raise R.field_error(where, "candidates", f"expected a list of idioms, got {cands!r}")
  return cands


def _chid_few(rec, where, labelled):
  """FewCLUE ChID: one passage with one `#idiom#` blank and the answer index inline."""
  cands = _candidates(rec, where)
  content = _text(rec, "content", where)
  blanks = CHID_BLANK.findall(content)
  if len(blanks) != 1:
    raise R.field_error(where, "content", f"expected one #idiom# blank, found {len(blanks)}")
  answer = _answer_index(rec.get("answer"), len(cands), where, "answer", labelled)
  return {"line_id": None, "candidates": cands, "content": content, "tag": blanks[0],
          "answer": answer}


def _answer_index(value, n: int, where: str, field: str, labelled: bool) -> int | None:
  if not labelled and value in (None, "", -1):
    return None
  if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < n:
    raise R.field_error(where, field, f"expected a candidate index in 0..{n - 1}, got {value!r}")
  return value


def _chid_lines(rows: Iterator[R.Row], answers: Mapping | None, answer_file, labelled: bool,
                on_bad_row: str, bad) -> Iterator[dict]:
  """CLUE ChID: one record per blank; answers from the separate answer file. `rows` come
  from `scan_jsonl`, so a skipped line keeps its line number and the rest keep theirs."""
  def blanks(line_id, row):
    if row.value is None:
      return None
    rec, where = row.value, row.where
    cands = _candidates(rec, where)
    passages = rec["content"]
    if not isinstance(passages, list) or not passages:
      raise R.field_error(where, "content", "expected a list of passages")
    out = []
    for p, passage in enumerate(passages):
      if not isinstance(passage, str) or not CHID_BLANK.search(passage):
        raise R.field_error(where, f"content[{p}]",
                            "expected a passage with an #idiomNNNNNN# blank")
      for tag in CHID_BLANK.findall(passage):
        answer = None
        if labelled:
          if tag not in answers:
            raise R.field_error(where, f"content[{p}]",
                                f"blank {tag} has no answer in {answer_file}")
          answer = _answer_index(answers[tag], len(cands), f"{answer_file} key {tag}",
                                 "answer", True)
        out.append({"id": tag, "line_id": line_id, "candidates": cands,
                    "content": passage, "tag": tag, "answer": answer})
    return out

  yield from R.convert(enumerate(rows), lambda pair: blanks(*pair), on_bad_row=on_bad_row,
                       bad=bad)


# ------------------------------------------------------------------ JSON documents


# A dialogue line starts with its speaker: "男：", "女:", "老师：".
_SPEAKER = re.compile(r"^[^：:]{1,6}[：:]")


def c3_genre(lines: Sequence[str]) -> str:
  """'d' (dialogue) when the document has two or more lines, each led by a speaker; else
  'm' (mixed-genre text). For the one-file test split, whose names and doc ids do not
  say: on the official files it sorts every document as its file does (d-dev 1,628 of
  1,628, d-train 4,885 of 4,885; none of m-dev's 1,046 or m-train's 3,138)."""
  return "d" if len(lines) > 1 and all(_SPEAKER.match(line) for line in lines) else "m"


def _c3(rows: Iterator[R.Row], kind_hint: str, labelled: bool, on_bad_row, bad) -> Iterator[dict]:
  def questions(row):
    doc = row.value
    if not isinstance(doc, list) or len(doc) < 2 or not isinstance(doc[0], list) or not isinstance(
        doc[1], list):
      raise R.DataError(f"{row.where}: expected [[document lines], [questions], doc id]")
    doc_id = str(doc[2]) if len(doc) > 2 else row.where.rsplit(" ", 1)[-1].rstrip("]")
    lines = [str(line) for line in doc[0]]
    kind = kind_hint or c3_genre(lines)
    out = []
    for q, question in enumerate(doc[1]):
      where = f"{row.where} question {q}"
      R.require(question, ("question", "choice"), where)
      choice = question["choice"]
      if not isinstance(choice, list) or len(choice) < 2:
        raise R.field_error(where, "choice", f"expected at least two options, got {choice!r}")
      answer = None
      if labelled:
        R.require(question, ("answer",), where)
        if question["answer"] not in choice:
          raise R.field_error(where, "answer", f"{question['answer']!r} is not one of the options")
        answer = choice.index(question["answer"])  # the first equal option
      out.append({"id": question.get("id", f"{doc_id}/{q}"), "kind": kind, "document": lines,
                  "question": _text(question, "question", where),
                  "choice": [str(c) for c in choice],
                  "answer": answer})
    return out

  yield from R.convert(rows, questions, on_bad_row=on_bad_row, bad=bad)


def _cmrc_test(path) -> Iterator[R.Row]:
  """SQuAD-style questions without answers (the hidden test)."""
  data = R.read_json(path)
  R.require(data, ("data",), str(path))
  for i, article in enumerate(data["data"]):
    for p, paragraph in enumerate(article.get("paragraphs", ())):
      R.require(paragraph, ("context", "qas"), f"{path}[data {i}/paragraph {p}]")
      for q, qa in enumerate(paragraph["qas"]):
        where = f"{path}[data {i}/paragraph {p}/qa {q}]"
        R.require(qa, ("id", "question"), where)
        yield R.Row(where, {"id": str(qa["id"]), "context": str(paragraph["context"]),
                            "question": str(qa["question"]), "answers": [], "answer_starts": []})


def _cmrc(row: R.Row, labelled: bool) -> dict:
  rec = dict(row.value)
  # A question with empty text stays: the official trial file has two
  # (TRIAL_776_QUERY_4, TRIAL_20_QUERY_0) and the official scorer counts them.
  if not rec["context"].strip():
    raise R.field_error(row.where, "context", "empty passage")
  if labelled and not any(a.strip() for a in rec["answers"]):
    raise R.field_error(row.where, "answers", "no reference answer")
  return {k: rec[k] for k in ("id", "context", "question", "answers", "answer_starts")}


# ---------------------------------------------------------------------------- read

_LINE_KINDS: dict[str, Callable] = {
    "pair": _pair, "nli": _nli, "tnews": _tnews, "iflytek": _iflytek, "wsc": _wsc, "csl": _csl,
    "eprstmt": _eprstmt, "csldcp": _csldcp}


def read(benchmark: str, task: str, split: str, *, root: str | os.PathLike | None = None,
         folder: str | os.PathLike | None = None, on_bad_row: str = "raise",
         bad: R.BadRows | None = None) -> Iterator[dict]:
  """Records of one split (see the module docstring for their shape)."""
  R.check_on_bad_row(on_bad_row)
  if folder is None:
    folder = task_folder(benchmark, task, root)
  files = split_files(benchmark, task, split, folder)
  split = FEW_ALIASES.get(split, split) if benchmark == FEWCLUE else split
  kind, labelled = task_spec(benchmark, task).kind, is_labelled(split)
  bad = bad if bad is not None else R.BadRows()
  return _read(benchmark, kind, split, files, labelled, on_bad_row, bad)


def _numbered(path, fn: Callable, on_bad_row: str, bad) -> Iterator[dict]:
  """`fn`'s record of each JSON line, with the line's own id, else its place among the
  file's records: a skipped bad line keeps its number, so the rest keep theirs."""
  def convert(position, row):
    if row.value is None:  # skipped by the JSON-lines scan, already counted in `bad`
      return None
    out = fn(row)
    return None if out is None else {"id": _own_id(row.value, position), **out}

  rows = enumerate(R.scan_jsonl(path, on_bad_row=on_bad_row, bad=bad))
  yield from R.convert(rows, lambda pair: convert(*pair), on_bad_row=on_bad_row, bad=bad)


def _read(benchmark, kind, split, files, labelled, on_bad_row, bad) -> Iterator[dict]:
  if kind in _LINE_KINDS:
    fn = _LINE_KINDS[kind]
    yield from _numbered(files[0], lambda row: fn(row.value, row.where, labelled),
                         on_bad_row, bad)
  elif kind == "chid" and benchmark == FEWCLUE:
    yield from _numbered(files[0], lambda row: _chid_few(row.value, row.where, labelled),
                         on_bad_row, bad)
  elif kind == "chid":
    answers = answer_file = None
    if labelled:
      stem = {"validation": "dev"}.get(split, split)
      answer_file = R.require_file(files[0].parent / f"{stem}_answer.json", "ChID answer file")
      answers = R.read_json(answer_file)
      if not isinstance(answers, dict):
        raise R.DataError(f"{answer_file}: expected one JSON object {{blank: candidate index}}")
    yield from _chid_lines(R.scan_jsonl(files[0], on_bad_row=on_bad_row, bad=bad), answers,
                           answer_file, labelled, on_bad_row, bad)
  elif kind == "c3":
    for path in files:
      hint = next((k for k in ("d", "m") if re.search(rf"(^|-){k}-", path.name)), "")
      yield from _c3(R.read_json_records(path, on_bad_row=on_bad_row, bad=bad), hint, labelled,
                     on_bad_row, bad)
  elif kind == "cmrc":
    rows = (R.read_squad(files[0], on_bad_row=on_bad_row, bad=bad) if labelled
            else _cmrc_test(files[0]))
    yield from R.convert(rows, lambda row: _cmrc(row, labelled), on_bad_row=on_bad_row, bad=bad)
  else:  # pragma: no cover - every TaskSpec kind is handled above
    raise ValueError(f"no reader for kind {kind!r}")


def read_all(benchmark: str, task: str, split: str, **kwargs) -> list[dict]:
  return list(read(benchmark, task, split, **kwargs))
