"""A run's results beside a paper's numbers: markdown tables and curves.

Pure Python; matplotlib is imported only by `plot_curves`.
"""

from __future__ import annotations

import math
import os
import pathlib
from collections.abc import Mapping, Sequence


def _cell(value, floatfmt: str) -> str:
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return "-"
  if isinstance(value, (int, float)) and not isinstance(value, bool):
    return format(value, floatfmt)
  return str(value).replace("|", "\\|")


def markdown_table(rows: Sequence[Mapping], columns: Sequence[str], *,
                   title: str | None = None, floatfmt: str = ".2f") -> str:
  """A markdown table of `columns` of `rows`; a missing or NaN cell prints '-'."""
  lines = [f"**{title}**", ""] if title else []
  lines.append("| " + " | ".join(columns) + " |")
  lines.append("|" + "|".join("---" for _ in columns) + "|")
  for row in rows:
    lines.append("| " + " | ".join(_cell(row.get(c), floatfmt) for c in columns) + " |")
  return "\n".join(lines)


def beside_paper(ours: Mapping[str, Mapping[str, float]],
                 paper: Mapping[str, Mapping[str, float]], metrics: Sequence[str], *,
                 floatfmt: str = ".1f") -> str:
  """A row per system/setting: for each metric, ours, the paper's, and ours − paper."""
  columns = ["setting"]
  for m in metrics:
    columns += [f"{m} ours", f"{m} paper", f"{m} Δ"]
  rows = []
  for setting in list(dict.fromkeys([*ours, *paper])):
    row = {"setting": setting}
    for m in metrics:
      a = ours.get(setting, {}).get(m)
      b = paper.get(setting, {}).get(m)
      row[f"{m} ours"], row[f"{m} paper"] = a, b
      row[f"{m} Δ"] = None if a is None or b is None else a - b
    rows.append(row)
  return markdown_table(rows, columns, floatfmt=floatfmt)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
  """Mean and population standard deviation (the spread over seeds papers report)."""
  values = [float(v) for v in values]
  if not values:
    raise ValueError("mean_std needs at least one value")
  mean = sum(values) / len(values)
  return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def plot_curves(curves: Mapping[str, Mapping[float, float]], path: str | os.PathLike, *,
                xlabel: str, ylabel: str, title: str | None = None) -> pathlib.Path:
  """One line per curve (e.g. few vs +meta over k), saved as PNG; returns the path."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  out = pathlib.Path(os.fspath(path))
  out.parent.mkdir(parents=True, exist_ok=True)
  fig, ax = plt.subplots(figsize=(5, 3.5))
  try:
    for name, points in curves.items():
      xs = sorted(points)
      ax.plot(xs, [points[x] for x in xs], marker="o", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
      ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
  finally:
    plt.close(fig)
  return out
