"""`python -m crosstask.results RUN_DIR... --plot FILE.png`: learning curves and the table.

One figure: the training loss a token against step for every run (from the
TensorBoard scalars training writes under `<run>/train/`), each task's headline
metric against step for every run (from its `metrics.jsonl` records, every step
evaluated), and the final table as bars with their 95% intervals as error bars.
`series` returns the numbers `plot` draws, so what is drawn can be checked.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import textwrap
from crosstask import records as R
from crosstask.results.columns import headline_metric
from crosstask.results.runs import Run

LOSS_TAG = "train/loss_per_token"
Curve = dict[int, float]  # step -> value


@dataclasses.dataclass
class Series:
  """What the figure shows: curves per run, and the table's bars (mean, low, high)."""
  loss: dict[str, Curve]  # run -> training loss a token
  metrics: dict[str, dict[str, Curve]]  # "task metric (split)" -> run -> curve
  bars: dict[str, dict[str, tuple[float, float | None, float | None]]]  # column -> row -> bar
  # Run or row -> its colour, the same in every panel: a run's curves, and its row's bars
  # (a row pooling several runs' seeds has a colour of its own).
  colors: dict[str, str] = dataclasses.field(default_factory=dict)


def training_loss(run_dir: pathlib.Path, tag: str = LOSS_TAG) -> Curve:
  """The scalar `tag` against step from the TensorBoard events under `<run_dir>/train`."""
  folder = run_dir / "train"
  if not folder.is_dir() or not any(folder.glob("events.out.tfevents.*")):
    return {}
  from tensorboard.backend.event_processing import (  # pylint: disable=g-import-not-at-top
      event_accumulator)
  from tensorboard.util import tensor_util  # pylint: disable=g-import-not-at-top
  events = event_accumulator.EventAccumulator(
      str(folder), size_guidance={event_accumulator.TENSORS: 0, event_accumulator.SCALARS: 0})
  events.Reload()
  tags = events.Tags()
  if tag in tags.get("tensors", []):
    return {e.step: float(tensor_util.make_ndarray(e.tensor_proto)) for e in events.Tensors(tag)}
  if tag in tags.get("scalars", []):
    return {e.step: float(e.value) for e in events.Scalars(tag)}
  return {}


def metric_curves(run: Run) -> dict[str, Curve]:
  """Each task's headline metric against step, from every record under the run: a curve
  per split label, as 'task metric (split)', so the first N examples evaluated in training
  and the whole split evaluated after it are two curves, not one that jumps between them."""
  files = ([run.path] if run.path.is_file() else sorted(run.path.rglob(R.FILENAME))
           if run.path.exists() else [])
  out: dict[str, Curve] = {}
  for record in R.read_many(files):
    key = headline_metric(record.task, record.metrics)
    if key is not None:
      name = f"{record.task} {key}" + (f" ({record.split})" if record.split else "")
      out.setdefault(name, {})[record.step] = record.metrics[key]
  return {name: dict(sorted(curve.items())) for name, curve in out.items()}


def series(table) -> Series:
  """The curves of a `table.Table`'s runs and its cells as bars."""
  runs = [run for row in table.rows for run in row.runs]
  names = [run.path.name or str(run.path) for run in runs]
  loss = {name: curve for name, run in zip(names, runs)
          if (curve := training_loss(run.path))}
  metrics: dict[str, dict[str, Curve]] = {}
  for name, run in zip(names, runs):
    for metric, curve in metric_curves(run).items():
      metrics.setdefault(metric, {})[name] = curve
  colors = {name: f"C{i % 10}" for i, name in enumerate(dict.fromkeys(names))}
  for row in table.rows:
    own = [run.path.name or str(run.path) for run in row.runs]
    colors.setdefault(row.label, colors[own[0]] if len(own) == 1 else f"C{len(colors) % 10}")
  bars: dict[str, dict] = {}
  for header, column in zip(table.headers(), table.columns):
    for row in table.rows:
      cell = row.cells.get(column)
      if cell is not None and cell["mean"] is not None:
        low, high = cell.get("ci95") or (None, None)
        bars.setdefault(header, {})[row.label] = (cell["mean"], low, high)
  return Series(loss, metrics, bars, colors)


def _curves(ax, curves: dict[str, Curve], title: str, ylabel: str,
            colors: dict[str, str]) -> None:
  for name, curve in curves.items():
    ax.plot(list(curve), list(curve.values()), marker="." if len(curve) < 30 else None,
            label=name, color=colors.get(name))
  ax.set_title(textwrap.fill(title, 48), fontsize=8)
  ax.set_xlabel("step")
  ax.set_ylabel(ylabel)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=7)


def _bars(ax, header: str, bars: dict[str, tuple], colors: dict[str, str]) -> None:
  labels = list(bars)
  means = [bars[k][0] for k in labels]
  errors = [[m - (b[1] if b[1] is not None else m) for m, b in zip(means, bars.values())],
            [(b[2] if b[2] is not None else m) - m for m, b in zip(means, bars.values())]]
  ax.bar(range(len(labels)), means, yerr=errors, capsize=4,
         color=[colors.get(label, "tab:blue") for label in labels], alpha=0.8)
  ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=15)
  ax.set_title(textwrap.fill(header, 48), fontsize=8)
  ax.grid(alpha=0.3, axis="y")


def plot(data: Series, path: str | os.PathLike) -> pathlib.Path:
  """Draws `data` into one PNG (matplotlib's Agg backend: no display needed)."""
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  fig = draw(data)
  try:
    fig.tight_layout()
    out = pathlib.Path(os.fspath(path))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
  finally:
    plt.close(fig)
  return out


def draw(data: Series):
  """The figure of `data`: a panel for the training loss, each metric and each column's
  bars (close it with `pyplot.close`)."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  panels = ([("loss", data.loss)] if data.loss else []) + [
      ("metric", (name, curves)) for name, curves in data.metrics.items()] + [
      ("bars", (header, bars)) for header, bars in data.bars.items()]
  if not panels:
    raise ValueError("nothing to plot: no training loss, evaluated metric or table cell")
  cols = min(3, len(panels))
  rows = -(-len(panels) // cols)
  fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
  for ax, (kind, content) in zip(axes.flat, panels):
    if kind == "loss":
      _curves(ax, content, "training loss a token", "loss", data.colors)
    elif kind == "metric":
      _curves(ax, content[1], content[0], content[0].split(" ")[1], data.colors)
    else:
      _bars(ax, *content, data.colors)
  for ax in list(axes.flat)[len(panels):]:
    ax.axis("off")
  return fig
