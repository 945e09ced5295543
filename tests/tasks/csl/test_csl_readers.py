"""CSL readers: benchmark join, full-dataset form, bad rows, data-root resolution."""

import pathlib

import pytest

from crosstask import paths
from crosstask.tasks.csl import readers

RECORDS = [
    {"title": f"论文标题{i}", "abstract": f"这是第{i}篇论文的摘要，介绍研究方法与结论。",
     "keywords": [f"关键词{i}", "方法", "结论"], "category": "工学", "discipline": "机械工程"}
    for i in range(4)
]


def _tsv_rows(path: pathlib.Path) -> list[list[str]]:
  return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_official_dev_join_matches_tsv_rows(official_data):
  recs = list(readers.read_records("dev", official_data))
  assert len(recs) == 1000
  bench = official_data / "csl" / "benchmark"
  ts, kg = _tsv_rows(bench / "ts" / "dev.tsv"), _tsv_rows(bench / "kg" / "dev.tsv")
  ctg, dcp = _tsv_rows(bench / "cls_ctg" / "dev.tsv"), _tsv_rows(bench / "cls_dcp" / "dev.tsv")
  for i in (0, 1, 517, 999):
    r = recs[i]
    assert r["abstract"] == ts[i][1] and r["title"] == ts[i][2] == ctg[i][1]
    assert r["keywords"] == kg[i][2].split("_")
    assert r["category"] == ctg[i][2] and r["discipline"] == dcp[i][2]
  assert len({r["category"] for r in recs}) == 13


def test_missing_split_names_files(official_data):
  with pytest.raises(FileNotFoundError, match=r"ts/train\.tsv.*kg/train\.tsv"):
    list(readers.read_records("train", official_data))


def test_root_resolution_at_read_time(monkeypatch):
  monkeypatch.delenv(paths.DATA_DIR_ENV, raising=False)
  assert readers.data_root() == paths.SAMPLE_DIR
  assert len(list(readers.read_records("dev"))) == 30
  monkeypatch.setenv(paths.DATA_DIR_ENV, str(paths.SAMPLE_DIR))
  assert len(list(readers.read_records("train"))) == 100


def test_sample_forms_agree():
  full = list(readers.read_records("full", paths.SAMPLE_DIR))
  bench = (list(readers.read_records("train", paths.SAMPLE_DIR))
           + list(readers.read_records("dev", paths.SAMPLE_DIR)))
  assert full == bench
  assert len({r["title"] for r in full}) == 130
  assert all(3 <= len(r["keywords"]) <= 5 for r in full)


def test_write_read_round_trip(tmp_path):
  readers.write_benchmark(RECORDS, tmp_path, "dev")
  readers.write_full(RECORDS, tmp_path)
  assert list(readers.read_records("dev", tmp_path)) == RECORDS
  assert list(readers.read_records("full", tmp_path)) == RECORDS


def _rewrite(path: pathlib.Path, lineno: int, new: bytes) -> None:
  lines = path.read_bytes().splitlines(keepends=True)
  lines[lineno - 1] = new
  path.write_bytes(b"".join(lines))


def test_join_title_mismatch_names_files_and_line(tmp_path):
  files = readers.write_benchmark(RECORDS, tmp_path, "dev")
  _rewrite(files["cls_ctg"], 3, "to category\t别的标题\t工学\n".encode())
  with pytest.raises(readers.CSLDataError, match=r"title.*cls_ctg/dev\.tsv:3"):
    list(readers.read_records("dev", tmp_path))


def test_join_abstract_mismatch_is_reported(tmp_path):
  files = readers.write_benchmark(RECORDS, tmp_path, "dev")
  rows = files["cls_dcp"].read_text(encoding="utf-8").splitlines(keepends=True)
  files["cls_dcp"].write_text(rows[1] + rows[0] + "".join(rows[2:]), encoding="utf-8")
  with pytest.raises(readers.CSLDataError, match=r"abstract.*ts/dev\.tsv:1.*cls_dcp/dev\.tsv:1"):
    list(readers.read_records("dev", tmp_path))


def test_join_row_count_mismatch(tmp_path):
  files = readers.write_benchmark(RECORDS, tmp_path, "dev")
  readers.write_benchmark(RECORDS[:3], tmp_path / "short", "dev")
  files["kg"].write_bytes((tmp_path / "short/csl/benchmark/kg/dev.tsv").read_bytes())
  with pytest.raises(readers.CSLDataError, match=r"row counts.*kg/dev\.tsv=3"):
    list(readers.read_records("dev", tmp_path))


@pytest.mark.parametrize("bad_line, problem", [
    (b"to title\tonly two columns\n", "expected 3 tab-separated columns, got 2"),
    (b"to title\t\tsome title\n", "empty field in column 2"),
    (b"to title\t\xff\xfe broken\ttitle\n", "invalid UTF-8"),
])
def test_malformed_row_raises_with_file_and_line(tmp_path, bad_line, problem):
  files = readers.write_benchmark(RECORDS, tmp_path, "dev")
  _rewrite(files["ts"], 2, bad_line)
  with pytest.raises(readers.CSLDataError) as err:
    list(readers.read_records("dev", tmp_path))
  assert f"{files['ts']}:2: {problem}" in str(err.value)


def test_skip_mode_counts_and_keeps_join_aligned(tmp_path):
  files = readers.write_benchmark(RECORDS, tmp_path, "dev")
  _rewrite(files["ts"], 2, b"to title\t\xff\xfe\ttitle\n")
  _rewrite(files["cls_dcp"], 4, b"to discipline\tno label\n")
  bad = readers.BadRows()
  recs = list(readers.read_records("dev", tmp_path, on_bad_row="skip", bad=bad))
  assert [r["title"] for r in recs] == [RECORDS[0]["title"], RECORDS[2]["title"]]
  assert bad.count == 2
  assert any("ts/dev.tsv:2" in m for m in bad.messages)
  assert any("cls_dcp/dev.tsv:4" in m for m in bad.messages)


def test_full_form_bad_row(tmp_path):
  path = readers.write_full(RECORDS, tmp_path)
  _rewrite(path, 2, "标题\t摘要\t关键词\t机械工程\n".encode())
  with pytest.raises(readers.CSLDataError, match=r"csl_camera_readly\.tsv:2: expected 5"):
    list(readers.read_records("full", tmp_path))
  bad = readers.BadRows()
  assert len(list(readers.read_records("full", tmp_path, on_bad_row="skip", bad=bad))) == 3
  assert bad.count == 1
  with pytest.raises(ValueError, match="on_bad_row"):
    list(readers.read_records("full", tmp_path, on_bad_row="ignore"))


def test_roots_may_be_str_or_pathlike(tmp_path):
  with pytest.raises(FileNotFoundError, match=r"/some/str/path/csl/benchmark/ts/dev\.tsv"):
    list(readers.read_benchmark("dev", "/some/str/path"))
  assert len(list(readers.read_benchmark("dev", str(paths.SAMPLE_DIR)))) == 30
  readers.write_benchmark(RECORDS, str(tmp_path), "dev")
  readers.write_full(RECORDS, str(tmp_path))
  assert list(readers.read_records("full", str(tmp_path))) == RECORDS
  assert list(readers.read_records("dev", tmp_path)) == RECORDS
  assert set(readers.check_split("dev", str(tmp_path))) == set(readers.BENCHMARK_TASKS)
  from crosstask.tasks.csl import tasks  # pylint: disable=g-import-not-at-top
  assert len(tasks.episode_pool(str(paths.SAMPLE_DIR))) == 130
