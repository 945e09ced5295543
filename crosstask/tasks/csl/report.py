"""CSL cross-task results: the paper's metric pairs, Δ_m, and Table 9 beside a run.

Each partition's few-shot task is scored by the paper's pair of metrics
(Table 9): ROUGE-L and BLEU-4 for titles, Bpref and F1 for keywords, accuracy
and F1 for classes. Δ_m is an absolute difference in points: the mean over
those metrics of (+meta − few), averaged over seeds first. Scenario 3's
partitions have no "few" runs of their own; they are compared with the "few"
runs of the partitions they break (3-1 with 1-2, 3-2 with 2-1). Scenario 1's
"Avg. Δ_m" is the mean of the six metric differences of 1-1, 1-2 and 1-3.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import pathlib
from collections.abc import Iterable, Mapping, Sequence

from crosstask.tasks.common import report as common
from crosstask.tasks.csl import paper_tables
from crosstask.tasks.csl import scenarios

# Metric keys of the few-shot task's output field, and their names in Table 9.
PAIRS = {"title": ("rougeL", "bleu"), "keywords": ("bpref", "keyword_f1"),
         "category": ("accuracy", "macro_f1"), "discipline": ("accuracy", "macro_f1")}
PAPER_NAMES = {"rougeL": "R-L", "bleu": "B-4", "bpref": "Bpref", "keyword_f1": "F1",
               "accuracy": "Acc", "macro_f1": "F1"}


def metric_pair(partition: str) -> tuple[str, str]:
  """The two metric keys Table 9 reports for the partition's few-shot task."""
  _, (_, outputs) = scenarios.TABLE_3[scenarios.check_partition(partition)]
  return PAIRS[outputs[0]]


def few_source(partition: str) -> str:
  """The partition whose "few" runs a partition is compared with (itself, or 1-2 / 2-1)."""
  return scenarios.SHARED_FEW.get(partition, partition)


@dataclasses.dataclass(frozen=True)
class Episode:
  """One run of a partition's few-shot task: 'few' or '+meta', k shots, one seed."""
  partition: str
  k: int
  setting: str
  seed: int
  metrics: Mapping[str, float]

  def __post_init__(self):
    if self.setting not in ("few", "+meta"):
      raise ValueError(f"setting must be 'few' or '+meta', got {self.setting!r}")


def delta_m(few: Sequence[float], meta: Sequence[float]) -> float:
  """Mean over metrics of (+meta − few), in points."""
  if len(few) != len(meta) or not few:
    raise ValueError(f"delta_m needs equal, non-empty metric lists, got {few} and {meta}")
  return sum(m - f for f, m in zip(few, meta)) / len(few)


def summarize(episodes: Iterable[Episode]) -> dict[int, dict]:
  """{k: {"few": {p: (m1, m2)}, "+meta": {...}, "delta_m": {p or "scenario 1": Δ}}}, seed means."""
  runs = collections.defaultdict(list)
  for e in episodes:
    pair = metric_pair(e.partition)
    missing = [m for m in pair if m not in e.metrics]
    if missing:
      raise ValueError(f"episode {e.partition} k={e.k} {e.setting} seed {e.seed} lacks "
                       f"metrics {missing} (has {sorted(e.metrics)})")
    runs[(e.k, e.setting, e.partition)].append(tuple(float(e.metrics[m]) for m in pair))
  out: dict[int, dict] = {}
  for (k, setting, partition), values in runs.items():
    means = tuple(sum(v[i] for v in values) / len(values) for i in range(2))
    out.setdefault(k, {"few": {}, "+meta": {}, "delta_m": {}})[setting][partition] = means
  for cell in out.values():
    for partition, meta in cell["+meta"].items():
      few = cell["few"].get(few_source(partition))
      if few is not None:
        cell["delta_m"][partition] = delta_m(few, meta)
    s1 = [p for p in scenarios.SCENARIOS[1] if p in cell["delta_m"]]
    if len(s1) == len(scenarios.SCENARIOS[1]):
      cell["delta_m"]["scenario 1"] = sum(cell["delta_m"][p] for p in s1) / len(s1)
  return out


def _rows(cell: Mapping) -> dict[str, dict[str, float]]:
  rows = {}
  for partition in scenarios.PARTITIONS:
    names = "/".join(PAPER_NAMES[m] for m in metric_pair(partition))
    for setting in ("few", "+meta"):
      values = cell[setting].get(partition)
      if values is not None:
        rows[f"{partition} {setting} ({names})"] = {"m1": values[0], "m2": values[1]}
    if partition in cell["delta_m"]:
      rows[f"{partition} Δ_m"] = {"m1": cell["delta_m"][partition]}
    if partition == scenarios.SCENARIOS[1][-1] and "scenario 1" in cell["delta_m"]:
      rows["scenario 1 Avg. Δ_m"] = {"m1": cell["delta_m"]["scenario 1"]}
  return rows


def paper_cell(k: int, model: str) -> dict:
  """Table 9's numbers for `k` shots and `model` ('T5-base', 'BART-small', ...)."""
  try:
    return paper_tables.TABLE_9[(k, model)]
  except KeyError:
    raise ValueError(f"Table 9 has no row for k={k}, model={model!r}; shots "
                     f"{paper_tables.SHOTS}, models {paper_tables.MODELS}") from None


def beside_table_9(summary: Mapping[int, dict], k: int, model: str = "T5-base") -> str:
  """Markdown: our few / +meta / Δ_m for `k` shots next to Table 9's row for `model`."""
  ours = _rows(summary.get(k, {"few": {}, "+meta": {}, "delta_m": {}}))
  paper = _rows(paper_cell(k, model))
  table = common.beside_paper(ours, paper, ["m1", "m2"])
  return f"**{k}-shot, ours vs Table 9 ({model})**; m1/m2 are the metrics named per row\n\n{table}"


def plot_few_vs_meta(summary: Mapping[int, dict], partition: str,
                     path: str | os.PathLike) -> pathlib.Path:
  """few and +meta over k for one partition (the mean of its metric pair), as a PNG."""
  curves = {"few": {}, "+meta": {}}
  for k, cell in summary.items():
    few = cell["few"].get(few_source(partition))
    meta = cell["+meta"].get(partition)
    if few is not None:
      curves["few"][k] = sum(few) / 2
    if meta is not None:
      curves["+meta"][k] = sum(meta) / 2
  names = " and ".join(PAPER_NAMES[m] for m in metric_pair(partition))
  return common.plot_curves(curves, path, xlabel="shots (k)", ylabel=f"mean of {names}",
                            title=f"CSL partition {partition}: few vs +meta")


def report(episodes: Iterable[Episode], model: str = "T5-base") -> dict[int, dict]:
  """Prints every k's table beside Table 9 and returns the summary."""
  summary = summarize(episodes)
  for k in sorted(summary):
    if (k, model) in paper_tables.TABLE_9:
      print(beside_table_9(summary, k, model), end="\n\n")
    else:
      print(common.markdown_table([{"row": r, **v} for r, v in _rows(summary[k]).items()],
                                  ["row", "m1", "m2"], title=f"{k}-shot (no Table 9 row)"),
            end="\n\n")
  return summary
