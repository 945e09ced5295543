"""Shared readers: every format reports file:line (or record), and on_bad_row works."""

import json
import pathlib

import pytest

from crosstask import paths
from crosstask.tasks.common import readers as R


def _write(path: pathlib.Path, data: bytes) -> pathlib.Path:
  path.write_bytes(data)
  return path


def test_tsv_rows_blank_lines_header_and_errors(tmp_path):
  path = _write(tmp_path / "a.tsv", "h1\th2\n\nx\t y \n中\t文\n".encode())
  rows = list(R.read_tsv(str(path), 2, skip_header=True))
  assert [(r.where, r.value) for r in rows] == [(f"{path}:3", ["x", "y"]), (f"{path}:4", ["中", "文"])]
  _write(path, b"a\tb\nc\n\xff\td\ne\t\n")
  with pytest.raises(R.DataError, match=rf"{path}:2: expected 2 tab-separated columns, got 1"):
    list(R.read_tsv(path, 2))
  bad = R.BadRows()
  assert [r.value for r in R.read_tsv(path, 2, on_bad_row="skip", bad=bad)] == [["a", "b"]]
  assert bad.count == 3 and "invalid UTF-8" in bad.messages[1] and "empty field in column 2" in bad.messages[2]
  assert len(list(R.read_tsv(path, None, allow_empty=True, on_bad_row="skip"))) == 3
  with pytest.raises(ValueError, match="on_bad_row"):
    list(R.read_tsv(path, 2, on_bad_row="ignore"))


def test_jsonl_located_errors(tmp_path):
  path = _write(tmp_path / "a.jsonl", b'{"a": 1}\n\n[1, 2]\n{"a": \n{"a": "\xff"}\n{"a": 5}\n')
  with pytest.raises(R.DataError, match=rf"{path}:3: expected a JSON object, got list"):
    list(R.read_jsonl(path))
  bad = R.BadRows()
  rows = list(R.read_jsonl(path, on_bad_row="skip", bad=bad))
  assert [(r.where, r.value) for r in rows] == [(f"{path}:1", {"a": 1}), (f"{path}:6", {"a": 5})]
  assert bad.count == 3 and f"{path}:4: invalid JSON" in bad.messages[1]
  # A line cut short is wrong at its end, the column after `{"a": `, not column 1.
  assert bad.messages[1].startswith(f"{path}:4: invalid JSON at column 7: Expecting value")


def test_json_and_json_records(tmp_path):
  path = _write(tmp_path / "a.json", b'[{"a": 1},\n [2, 3],\n 7]')
  with pytest.raises(R.DataError, match=rf"{path}\[record 2\]: expected a JSON object or list"):
    list(R.read_json_records(path))
  assert [r.where for r in R.read_json_records(path, on_bad_row="skip")] == [
      f"{path}[record 0]", f"{path}[record 1]"]
  _write(path, b'{"a": 1,\n "b": }')
  with pytest.raises(R.DataError, match=rf"{path}:2:7: invalid JSON"):
    R.read_json(path)
  with pytest.raises(FileNotFoundError, match="JSON file not found: looked for .*nope.json"):
    R.read_json(tmp_path / "nope.json")


def test_squad_one_row_per_question(tmp_path):
  data = {"data": [{"title": "t", "paragraphs": [{"context": "北京是首都。", "qas": [
      {"id": "q1", "question": "首都？", "answers": [{"text": "北京", "answer_start": 0}]},
      {"id": "q2", "question": "缺答案"}]}]}]}
  path = _write(tmp_path / "s.json", json.dumps(data, ensure_ascii=False).encode())
  with pytest.raises(R.DataError, match=r"s\.json\[data 0/paragraph 0/qa 1 id=q2\]: missing field\(s\) 'answers'"):
    list(R.read_squad(path))
  rows = list(R.read_squad(path, on_bad_row="skip"))
  assert rows[0].value == {"id": "q1", "title": "t", "context": "北京是首都。", "question": "首都？",
                           "answers": ["北京"], "answer_starts": [0]}


@pytest.mark.parametrize("start, read", [(3, 3), ("3", 3), (" 12", 12), ("-1", -1),
                                         ("x", None), (True, None), (1.5, None)])
def test_an_answer_start_is_an_int_or_an_int_as_text(tmp_path, start, read):
  data = {"data": [{"title": "t", "paragraphs": [{"context": "北京是首都。", "qas": [
      {"id": "q1", "question": "首都？", "answers": [{"text": "首都", "answer_start": start}]}]}]}]}
  path = _write(tmp_path / "s.json", json.dumps(data, ensure_ascii=False).encode())
  if read is None:
    with pytest.raises(R.DataError, match=r"s\.json\[data 0/paragraph 0/qa 0 id=q1\]/answer 0: "
                                          r"field 'answer_start': expected an int, got"):
      list(R.read_squad(path))
  else:
    assert [row.value["answer_starts"] for row in R.read_squad(path)] == [[read]]


def test_convert_require_and_field_error(tmp_path):
  path = _write(tmp_path / "a.jsonl", b'{"s": "x", "l": "1"}\n{"s": "y"}\n{"s": "-", "l": "0"}\n'
                b'{"s": "z", "l": "2"}\n')

  def fn(row):
    R.require(row.value, ["s", "l"], row.where)
    if row.value["s"] == "-":
      return None
    if row.value["l"] == "2":
      return [{"s": "z1"}, {"s": "z2"}]
    return {"s": row.value["s"]}

  with pytest.raises(R.DataError, match=rf"{path}:2: missing field\(s\) 'l'"):
    list(R.convert(R.read_jsonl(path), fn))
  bad = R.BadRows()
  out = list(R.convert(R.read_jsonl(path), fn, on_bad_row="skip", bad=bad))
  assert out == [{"s": "x"}, {"s": "z1"}, {"s": "z2"}] and bad.count == 1
  assert str(R.field_error("f:3", "label", "unknown")) == "f:3: field 'label': unknown"


def test_data_root_and_paths(monkeypatch, tmp_path):
  monkeypatch.delenv(paths.DATA_DIR_ENV, raising=False)
  assert R.data_root() == paths.SAMPLE_DIR
  monkeypatch.setenv(paths.DATA_DIR_ENV, str(tmp_path))
  assert R.data_root() == tmp_path
  assert R.require_file(str(paths.SAMPLE_DIR / "csl" / "csl_camera_readly.tsv"), "x").is_file()
  with pytest.raises(FileNotFoundError, match="vocabulary not found: looked for"):
    R.require_file(tmp_path / "v.model", "vocabulary")
