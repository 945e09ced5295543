"""The Tables 5-9 report: paper numbers beside a run's metrics.jsonl and the baselines."""

import json

from crosstask import paths
from crosstask.tasks.citesum import baselines
from crosstask.tasks.citesum import readers
from crosstask.tasks.citesum import report


def test_report_places_a_run_beside_the_paper(tmp_path, capsys):
  metrics = tmp_path / "metrics.jsonl"
  lines = [{"step": 100, "task": "scitldr_a_abstract_to_tldr_prompt_this_paper",
            "metrics": {"rouge1": 10.0, "rouge2": 1.0, "rougeL": 5.0}},
           {"step": 200, "task": "scitldr_a_abstract_to_tldr_prompt_this_paper",
            "metrics": {"rouge1": 40.0, "rouge2": 20.0, "rougeL": 30.0}}]
  metrics.write_text("".join(json.dumps(l) + "\n" for l in lines))
  assert report.main(["--run", f"6:CiTES (prompting)={tmp_path}"]) == 0
  out = capsys.readouterr().out
  # newest step; ours, paper, delta
  assert "| CiTES (prompting) | 40.00 | 43.50 | -3.50 | 20.00 | 20.90 | -0.90 |" in out
  for table in ("Table 5", "Table 6", "Table 7", "Table 8", "Table 9"):
    assert table in out


def test_a_run_of_another_task_is_refused(tmp_path, capsys):
  """Another benchmark's numbers beside the paper's would read as CiteSum results: the run's
  file and task are named, with the tasks the report takes."""
  run = tmp_path / "afqmc"
  run.mkdir()
  lines = [{"step": 100, "task": "clue_afqmc", "metrics": {"accuracy": 70.0}},
           {"step": 100, "task": "citesum_abstract_to_tldr.sentencepiece_en",
            "metrics": {"rouge1": 40.0, "rouge2": 20.0, "rougeL": 30.0}}]
  (run / "metrics.jsonl").write_text(json.dumps(lines[0]) + "\n")
  assert report.main(["--run", f"5:CiTES={run}"]) == 2
  captured = capsys.readouterr()
  assert not captured.out
  assert captured.err.startswith(f"ERROR: {run / 'metrics.jsonl'}: task 'clue_afqmc' is not a "
                                 "CiteSum task; the report takes citesum_abstract_to_tldr, ")
  assert "scitldr_a_abstract_to_tldr, " in captured.err and len(captured.err.splitlines()) == 1
  # Named among others as PATH#TASK, it is refused too; a vocabulary's copy of a CiteSum
  # task is taken.
  (run / "metrics.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
  assert report.main(["--run", f"5:CiTES={run}#clue_afqmc"]) == 2
  assert "task 'clue_afqmc' is not a CiteSum task" in capsys.readouterr().err
  assert report.main(["--run", f"5:CiTES={run}#citesum_abstract_to_tldr.sentencepiece_en"]) == 0
  assert "| CiTES | 40.00 |" in capsys.readouterr().out


def test_a_run_is_placed_only_in_its_own_table_and_its_split_is_named(tmp_path, capsys):
  # A SciTLDR run is not CiteSum's Table 5; a validation run beside the paper's test numbers
  # says so in its row, as the baselines' dev rows do.
  lines = [{"step": 9, "task": "scitldr_a_abstract_to_tldr", "split": "validation",
            "metrics": {"rouge1": 40.0, "rouge2": 20.0, "rougeL": 30.0}},
           {"step": 9, "task": "citesum_abstract_to_tldr.spiece", "split": "test",
            "metrics": {"rouge1": 41.0, "rouge2": 21.0, "rougeL": 31.0}}]
  (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
  assert report.main(["--run", f"5:CiTES={tmp_path}#scitldr_a_abstract_to_tldr"]) == 2
  assert capsys.readouterr().err == (
      f"ERROR: {tmp_path / 'metrics.jsonl'}: task 'scitldr_a_abstract_to_tldr' is not what "
      "Table 5 measures; it takes citesum_abstract_to_tldr, citesum_title_and_abstract_to_tldr, "
      "citesum_abstract_and_discipline_to_tldr, citesum_aic_to_tldr\n")
  assert report.main(["--run", f"6:CiTES={tmp_path}#scitldr_a_abstract_to_tldr",
                      "--run", f"5:CiTES={tmp_path}#citesum_abstract_to_tldr.spiece"]) == 0
  out = capsys.readouterr().out
  assert "| CiTES [validation] | 40.00 |" in out and "| CiTES | 41.00 |" in out


def test_hf_tables_compare_r_l_with_rouge_lsum():
  ours = report.ours_from_metrics("5", {"rouge1": 1.0, "rouge2": 2.0, "rougeL": 3.0,
                                        "rougeLsum": 4.0})
  assert ours == {"rouge1": 1.0, "rouge2": 2.0, "rougeL": 4.0}
  assert report.ours_from_metrics("6", {"rouge1": 1.0, "rougeL": 3.0, "rougeLsum": 4.0}) == {
      "rouge1": 1.0, "rougeL": 3.0}
  assert report.ours_from_metrics("7", {"title/rouge1": 50.0, "discipline/macro_f1": 30.0}) == {
      "rouge1": 50.0, "macro_f1": 30.0}


def test_baselines_on_whatever_the_data_root_holds(monkeypatch):
  monkeypatch.setenv("CROSSTASK_DATA_DIR", str(paths.SAMPLE_DIR))
  rows = report.baseline_rows()
  assert sorted(rows["6"]) == sorted(f"EXT-{b}{s}" for b in ("LEAD", "HEURISTIC", "ORACLE")
                                     for s in ("", " [dev]"))
  fixture = readers.read_citesum("test", paths.SAMPLE_DIR)
  assert rows["5"] == baselines.score_citesum(list(fixture))
