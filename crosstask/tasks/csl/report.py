"""Table 4 of the CSL paper: few-shot scores with and without meta training.

Δ_m, the average relative gain, is defined as CrossFit's ARG (Ye et al.,
2021); the CSL paper's own definition could not be consulted from the stored
sources, so this is the documented interpretation: for each few-shot task, average its score over seeds
for "few" (few-shot fine-tuning only) and "+meta" (meta training first), take
the relative change (+meta − few) / few × 100, and average that over the
tasks of the partition. A task whose "few" score is 0 is left out of Δ_m (its
relative gain is undefined) and counted in the returned `skipped`.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np


@dataclasses.dataclass(frozen=True)
class Episode:
  """One few-shot task run: a partition, k, task, seed and its two scores."""
  partition: str
  k: int
  task: str
  seed: int
  few: float
  meta: float


def task_score(metrics: Mapping[str, float]) -> float:
  """One number per run: the mean of the task's metrics (all on 0-100)."""
  if not metrics:
    raise ValueError("no metrics to average")
  return float(np.mean(list(metrics.values())))


def summarize(episodes: Iterable[Episode]) -> dict:
  """{(partition, k): {'few', '+meta', 'delta_m', 'tasks', 'skipped'}}."""
  cells = collections.defaultdict(lambda: collections.defaultdict(list))
  for e in episodes:
    cells[(e.partition, e.k)][e.task].append((e.few, e.meta))
  out = {}
  for key, tasks in cells.items():
    few = {t: np.mean([s[0] for s in v]) for t, v in tasks.items()}
    meta = {t: np.mean([s[1] for s in v]) for t, v in tasks.items()}
    gains = [(meta[t] - few[t]) / few[t] * 100 for t in tasks if few[t] != 0]
    out[key] = {"few": float(np.mean(list(few.values()))),
                "+meta": float(np.mean(list(meta.values()))),
                "delta_m": float(np.mean(gains)) if gains else float("nan"),
                "tasks": len(tasks), "skipped": len(tasks) - len(gains)}
  return out


def format_table(summary: Mapping) -> str:
  """Rows per partition (few, +meta, Δ_m %), one column per k."""
  partitions = sorted({p for p, _ in summary})
  ks = sorted({k for _, k in summary})
  head = f"{'partition':<10}{'':<8}" + "".join(f"{f'k={k}':>10}" for k in ks)
  lines = [head, "-" * len(head)]
  for p in partitions:
    for row, key, fmt in (("few", "few", "{:10.2f}"), ("+meta", "+meta", "{:10.2f}"),
                          ("Δ_m(%)", "delta_m", "{:+10.2f}")):
      cells = "".join(fmt.format(summary[(p, k)][key]) if (p, k) in summary else f"{'-':>10}"
                      for k in ks)
      lines.append(f"{p if row == 'few' else '':<10}{row:<8}{cells}")
  return "\n".join(lines)


def report(episodes: Iterable[Episode]) -> dict:
  """Prints the Table 4 layout and returns the summary."""
  summary = summarize(episodes)
  print(format_table(summary))
  return summary
