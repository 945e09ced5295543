"""The CiteSum paper's Tables 5-9 beside a crosstask run.

    python -m crosstask.citesum_report \\
        --run "6:CiTES (prompting)=/tmp/eval/metrics.jsonl" --baselines

`--run TABLE:ROW=PATH[#TASK]` takes the newest step's metrics of TASK (or of
the only task) from a `metrics.jsonl` that `crosstask.eval` wrote (PATH may be
its folder), where TASK is one the table measures; a split other than the paper's
test split is named beside ROW; `--baselines` scores the extractive baselines on whatever data the
data root holds (SciTLDR-A dev/test, CiteSum test). The paper's R-L is compared
with `rougeLsum` for HF-scored tables (5, 7-9; one-sentence outputs make it
equal to rougeL) and with `rougeL` for SciTLDR (Table 6, ROUGE-1.5.5).
Paper rows are BART/PEGASUS-large; crosstask's are T5-family: reference
points, not parity targets, except the extractive baselines.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from collections.abc import Mapping, Sequence

from crosstask import records
from crosstask import startup
from crosstask import vocabularies
from crosstask.tasks import citesum
from crosstask.tasks.common import report as common_report


def _paper_tables() -> dict[str, dict]:
  """Tables 5-9 from `paper_tables.json`: table -> title, lsum, metrics and row -> metrics.

  The paper gives Table 7's F1 as fractions; the file has them x100, like
  crosstask's metrics.
  """
  path = pathlib.Path(__file__).with_name("paper_tables.json")
  tables = json.loads(path.read_text(encoding="utf-8"))
  return {table: {**spec, "metrics": tuple(spec["metrics"]),
                  "rows": {row: dict(zip(spec["metrics"], values))
                           for row, values in spec["rows"].items()}}
          for table, spec in tables.items()}


PAPER: dict[str, dict] = _paper_tables()


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


# The tasks each table measures: another table's task (SciTLDR's ROUGE as Table 5's) would
# read as that table's result. The paper's rows are all on each dataset's test split.
TABLE_TASKS = {"5": re.compile(r"citesum_\w+_to_tldr"), "6": re.compile(r"scitldr_a_\w+"),
               "7": re.compile(r"citesum_abstract_to_(title|discipline)(_dedup)?"),
               "8": re.compile(r"xsum_\w+"), "9": re.compile(r"gigaword_\w+")}
PAPER_SPLIT = "test"


def run_row(table: str, row: str, path: str | pathlib.Path,
            task: str | None = None) -> tuple[str, dict[str, float]]:
  """(the row's label, its metrics) of a run for `table`: the task must be one the table
  measures (`TABLE_TASKS`), and a split other than the paper's test split is named in the
  label (`CiTES [validation]`), as the baselines' dev rows are."""
  record = read_record(path, task)
  if not TABLE_TASKS[table].fullmatch(vocabularies.base_task_name(record.task)):
    takes = [t for t in citesum.TASKS if TABLE_TASKS[table].fullmatch(t)]
    raise ValueError(f"{records.metrics_file(path)}: task {record.task!r} is not what "
                     f"{PAPER[table]['title'].split(':')[0]} measures; it takes "
                     f"{', '.join(takes)}")
  if record.split and record.split != PAPER_SPLIT:
    row = f"{row} [{record.split}]"
  return row, dict(record.metrics)


def read_metrics(path: str | pathlib.Path, task: str | None = None) -> dict[str, float]:
  """The newest step's metrics of `task` (or the only task) in a metrics.jsonl."""
  return dict(read_record(path, task).metrics)


def read_record(path: str | pathlib.Path, task: str | None = None) -> records.Record:
  """The newest step's record of `task` (or the only task) in a metrics.jsonl.

  The task must be one of CiteSum's (`citesum.TASKS`, in any vocabulary's copy): another
  task's ROUGE or F1 beside the paper's would read as a CiteSum result.
  """
  newest = records.latest(records.read(path))
  if task is None:
    if len(newest) != 1:
      raise ValueError(f"{records.metrics_file(path)} holds tasks {sorted(newest)}; "
                       "name one as PATH#TASK")
    (task,) = newest
  if vocabularies.base_task_name(task) not in citesum.TASKS:
    raise ValueError(f"{records.metrics_file(path)}: task {task!r} is not a CiteSum task; "
                     f"the report takes {', '.join(citesum.TASKS)} (or a vocabulary's copy)")
  if task not in newest:
    raise ValueError(f"{records.metrics_file(path)} has no metrics for task {task!r}")
  return newest[task]


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
  """The command line; `python -m crosstask.citesum_report` quiets TensorFlow first."""
  parser = argparse.ArgumentParser(prog="python -m crosstask.citesum_report",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--run", action="append", default=[],
                      help="TABLE:ROW=PATH[#TASK], e.g. '6:CiTES (prompting)=/tmp/eval'")
  parser.add_argument("--baselines", action="store_true",
                      help="score EXT-LEAD/HEURISTIC/ORACLE on the data root's data")
  startup.add_verbose_flag(parser)
  args = parser.parse_args(argv)
  runs = []  # (table, row, path, task)
  for spec in args.run:
    try:
      head, path = spec.split("=", 1)
      table, row = head.split(":", 1)
    except ValueError:
      parser.error(f"--run {spec!r}: expected TABLE:ROW=PATH[#TASK]")
    if table not in PAPER:
      parser.error(f"--run {spec!r}: table must be one of {sorted(PAPER)}")
    path, _, task = path.partition("#")
    runs.append((table, row, path, task or None))
  ours: dict[str, dict] = {}
  try:
    for table, row, path, task in runs:
      label, metrics = run_row(table, row, path, task)
      ours.setdefault(table, {})[label] = metrics
    if args.baselines:
      for table, rows in baseline_rows().items():
        ours.setdefault(table, {}).update(rows)
  except (FileNotFoundError, ValueError) as e:
    print(f"ERROR: {e}", file=sys.stderr)
    return 2
  print(render(ours))
  return 0


if __name__ == "__main__":
  sys.exit(main())
