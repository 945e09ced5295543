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
