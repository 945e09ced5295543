"""The Table-9-shaped pretraining report and the LOT Overall from eval outputs."""

import json

import pytest

from crosstask.tasks.lot import report


def _write(path, rows):
  path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_table9_takes_the_latest_step_of_both_objectives(tmp_path):
  _write(tmp_path / "metrics.jsonl", [
      {"step": 10, "task": report.INFILL, "metrics": {"perplexity": 90.0, "bleu-3": 1.0,
                                                      "bleu-4": 0.5}},
      {"step": 20, "task": report.INFILL, "metrics": {"perplexity": 40.0, "bleu-3": 2.0,
                                                      "bleu-4": 1.0}},
      {"step": 20, "task": report.CONTINUATION, "metrics": {"perplexity": 80.0,
                                                            "bleu-3": 0.3, "bleu-4": 0.1}},
  ])
  row = report.table9_row(report.latest_metrics(tmp_path))
  assert row["infill/perplexity"] == 40.0 and row["continuation/bleu-4"] == 0.1
  table = report.table9_markdown(row)
  assert "| LongLM-small (paper) | 11.61 | 73.80 | 68.96 | 22.91 | 5.30 | 2.43 |" in table
  assert table.splitlines()[-1] == "| ours (demo corpus) | 40.00 | 2.00 | 1.00 | 80.00 | 0.30 | 0.10 |"


def test_bad_metrics_line_names_file_and_line(tmp_path):
  (tmp_path / "metrics.jsonl").write_text('{"step": 1, "task": "a", "metrics": {}}\nnot json\n')
  with pytest.raises(ValueError, match=r"metrics.jsonl:2"):
    report.latest_metrics(tmp_path)
  with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
    report.latest_metrics(tmp_path / "absent")


def test_lot_overall_from_task_metrics():
  metrics = {"lot_zh_clozet_rank": {"accuracy": 79.93}, "lot_zh_senpos": {"accuracy": 70.00}}
  assert report.lot_overall_report(metrics, "validation") == {
      "understanding": pytest.approx(73.64, abs=0.005)}


def test_cli_is_the_results_table_beside_table9(tmp_path, capsys):
  _write(tmp_path / "metrics.jsonl", [
      {"step": 20, "task": report.INFILL, "metrics": {"perplexity": 40.0, "bleu-3": 2.0,
                                                      "bleu-4": 1.0}},
      {"step": 20, "task": report.CONTINUATION, "metrics": {"perplexity": 80.0,
                                                            "bleu-3": 0.3, "bleu-4": 0.1}},
  ])
  from crosstask.results import __main__ as results  # pylint: disable=g-import-not-at-top
  assert results.main([str(tmp_path), "--all_metrics", "--paper", "all", "--tasks",
                       f"^({report.INFILL}|{report.CONTINUATION})$"]) in (0, None)
  out = capsys.readouterr().out
  header = out.splitlines()[0]
  assert f"{report.INFILL} perplexity @20" in header
  small = next(line for line in out.splitlines() if line.startswith("| LongLM-small"))
  ours = next(line for line in out.splitlines() if line.startswith(f"| {tmp_path.name} "))
  cells = lambda line: line.strip("| ").split(" | ")  # noqa: E731
  # The paper's and our perplexity of infilling stand in the same column.
  column = next(i for i, c in enumerate(cells(header))
                if c.startswith(f"{report.INFILL} perplexity"))
  assert cells(small)[column] == "11.61" and cells(ours)[column] == "40.00"
