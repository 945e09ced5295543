"""`crosstask.results --plot`: learning curves and the table's bars, drawn from the records."""

import pytest
from clu import metric_writers

from crosstask import records
from crosstask.results import __main__ as cli
from crosstask.results import plots
from crosstask.results import table

LOSSES = {10: 2.5, 20: 1.25, 30: 0.75}  # exact in float32


def _run(root, name, seed, accuracies):
  """A run folder as training leaves it: config, train/ TensorBoard events, eval records."""
  folder = root / name
  (folder / "inference_eval").mkdir(parents=True)
  (folder / "operative_config.gin").write_text(
      f"RANDOM_SEED = {seed}\nMODEL/config.TransformerConfig.d_model = 64\n", "utf-8")
  writer = metric_writers.create_default_writer(str(folder / "train"), asynchronous=False)
  for step, loss in LOSSES.items():  # as runtime.progress writes them
    writer.write_scalars(step, {"train/loss_per_token": loss * (seed + 1), "train/loss": 9.0})
  writer.close()
  records.append(folder / "inference_eval", [
      records.Record(step, "clue_afqmc", {"accuracy": acc, "f1": 1.0}, "a" * 8, split="validation")
      for step, acc in accuracies.items()])
  return folder


def test_plot_draws_the_records_curves_and_bars(tmp_path, capsys):
  a = _run(tmp_path, "seed0", 0, {10: 50.0, 30: 70.0})
  b = _run(tmp_path, "seed1", 1, {10: 40.0, 30: 60.0})
  result = table.build([a, b], paper="none")
  data = plots.series(result)
  assert data.loss == {"seed0": LOSSES, "seed1": {s: 2 * v for s, v in LOSSES.items()}}
  assert data.metrics == {"clue_afqmc accuracy (validation)": {"seed0": {10: 50.0, 30: 70.0},
                                                               "seed1": {10: 40.0, 30: 60.0}}}
  (header,) = result.headers()
  ((row, (mean, low, high)),) = data.bars[header].items()
  assert (row, mean) == ("seed0 + seed1", 65.0) and [low, high] == result.rows[0].cells[
      result.columns[0]]["ci95"] and low < mean < high

  png = tmp_path / "out" / "curves.png"
  assert cli.main([str(a), str(b), "--paper", "none", "--plot", str(png)]) == 0
  out, err = capsys.readouterr()
  assert out.startswith("| run |") and err == f"plot: {png}\n"  # stdout: the table alone
  data = png.read_bytes()
  assert data[:8] == b"\x89PNG\r\n\x1a\n" and 10_000 < len(data) < 1_000_000
  from matplotlib import image  # pylint: disable=g-import-not-at-top
  height, width, _ = image.imread(png).shape
  assert (width, height) == (1008, 256)  # three 4.2 x 3.2 inch panels in a row at 80 dpi


def test_nothing_to_plot_is_an_error(tmp_path):
  with pytest.raises(ValueError, match="nothing to plot"):
    plots.plot(plots.Series({}, {}, {}), tmp_path / "x.png")


def test_each_run_keeps_its_colour_in_every_panel(tmp_path):
  # A run drawn alone in a metric's panel took the first colour there and another in the
  # loss panel; every bar was blue.
  a = _run(tmp_path, "a", 0, {10: 50.0})
  b = _run(tmp_path, "b", 0, {})
  (b / "operative_config.gin").write_text("RANDOM_SEED = 0\nMODEL/config.TransformerConfig"
                                          ".d_model = 128\n", "utf-8")  # another model's row
  records.append(b / "inference_eval", [records.Record(
      10, "clue_tnews", {"accuracy": 30.0}, "b" * 8, split="validation")])
  data = plots.series(table.build([a, b], paper="none"))
  assert data.colors == {"a": "C0", "b": "C1"}
  fig = plots.draw(data)
  try:
    drawn = {}
    for ax in fig.axes:
      for line in ax.get_lines():
        if not line.get_label().startswith("_"):
          drawn.setdefault(line.get_label(), set()).add(line.get_color())
      labels = [t.get_text() for t in ax.get_xticklabels()]
      for label, patch in zip(labels, ax.patches):
        drawn.setdefault(label, set()).add(patch.get_facecolor()[:3])
  finally:
    from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
    plt.close(fig)
  from matplotlib import colors  # pylint: disable=g-import-not-at-top
  assert drawn == {"a": {"C0", colors.to_rgb("C0")}, "b": {"C1", colors.to_rgb("C1")}}


def test_each_split_label_is_a_curve_of_its_own(tmp_path):
  # Training evaluates its first 12 examples every few steps, the eval job the whole split
  # at the end: drawn as one curve, the line jumped from one to the other and the panel
  # named neither.
  run = _run(tmp_path, "run", 0, {40: 55.0})
  records.append(run / "inference_eval", [
      records.Record(step, "clue_afqmc", {"accuracy": acc}, "a" * 8, split="validation[:12]")
      for step, acc in ((20, 25.0), (40, 50.0))])
  data = plots.series(table.build([run], paper="none"))
  assert data.metrics == {"clue_afqmc accuracy (validation)": {"run": {40: 55.0}},
                          "clue_afqmc accuracy (validation[:12])": {"run": {20: 25.0, 40: 50.0}}}
  fig = plots.draw(data)
  try:
    titles = {ax.get_title(): ax.get_ylabel() for ax in fig.axes if ax.get_xlabel() == "step"}
  finally:
    from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
    plt.close(fig)
  assert titles == {"training loss a token": "loss",
                    "clue_afqmc accuracy (validation)": "accuracy",
                    "clue_afqmc accuracy (validation[:12])": "accuracy"}
