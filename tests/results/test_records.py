"""metrics.jsonl: the one reader and writer every job and report shares."""

import json

import pytest

from crosstask import records


def test_round_trip_latest_and_by_step(tmp_path):
  records.append(tmp_path, [records.Record(10, "a", {"accuracy": 50, "title/rougeL": 20.0},
                                           fingerprint="0123abcd", source="eval"),
                            records.Record(10, "b", {"rougeL": 30.0})])
  records.append(tmp_path / "metrics.jsonl", [records.Record(20, "a", {"accuracy": 75.0}),
                                              records.Record(20, "a", {"accuracy": 80.0},
                                                             source="score")])
  rows = records.read(tmp_path)
  assert [(r.step, r.task) for r in rows] == [(10, "a"), (10, "b"), (20, "a"), (20, "a")]
  assert rows[0].fingerprint == "0123abcd" and rows[0].source == "eval"
  assert rows[0].where == f"{tmp_path / 'metrics.jsonl'}:1"
  newest = records.latest(rows)
  assert newest["a"].metrics == {"accuracy": 80.0} and newest["a"].source == "score"
  assert newest["b"].step == 10
  assert records.by_step(rows, "rougeL") == {10: [20.0, 30.0]}
  assert set(records.at_step(rows, 10)) == {"a", "b"}
  line = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
  assert line == {"step": 10, "task": "a", "metrics": {"accuracy": 50.0, "title/rougeL": 20.0},
                  "fingerprint": "0123abcd", "source": "eval"}


def test_bad_lines_are_named_by_file_and_line(tmp_path):
  path = tmp_path / "metrics.jsonl"
  path.write_text('{"step": 1, "task": "a", "metrics": {}}\n{"step": 1}\n', "utf-8")
  with pytest.raises(ValueError, match=rf"{path}:2: not a crosstask metrics line"):
    records.read(path)
  path.write_text('{"step": 1, "task": "a", "metrics": {"m": "high"}}\n', "utf-8")
  with pytest.raises(ValueError, match=rf"{path}:1: metric 'm' of task 'a' is not a number"):
    records.read(path)
  path.write_text("{oops\n", "utf-8")
  with pytest.raises(ValueError, match=rf"{path}:1: not JSON"):
    records.read(path)
  with pytest.raises(FileNotFoundError, match="no metrics.jsonl"):
    records.read(tmp_path / "missing")


def test_a_new_folder_gets_a_metrics_file(tmp_path):
  file = records.append(tmp_path / "baseline", [records.Record(0, "t", {"accuracy": 40.0})])
  assert file == tmp_path / "baseline" / "metrics.jsonl"
  assert records.append(tmp_path / "m.jsonl", []) == tmp_path / "m.jsonl"


def test_intervals_round_trip_and_bad_ones_are_named(tmp_path):
  records.append(tmp_path, [records.Record(3, "t", {"accuracy": 60.0},
                                           ci95={"accuracy": (45.0, 75.0)})])
  (row,) = records.read(tmp_path)
  assert row.ci95 == {"accuracy": (45.0, 75.0)}
  assert json.loads((tmp_path / "metrics.jsonl").read_text())["ci95"] == {"accuracy": [45.0, 75.0]}
  path = tmp_path / "metrics.jsonl"
  path.write_text('{"step": 1, "task": "a", "metrics": {"m": 1}, "ci95": {"m": [1]}}\n', "utf-8")
  with pytest.raises(ValueError, match=rf"{path}:1: 'ci95' of task 'a' must map each metric"):
    records.read(path)


def test_an_inference_files_name_gives_back_its_task_and_split_label():
  # A subset's name holds no `[` (a glob to a shell: `ls run/x-validation[:8].jsonl`
  # matches nothing in zsh); its label reads back the same.
  for task, split in (("clue_tnews", "validation"), ("clue_c3", "test_1_0"),
                      ("csl_zh_title_to_category.spiece", "validation[:8]")):
    name = records.inference_filename(task, split)
    assert not set(name) & set("[]:*?") and records.inference_file(f"/run/{name}") == (task, split)
  assert records.inference_filename("t", "validation[:8]") == "t-validation_first8.jsonl"
  assert records.inference_file("t-test[:2].jsonl") == ("t", "test[:2]")  # an older version's name
  assert records.inference_file("metrics.jsonl") is None
