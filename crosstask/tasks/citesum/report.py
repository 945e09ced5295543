"""The CiteSum paper's Tables 5-9 beside a crosstask run.

    python -m crosstask.tasks.citesum.report \\
        --run "6:CiTES (prompting)=/tmp/eval/metrics.jsonl" --baselines

`--run TABLE:ROW=PATH[#TASK]` takes the newest step's metrics of TASK (or of
the only task) from a `metrics.jsonl` that `crosstask.eval` wrote (PATH may be
its folder); `--baselines` scores the extractive baselines on whatever data the
data root holds (SciTLDR-A dev/test, CiteSum test). The paper's R-L is compared
with `rougeLsum` for HF-scored tables (5, 7-9; one-sentence outputs make it
equal to rougeL) and with `rougeL` for SciTLDR (Table 6, ROUGE-1.5.5).
Paper rows are BART/PEGASUS-large; crosstask's are T5-family: reference
points, not parity targets, except the extractive baselines.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Mapping, Sequence

from crosstask import records
from crosstask.tasks.common import report as common_report

R = ("rouge1", "rouge2", "rougeL")


def _rows(columns: Sequence[str], rows: Mapping[str, Sequence[float]]) -> dict:
  return {name: dict(zip(columns, values)) for name, values in rows.items()}


PAPER: dict[str, dict] = {
    "5": {"title": "Table 5: CiteSum test (BART-large unless noted)", "lsum": True,
          "metrics": R, "rows": _rows(R, {
              "Abs -> TLDR": (41.86, 19.36, 33.72),
              "Abs -> TLDR (PEGASUS)": (41.56, 18.63, 33.45),
              "AIC -> TLDR": (41.99, 19.52, 33.89),
              "Abs+Title -> TLDR": (42.02, 19.44, 33.78),
              "Abs+Disci -> TLDR": (42.01, 19.34, 33.72),
              "Abs -> TLDR/Title": (41.85, 19.21, 33.42),
              "Abs -> TLDR/Title/Disci": (41.89, 19.51, 33.73),
              "EXT-LEAD": (21.94, 7.35, 17.36),
              "EXT-HEURISTIC": (29.32, 12.53, 23.99),
              "EXT-ORACLE": (44.17, 27.22, 38.32)})},
    "6": {"title": "Table 6: SciTLDR-A test, official multi-max ROUGE", "lsum": False,
          "metrics": R, "rows": _rows(R, {
              "EXT-ORACLE": (47.7, 24.7, 38.5),
              "PACSUM": (19.3, 4.0, 15.1), "BERTSum": (38.5, 16.6, 30.5),
              "MatchSum": (42.7, 20.0, 34.0), "BART": (43.3, 20.8, 35.0),
              "BART_XSUM": (42.5, 21.1, 34.9), "CATTs": (43.8, 20.9, 35.5),
              "CATTs_XSUM": (44.3, 21.3, 35.9),
              "CiTES (post-processing)": (43.4, 19.7, 34.8),
              "CiTES (prompting)": (43.5, 20.9, 36.0),
              "CiTES (prompting, gold 3 tokens)": (46.3, 27.4, 41.9),
              "CiTES (32-shot)": (43.8, 21.4, 36.4),
              "BART (128-shot)": (42.1, 19.1, 33.4),
              "CiTES (128-shot)": (44.5, 21.6, 36.5)})},
    "7": {"title": "Table 7: CiteSum title generation and discipline classification",
          "lsum": True, "metrics": R + ("macro_f1", "weighted_f1"), "rows": {
              # The paper gives F1 as fractions; here x100 like crosstask's metrics.
              "BART": {"rouge1": 52.03, "rouge2": 30.15, "rougeL": 45.99,
                       "macro_f1": 24.0, "weighted_f1": 77.0},
              "CiTES": {"rouge1": 52.50, "rouge2": 30.42, "rougeL": 46.26,
                        "macro_f1": 30.0, "weighted_f1": 78.0}}},
    "8": {"title": "Table 8: XSum test (few-shot: mean of 3 runs)", "lsum": True,
          "metrics": R, "rows": _rows(R, {
              "full PTGEN": (29.70, 9.21, 23.24), "full BERTSum": (38.81, 16.50, 31.27),
              "full BART": (45.14, 22.27, 37.25), "full PEGASUS": (47.21, 24.56, 39.25),
              "0-shot BART": (15.40, 2.63, 10.74), "0-shot PEGASUS": (19.27, 3.00, 12.72),
              "0-shot T5-LB": (26.06, 6.77, 20.47), "0-shot BART-LB": (26.18, 7.60, 20.92),
              "0-shot WikiTransfer": (31.85, 10.44, 23.75),
              "0-shot CiTES": (26.43, 7.17, 19.64), "0-shot CiTES_Title": (28.21, 8.40, 21.81),
              "10-shot BART": (31.34, 9.98, 23.44), "10-shot PEGASUS": (19.39, 3.45, 14.02),
              "10-shot WikiTransfer": (35.17, 12.76, 26.80), "10-shot CiTES": (36.21, 14.22, 28.18),
              "100-shot BART": (34.16, 12.62, 26.66), "100-shot PEGASUS": (39.07, 16.44, 31.27),
              "100-shot WikiTransfer": (37.26, 14.20, 28.85),
              "100-shot CiTES": (41.45, 18.74, 33.29)})},
    "9": {"title": "Table 9: Gigaword test (1,951)", "lsum": True, "metrics": R,
          "rows": _rows(R, {
              "full PEGASUS": (39.12, 19.86, 36.24), "unsup. SEQ3": (25.39, 8.21, 22.68),
              "unsup. Brief": (21.26, 5.60, 18.89), "unsup. TED": (25.58, 8.94, 22.83),
              "0-shot T5": (15.67, 4.86, 14.38), "0-shot BART": (22.07, 7.47, 20.02),
              "0-shot PEGASUS": (23.39, 7.59, 20.20), "0-shot T5-LB": (24.00, 8.19, 21.62),
              "0-shot BART-LB": (25.14, 8.72, 22.35), "0-shot CiTES": (24.75, 8.42, 21.84),
              "0-shot CiTES_Title": (27.87, 10.43, 24.56)})},
}


def ours_from_metrics(table: str, metrics: Mapping[str, float]) -> dict[str, float]:
  """A run's metric dict in the table's columns (rougeLsum as R-L where HF scored it)."""
  spec = PAPER[table]
  out = {}
  for m in spec["metrics"]:
    key = "rougeLsum" if (m == "rougeL" and spec["lsum"] and "rougeLsum" in metrics) else m
    # Multi-output tasks key their metrics "<field>/<metric>".
    value = metrics.get(key)
    if value is None:
      value = next((v for k, v in metrics.items() if k.endswith("/" + key)), None)
    if value is not None:
      out[m] = float(value)
  return out


def read_metrics(path: str | pathlib.Path, task: str | None = None) -> dict[str, float]:
  """The newest step's metrics of `task` (or the only task) in a metrics.jsonl."""
  newest = records.latest(records.read(path))
  if task is None:
    if len(newest) != 1:
      raise ValueError(f"{records.metrics_file(path)} holds tasks {sorted(newest)}; "
                       "name one as PATH#TASK")
    (task,) = newest
  if task not in newest:
    raise ValueError(f"{records.metrics_file(path)} has no metrics for task {task!r}")
  return dict(newest[task].metrics)


def render(ours: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
  """Every table with crosstask's numbers (ours[table][row]) beside the paper's."""
  parts = []
  for table, spec in PAPER.items():
    rows = {row: ours_from_metrics(table, m) for row, m in ours.get(table, {}).items()}
    parts.append(f"### {spec['title']}\n\n" +
                 common_report.beside_paper(rows, spec["rows"], spec["metrics"], floatfmt=".2f"))
  return "\n\n".join(parts)


def baseline_rows() -> dict[str, dict[str, dict[str, float]]]:
  """Extractive baselines on the data the data root holds: table -> row -> metrics."""
  from crosstask.tasks.citesum import baselines  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.citesum import readers  # pylint: disable=g-import-not-at-top
  out: dict[str, dict] = {}
  for split, suffix in (("test", ""), ("validation", " [dev]")):
    try:
      records = list(readers.read_scitldr(split))
    except FileNotFoundError:
      continue
    for name, metrics in baselines.score_scitldr(records).items():
      out.setdefault("6", {})[name + suffix] = metrics
  try:
    records = list(readers.read_citesum("test"))
  except FileNotFoundError:
    records = []
  if records:
    out["5"] = baselines.score_citesum(records)
  return out


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--run", action="append", default=[],
                      help="TABLE:ROW=PATH[#TASK], e.g. '6:CiTES (prompting)=/tmp/eval'")
  parser.add_argument("--baselines", action="store_true",
                      help="score EXT-LEAD/HEURISTIC/ORACLE on the data root's data")
  args = parser.parse_args(argv)
  ours: dict[str, dict] = {}
  for spec in args.run:
    try:
      head, path = spec.split("=", 1)
      table, row = head.split(":", 1)
    except ValueError:
      parser.error(f"--run {spec!r}: expected TABLE:ROW=PATH[#TASK]")
    if table not in PAPER:
      parser.error(f"--run {spec!r}: table must be one of {sorted(PAPER)}")
    path, _, task = path.partition("#")
    ours.setdefault(table, {})[row] = read_metrics(path, task or None)
  if args.baselines:
    for table, rows in baseline_rows().items():
      ours.setdefault(table, {}).update(rows)
  print(render(ours))
  return 0


if __name__ == "__main__":
  sys.exit(main())
