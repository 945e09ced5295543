"""95% intervals: the bootstrap over examples, the t interval over seeds, and table cells."""

import json
import math

import numpy as np
import pytest

from crosstask import records
from crosstask.results import bootstrap
from crosstask.results import intervals
from crosstask.results import paper as paper_numbers
from crosstask.results import rescoring
from crosstask.results import table


def _accuracy(correct):
  return lambda idx: {"accuracy": 100.0 * correct[idx].mean()}


def test_accuracy_interval_matches_the_normal_approximation():
  correct = np.array([1.0] * 280 + [0.0] * 120)  # 70% of 400
  low, high = bootstrap.interval(_accuracy(correct), len(correct))["accuracy"]
  half = 100 * 1.96 * math.sqrt(0.7 * 0.3 / 400)  # 4.49 points
  assert low == pytest.approx(70 - half, abs=0.6) and high == pytest.approx(70 + half, abs=0.6)
  # Same seed, same interval: tables are reproducible.
  assert bootstrap.interval(_accuracy(correct), 400)["accuracy"] == (low, high)


def test_a_metric_that_is_no_mean_is_recomputed_on_each_resample():
  correct = np.array([1.0] * 28 + [0.0] * 12)
  def share(idx):  # accuracy, except on one example: not a mean of per-example values
    return {"share": 100.0 * correct[idx].mean() if len(idx) > 1 else -1.0}
  assert not bootstrap.per_example(share, len(correct))
  assert set(bootstrap.per_example(_accuracy(correct), len(correct))) == {"accuracy"}
  # Recomputed on the same draws, it gives the per-example path's interval exactly.
  assert bootstrap.interval(share, len(correct))["share"] == pytest.approx(
      bootstrap.interval(_accuracy(correct), len(correct))["accuracy"], abs=1e-9)


def test_a_large_set_recomputes_its_corpus_metrics_on_fewer_resamples():
  """A recomputed metric costs a call over every example a resample (LOT OutGen's 661
  stories: 0.7 s, twelve minutes at 1000): a large set takes the first
  max(100, 100000 // n) draws, for all its metrics alike, so they stay paired."""
  correct = np.array([1.0, 0.0] * 500)  # 1000 examples
  calls = []
  def corpus(idx):
    calls.append(len(idx))
    return {"share": 100.0 * correct[idx].mean() if len(idx) > 1 else -1.0,
            "accuracy": 100.0 * correct[idx].mean()}
  got = bootstrap.replicates(corpus, len(correct))
  assert {k: len(v) for k, v in got.items()} == {"share": 100, "accuracy": 100}
  assert calls.count(1000) == 100 + 1  # the resamples, and the whole set once
  calls.clear()  # A caller that scored the whole set (crosstask.score) passes it in.
  again = bootstrap.replicates(corpus, len(correct), whole=corpus(np.arange(len(correct))))
  assert calls.count(1000) == 100 + 1 and all(np.array_equal(got[k], again[k]) for k in got)
  # The same first 100 draws as the per-example path's 1000: the intervals' values agree.
  alone = bootstrap.replicates(_accuracy(correct), len(correct))
  assert len(alone["accuracy"]) == 1000
  np.testing.assert_allclose(got["share"], alone["accuracy"][:100])
  assert [bootstrap.recomputed_resamples(1000, n) for n in (30, 100, 661, 5000)] == [
      1000, 1000, 151, 100]
  # A benchmark aggregate over members resampled 1000 and 100 times pairs the first 100.
  low, high = bootstrap.joint(lambda v: (v["a"] + v["b"]) / 2,
                              {"a": alone["accuracy"], "b": got["share"]})
  assert low <= 50 <= high


def test_seeds_get_the_t_interval_of_their_mean():
  low, high = bootstrap.over_seeds([60.0, 70.0])
  half = 12.7062 * math.sqrt(50.0) / math.sqrt(2)  # t(0.975, 1 df) * sample sd / sqrt(n)
  assert (low, high) == pytest.approx((65 - half, 65 + half), abs=1e-3)
  assert bootstrap.over_seeds([60.0]) is None


def test_a_cell_gets_the_interval_of_the_predictions_saved_beside_it(tmp_path):
  """An eval's seqio log (<task>-<step>.jsonl) is resampled with the task's metric functions."""
  folder = tmp_path / "run" / "inference_eval"
  folder.mkdir(parents=True)
  # The module the run registered its tasks with is the one imported to find them.
  (folder.parent / "operative_config.gin").write_text(
      "MIXTURE_OR_TASK_MODULE = 'crosstask.tasks.csl'\n", "utf-8")
  labels = ["工学"] * 18 + ["理学"] * 12
  predictions = ["工学"] * 30  # right on 18 of 30
  with open(folder / "csl_zh_title_to_category-000050.jsonl", "w", encoding="utf-8") as f:
    for target, prediction in zip(labels, predictions):
      f.write(json.dumps({"input": {}, "target": {"category": target}, "output": prediction,
                          "prediction": {"category": prediction}}, ensure_ascii=False) + "\n")
  records.append(folder, [records.Record(50, "csl_zh_title_to_category",
                                         {"accuracy": 60.0, "macro_f1": 37.5}, "f" * 8,
                                         source="eval", split="validation")])
  result = table.build([tmp_path / "run"], paper="none", all_metrics=True, resamples=200)
  cells = {c.metric: result.rows[0].cells[c] for c in result.columns}
  low, high = cells["accuracy"]["ci95"]
  # Drawn with its examples' own seed (SEED mixed with a hash of the logged targets).
  seed = rescoring.example_seed(intervals.logged_outputs(
      folder / "csl_zh_title_to_category-000050.jsonl"))
  expected = bootstrap.interval(_accuracy(np.array([1.0] * 18 + [0.0] * 12)), 30, 200, seed)[
      "accuracy"]
  assert (low, high) == pytest.approx(expected) and low < 60.0 < high
  f1_low, f1_high = cells["macro_f1"]["ci95"]
  assert f1_low < 37.5 < f1_high
  assert f"60.00 [{low:.2f}, {high:.2f}]" in result.markdown()
  assert table.build([tmp_path / "run"], paper="none", resamples=0).rows[0].cells[
      result.columns[0]]["ci95"] is None


def test_csl_keeps_the_whole_sets_label_mapping_in_every_draw(tmp_path):
  # An untrained model's outputs are no label; CSL's official accuracy maps each to the
  # nearest gold label, the set's first where none is near. Mapped again in each draw,
  # that label was whichever the draw held first: 26.67 got [0.00, 43.33].
  folder = tmp_path / "run" / "inference_eval"
  folder.mkdir(parents=True)
  (folder.parent / "operative_config.gin").write_text(
      "MIXTURE_OR_TASK_MODULE = 'crosstask.tasks.csl'\n", "utf-8")
  labels = ["工学", "理学", "理学", "医学"] * 7 + ["工学", "理学"]  # 8 工学 of 30 first
  log = folder / "csl_zh_title_to_category-000050.jsonl"
  with open(log, "w", encoding="utf-8") as f:
    for target in labels:
      f.write(json.dumps({"input": {}, "target": {"category": target}, "output": "规模规模",
                          "prediction": {"category": "规模规模"}}, ensure_ascii=False) + "\n")
  import crosstask.tasks.csl  # pylint: disable=g-import-not-at-top,unused-import
  task = intervals._task("csl_zh_title_to_category")
  out = intervals.logged_outputs(log)
  assert rescoring.metrics(task, out)["accuracy"] == pytest.approx(100 * 8 / 30)
  draws = rescoring.replicates(task, out, 200)
  # Every junk output is 工学, the whole set's first label, in every draw: a draw's score
  # is its share of 工学 papers, the bootstrap of that 0/1 column.
  correct = np.array([label == "工学" for label in labels], float)
  expected = bootstrap.replicates(_accuracy(correct), 30, 200, rescoring.example_seed(out))
  np.testing.assert_allclose(draws["accuracy"], expected["accuracy"])
  low, high = bootstrap.percentiles(draws["accuracy"])
  assert 10 <= low < 26.67 < high < 45


def test_a_computed_baseline_gets_intervals_and_a_quoted_number_says_why_not(tmp_path):
  """The demo's majority-class baseline is computed over examples: its predictions are saved
  beside its record and resampled. A number quoted from a paper has none to resample."""
  from crosstask import demo  # pylint: disable=g-import-not-at-top
  labels = ["工学"] * 12 + ["理学"] * 18
  row = {"task": demo.TRAIN_TASK, "baseline": "majority(train)", "examples": 30,
         "outputs": ([{"category": t} for t in labels], ["工学"] * 30,
                     [{"category": "工学"}] * 30),
         "accuracy": 40.0}
  folder = demo.write_baseline_record(tmp_path, row, None)
  result = table.build([folder], paper="none", resamples=200)
  (column,) = result.columns
  cell = result.rows[0].cells[column]
  seed = rescoring.example_seed(intervals.logged_outputs(
      folder / f"{demo.TRAIN_TASK}-000000.jsonl"))
  expected = bootstrap.interval(_accuracy(np.array([1.0] * 12 + [0.0] * 18)), 30, 200, seed)
  assert cell["mean"] == 40.0 and cell["ci95"] == pytest.approx(list(expected["accuracy"]))
  # The CSL paper's Δ_m is quoted: its cells carry no interval, and the table says why.
  quoted = table.Table(paper_numbers.paper_rows(
      [table.Column("CSL Δ_m 2-1 k=8", "", "test", "")]), [
          table.Column("CSL Δ_m 2-1 k=8", "", "test", "")])
  assert all(r.cells[c]["ci95"] is None and r.cells[c]["no_ci95"] == paper_numbers.QUOTED
             for r in quoted.rows for c in r.cells)
  assert ("No 95% interval in T5-small (CSL Table 9), T5-base (CSL Table 9): quoted from a "
          "paper: no examples to resample.") in quoted.markdown()
