"""A FewCLUE run beside the FewCLUE README: mean ± std over k = 0..4, and few_all.

Input: the `metrics.jsonl` files that `crosstask.eval` wrote for test_public
(one line per (step, task); task names like `fewclue_eprstmt_k3_rank` carry k).
For a task and k evaluated at several steps, the latest step counts (the
checkpoint selected on dev_k is the one evaluated). The FewCLUE score is the
mean over the nine tasks of the k = 0..4 means (`eval.clue_scores`).

The command line is the results table's (the task layer hosts no job):

  python -m crosstask.results --merge --tasks '^(FewCLUE score|fewclue \w+ k=)' \
      /runs/k*/eval_test_public/metrics.jsonl
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from crosstask.metrics import clue_scores
from crosstask import records
from crosstask.tasks.clue import paper
from crosstask.tasks.clue import submissions
from crosstask.tasks.common import report as common_report

SPLITS = ("0", "1", "2", "3", "4")
PAPER_ROWS = ("PET", "Human")


def collect(paths: Iterable[str | os.PathLike], metric: str = "accuracy"
            ) -> dict[str, dict[str, float]]:
  """{fewclue task: {k: score}} from metrics.jsonl files; the latest step wins."""
  latest: dict[tuple[str, str], tuple[int, float]] = {}
  for row in records.read_many(paths):
    value = row.metrics.get(metric)
    try:
      benchmark, task, k, _ = submissions.parse_task_name(row.task)
    except ValueError:
      continue
    if benchmark != "fewclue" or k is None or value is None:
      continue
    if (task, k) not in latest or row.step >= latest[(task, k)][0]:
      latest[(task, k)] = (row.step, value)
  out: dict[str, dict[str, float]] = {}
  for (task, k), (_, value) in latest.items():
    out.setdefault(task, {})[k] = value
  return out


def summarize(scores: Mapping[str, Mapping[str, float]]) -> dict[str, dict]:
  """Per task: mean and std over k = 0..4 (when all five are there) and few_all."""
  out = {}
  for task in clue_scores.FEWCLUE_TASKS:
    per_k = scores.get(task, {})
    row = {"splits": sum(k in per_k for k in SPLITS), "few_all": per_k.get("all")}
    if row["splits"] == len(SPLITS):
      row["mean"], row["std"] = common_report.mean_std([per_k[k] for k in SPLITS])
    out[task] = row
  return out


def fewclue_score(summary: Mapping[str, Mapping]) -> float | None:
  """The FewCLUE score when every task has all five splits, else None."""
  if any("mean" not in summary[t] for t in clue_scores.FEWCLUE_TASKS):
    return None
  return clue_scores.fewclue_score({t: summary[t]["mean"] for t in clue_scores.FEWCLUE_TASKS})


def format_report(summary: Mapping[str, Mapping], paper_rows: Sequence[str] = PAPER_ROWS) -> str:
  """Markdown: a row per task, ours as `mean ± std (few_all)` beside the README rows."""
  columns = ["task", "ours k=0..4 (few_all)", *paper_rows]
  rows = []
  for task in clue_scores.FEWCLUE_TASKS:
    s = summary[task]
    ours = "-" if "mean" not in s else f"{s['mean']:.2f} ± {s['std']:.2f}"
    if s["few_all"] is not None:
      ours += f" ({s['few_all']:.2f})"
    elif "mean" not in s:
      ours = f"- ({s['splits']}/5 splits)"
    rows.append({"task": task, "ours k=0..4 (few_all)": ours,
                 **{p: paper.FEWCLUE_README[p][task] for p in paper_rows}})
  score = fewclue_score(summary)
  rows.append({"task": "FewCLUE score", "ours k=0..4 (few_all)":
               "-" if score is None else f"{score:.2f}",
               **{p: paper.FEWCLUE_README[p]["score"] for p in paper_rows}})
  return common_report.markdown_table(rows, columns, title="FewCLUE test_public accuracy "
                                      "(ours: mean ± std over k = 0..4, few_all in brackets; "
                                      "paper: FewCLUE README)")


def report(paths: Iterable[str | os.PathLike]) -> str:
  """Prints and returns the report for the given metrics.jsonl files."""
  text = format_report(summarize(collect(paths)))
  print(text)
  return text
