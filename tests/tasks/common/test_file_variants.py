"""Official-format files as other tools write them: a byte-order mark, CRLF line ends,
blank lines at the end, `~` in the data root; and a skipped bad row keeps the place of
the rows after it. Each case reads the same records as the plain file (or the records
HF's loader gives), never an error, a changed first field or a shifted id."""

import codecs
import json
import shutil

import pytest

from crosstask import paths
from crosstask.tasks.citesum import readers as citesum_readers
from crosstask.tasks.clue import readers as clue_readers
from crosstask.tasks.common import readers
from crosstask.tasks.scirepeval import readers as scirepeval_readers

SAMPLE = paths.SAMPLE_DIR
BOM = codecs.BOM_UTF8


def _copy(tmp_path, benchmark: str):
  shutil.copytree(SAMPLE / benchmark, tmp_path / benchmark)
  return tmp_path / benchmark


def test_a_bom_is_dropped_from_json_lines_and_tsv_files(tmp_path):
  folder = _copy(tmp_path, "clue") / "afqmc"
  plain = clue_readers.read_all("clue", "afqmc", "validation", root=tmp_path)
  (folder / "dev.json").write_bytes(BOM + (folder / "dev.json").read_bytes())
  assert clue_readers.read_all("clue", "afqmc", "validation", root=tmp_path) == plain
  tsv = tmp_path / "rows.tsv"
  tsv.write_bytes(BOM + "一种方法\t摘要\n第二\t行\n".encode())
  assert [r.value for r in readers.read_tsv(tsv, 2)] == [["一种方法", "摘要"], ["第二", "行"]]


def test_a_skipped_row_keeps_the_positional_ids_of_the_rows_after_it(tmp_path):
  # AFQMC's dev file has no ids: a record's id is its place among the file's records.
  folder = _copy(tmp_path, "clue") / "afqmc"
  lines = (folder / "dev.json").read_text(encoding="utf-8").splitlines()
  rows = [json.loads(line) for line in lines]
  bad_fields = json.dumps({**rows[0], "sentence1": ""}, ensure_ascii=False)
  (folder / "dev.json").write_text("\n".join([lines[0], bad_fields, "{not json", lines[1], ""]),
                                   encoding="utf-8")
  bad = readers.BadRows()
  got = clue_readers.read_all("clue", "afqmc", "validation", root=tmp_path, on_bad_row="skip",
                              bad=bad)
  assert bad.count == 2
  assert [(r["id"], r["sentence1"]) for r in got] == [
      (0, rows[0]["sentence1"]), (3, rows[1]["sentence1"])]


def test_xsum_reads_a_crlf_file_as_hf_does_in_text_mode(tmp_path):
  folder = _copy(tmp_path, "xsum") / "bbc-summary-data"
  for path in sorted(folder.glob("*.summary")):
    plain = citesum_readers.parse_xsum_summary(path)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert citesum_readers.parse_xsum_summary(path) == plain, path.name
    assert "\r" not in plain["document"] and "Share this with" not in plain["document"]


def test_gigaword_ignores_blank_lines_at_the_ends_of_its_files_and_a_bom(tmp_path):
  _copy(tmp_path, "gigaword")
  plain = list(citesum_readers.read_gigaword("validation", tmp_path))
  src, tgt = citesum_readers.gigaword_paths("validation", tmp_path)
  src.write_bytes(BOM + src.read_bytes().replace(b"\n", b"\r\n") + b"\r\n\r\n")
  tgt.write_bytes(tgt.read_bytes() + b"  \n")
  assert list(citesum_readers.read_gigaword("validation", tmp_path)) == plain


def test_scirepeval_label_lists_probe_splits_and_arrays_with_a_bom(tmp_path):
  labels = tmp_path / "fos_labels.txt"
  labels.write_bytes(BOM + b"Physics\r\nBiology\r\n\r\n")
  assert scirepeval_readers.read_label_list(labels) == ["Physics", "Biology"]
  labels.write_bytes(b"Physics\n\nBiology\n")
  with pytest.raises(readers.DataError, match="fos_labels.txt:2.*empty label line"):
    scirepeval_readers.read_label_list(labels)
  probe = tmp_path / "test.csv"
  probe.write_bytes(BOM + b"paper_id,label\n101,1\n")
  assert scirepeval_readers.read_probe_split(probe) == [("101", 1)]
  array = tmp_path / "fos.json"
  array.write_bytes(BOM + b'[{"corpus_id": 1}, {"corpus_id": 2}]')
  assert [r.value for r in scirepeval_readers.json_rows(array)] == [
      {"corpus_id": 1}, {"corpus_id": 2}]


def test_a_data_root_under_home_may_be_written_with_a_tilde(tmp_path, monkeypatch):
  monkeypatch.setenv("HOME", str(tmp_path))
  _copy(tmp_path / "root", "csl")
  monkeypatch.setenv(paths.DATA_DIR_ENV, "~/root")
  assert paths.data_dir() == tmp_path / "root"
  from crosstask.tasks.csl import readers as csl_readers  # pylint: disable=g-import-not-at-top
  assert csl_readers.read_benchmark("validation")


def test_chid_line_ids_keep_their_place_past_a_skipped_line(tmp_path):
  folder = _copy(tmp_path, "clue") / "chid"
  lines = (folder / "dev.json").read_text(encoding="utf-8").splitlines()
  plain = clue_readers.read_all("clue", "chid", "validation", root=tmp_path)
  (folder / "dev.json").write_text("\n".join([lines[0], '{"candidates": []}', lines[1]]) + "\n",
                                   encoding="utf-8")
  got = clue_readers.read_all("clue", "chid", "validation", root=tmp_path, on_bad_row="skip")
  # The second passage line is now the file's third: its blanks carry line_id 2, not 1.
  assert [r["line_id"] for r in got] == [
      r["line_id"] if r["line_id"] == 0 else 2 for r in plain]
  assert [r["id"] for r in got] == [r["id"] for r in plain]
