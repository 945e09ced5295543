"""Leaderboard files from infer rows: names, field types, and alignment checks."""

import json

import pytest

from crosstask import paths
from crosstask.tasks.clue import examples as E
from crosstask.tasks.clue import readers as RD
from crosstask.tasks.clue import submissions as S

SAMPLE = paths.SAMPLE_DIR


def _rows(path, rows):
  path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
  return path


def _generated(records, predictions):
  return [{"index": i, "inputs": "x", "targets": "", "prediction": p, "score": -1.0,
           "target_score": -1.0} for i, p in enumerate(predictions)]


def test_task_names_and_file_names():
  assert S.parse_task_name("fewclue_eprstmt_k0_rank") == ("fewclue", "eprstmt", "0", True)
  assert S.parse_task_name("clue_cluewsc2020") == ("clue", "cluewsc2020", None, False)
  with pytest.raises(ValueError, match="not a CLUE/FewCLUE task name"):
    S.parse_task_name("clue_nosuch")
  assert S.file_name("clue", "tnews", "test") == "tnews11_predict.json"
  assert S.file_name("clue", "tnews", "test_1_0") == "tnews10_predict.json"
  assert S.file_name("clue", "ocnli", "test") == "ocnli_50k_predict.json"
  assert S.file_name("fewclue", "tnews", "test", "all") == "tnewsf_predict_all.json"
  assert S.file_name("fewclue", "chid", "test") == "chidf_predict.json"


def test_generated_labels_become_label_ids_of_the_right_type(tmp_path):
  records = RD.read_all("fewclue", "tnews", "test", root=SAMPLE)
  rows = _rows(tmp_path / "p.jsonl", _generated(records, ["体育", "胡说"]))
  out = S.write_submission("fewclue_tnews", "test", rows, tmp_path / "sub", root=SAMPLE).path
  assert out.name == "tnewsf_predict.json"
  lines = [json.loads(l) for l in out.read_text("utf-8").splitlines()]
  # ids stay str as in FewCLUE tnews test; labels are str ids; no match -> the first label.
  assert lines == [{"id": "0", "label": "103"}, {"id": "1", "label": "100"}]
  records = RD.read_all("clue", "afqmc", "test", root=SAMPLE)
  rows = _rows(tmp_path / "a.jsonl", _generated(records, ["相同", "不同", "相同"]))
  out = S.write_submission("clue_afqmc", "test", rows, tmp_path / "sub", root=SAMPLE).path
  assert out.read_text("utf-8").splitlines()[0] == '{"id": 0, "label": "1"}'


def test_rank_rows_pick_the_best_scored_option(tmp_path):
  records = RD.read_all("fewclue", "eprstmt", "test", root=SAMPLE)
  expanded = E.expand_options("eprstmt", records, train=False)
  scores = [-3.0, -1.0, -0.5, -2.0]  # record 0 -> 负面, record 1 -> 正面
  rows = [{"index": i, "inputs": "x", "targets": x["_text"], "prediction": "?", "score": 0.0,
           "target_score": s} for i, (x, s) in enumerate(zip(expanded, scores))]
  out = S.write_submission("fewclue_eprstmt_k0_rank", "test", _rows(tmp_path / "r.jsonl", rows),
                           tmp_path, root=SAMPLE).path
  assert out.name == "eprstmt_predict_0.json"
  assert [json.loads(l) for l in out.read_text("utf-8").splitlines()] == [
      {"id": 0, "label": "Negative"}, {"id": 1, "label": "Positive"}]
  rows[1]["targets"] = "中立"
  with pytest.raises(ValueError, match="were the predictions made on this split"):
    S.write_submission("fewclue_eprstmt_rank", "test", _rows(tmp_path / "r.jsonl", rows),
                       tmp_path, root=SAMPLE)
  with pytest.raises(ValueError, match="3 rows, but rank classification of 2 records has 4"):
    S.write_submission("fewclue_eprstmt_rank", "test", _rows(tmp_path / "r.jsonl", rows[:3]),
                       tmp_path, root=SAMPLE)
  assert (tmp_path / "eprstmt_predict_0.json").is_file()  # an earlier file is kept


def test_mrc_formats(tmp_path):
  chid = RD.read_all("clue", "chid", "test", root=SAMPLE)
  rows = _rows(tmp_path / "c.jsonl", _generated(chid, ["胸有成竹", "井底之蛙", "x", "亡羊补牢"]))
  out = S.write_submission("clue_chid", "test", rows, tmp_path, root=SAMPLE).path
  assert out.name == "chid11_predict.json"
  assert json.loads(out.read_text()) == {"#idiom623377#": 7, "#idiom623378#": 9,
                                         "#idiom623379#": 0, "#idiom623380#": 3}
  c3 = RD.read_all("clue", "c3", "test", root=SAMPLE)
  rows = _rows(tmp_path / "c3.jsonl", _generated(c3, ["上午九点", "秋天", "种树"]))
  out = S.write_submission("clue_c3", "test", rows, tmp_path, root=SAMPLE).path
  assert [json.loads(l) for l in out.read_text().splitlines()] == [
      {"id": 0, "label": 1}, {"id": 10, "label": 2}, {"id": 11, "label": 1}]
  few = RD.read_all("fewclue", "chid", "test", root=SAMPLE)
  rows = _rows(tmp_path / "f.jsonl", _generated(few, ["半途而废", "一帆风顺"]))
  out = S.write_submission("fewclue_chid", "test", rows, tmp_path, root=SAMPLE).path
  assert out.read_text().splitlines() == ['{"id": 0, "answer": 6}', '{"id": 1, "answer": 0}']
  cmrc = RD.read_all("clue", "cmrc2018", "test", root=SAMPLE)
  rows = _rows(tmp_path / "m.jsonl", _generated(cmrc, ["周树人", "1918年", "东海", "6300千米(公里)"]))
  out = S.write_submission("clue_cmrc2018", "test", rows, tmp_path, root=SAMPLE).path
  assert json.loads(out.read_text("utf-8"))["TEST_1_QUERY_1"] == "6300千米（公里）"  # passage text


def test_bad_prediction_file_names_the_line(tmp_path):
  path = tmp_path / "bad.jsonl"
  path.write_text('{"prediction": "a", "targets": ""}\n{oops\n', "utf-8")
  with pytest.raises(ValueError, match=rf"{path}:2: invalid JSON"):
    S.read_predictions(path)


def test_chid_rank_rows_are_decoded_jointly_per_line(tmp_path):
  records = RD.read_all("clue", "chid", "test", root=SAMPLE)  # line 0: 3 blanks, line 1: 1
  expanded = E.expand_options("chid", records, train=False)
  prefer = {0: 7, 1: 7, 2: 8, 3: 7}  # blanks 0 and 1 of line 0 both like candidate 7 best
  scores = [(-0.1 if x["_option"] == prefer[x["_example"]] else -5.0)
            - (0.05 if x["_example"] == 1 else 0.0) - (1.0 if x["_option"] == 9 else 2.0)
            * (x["_example"] == 1) for x in expanded]
  rows = [{"index": i, "inputs": "x", "targets": x["_text"], "prediction": "", "score": 0.0,
           "target_score": s} for i, (x, s) in enumerate(zip(expanded, scores))]
  path = _rows(tmp_path / "r.jsonl", rows)
  joint = json.loads(S.write_submission("clue_chid_rank", "test", path, tmp_path / "j",
                                        root=SAMPLE).path.read_text())
  alone = json.loads(S.write_submission("clue_chid_rank", "test", path, tmp_path / "a",
                                        root=SAMPLE, joint=False).path.read_text())
  assert list(alone.values()) == [7, 7, 8, 7]
  assert list(joint.values()) == [7, 9, 8, 7]  # line 1's blank keeps 7: another line


def test_the_command_reads_the_split_from_the_file_name_and_counts_unmatched_answers(
    tmp_path, capsys):
  """As `crosstask.score` does, the split is the one the file's name says; a generated
  text that names no option is counted, since its line's answer (option 0) is no choice
  of the model's and a file of them would otherwise look like a valid submission."""
  records = RD.read_all("fewclue", "tnews", "test", root=SAMPLE)
  rows = _generated(records, ["体育", "胡说"])
  written = S.write_submission("fewclue_tnews", "test", _rows(tmp_path / "p.jsonl", rows),
                               tmp_path / "sub", root=SAMPLE)
  assert (written.unmatched, written.answers) == (1, 2)
  named = _rows(tmp_path / "fewclue_tnews-test.jsonl", rows)
  with paths.use_data_dir(SAMPLE):
    assert S.main(["--task=fewclue_tnews", f"--predictions={named}",
                   f"--output_dir={tmp_path / 'cli'}"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{tmp_path / 'cli' / 'tnewsf_predict.json'}\n"
    assert captured.err == ("note: 1 of 2 predictions name no option of their example; their "
                            "lines answer option 0 (the first label)\n")
    subset = _rows(tmp_path / "fewclue_tnews-test[:2].jsonl", rows)
    assert S.main(["--task=fewclue_tnews", f"--predictions={subset}",
                   f"--output_dir={tmp_path / 'cli'}"]) == 2
    assert "holds a subset of split 'test' (test[:2])" in capsys.readouterr().err
    assert S.main(["--task=clue_tnews", f"--predictions={named}",
                   f"--output_dir={tmp_path / 'cli'}"]) == 2
    assert "holds predictions of task 'fewclue_tnews', not 'clue_tnews'" in (
        capsys.readouterr().err)
    # --split names the split of a file named otherwise; of one infer named, the same
    # one, else the file's lines would answer the other split's examples under its ids.
    assert S.main(["--task=fewclue_tnews", "--split=validation", f"--predictions={named}",
                   f"--output_dir={tmp_path / 'cli'}"]) == 2
    assert "holds predictions on split 'test', not --split 'validation'" in (
        capsys.readouterr().err)
    assert S.main(["--task=clue_tnews", "--split=test", f"--predictions={named}",
                   f"--output_dir={tmp_path / 'cli'}"]) == 2
    assert "not 'clue_tnews'" in capsys.readouterr().err
    unnamed = _rows(tmp_path / "p2.jsonl", rows)
    assert S.main(["--task=fewclue_tnews", "--split=test", f"--predictions={unnamed}",
                   f"--output_dir={tmp_path / 'cli2'}"]) == 0
