"""The 27-number aggregation against the paper's Table 2, Appendix D and Appendix H."""

import math

import numpy as np
import pytest

from crosstask.tasks.scirepeval import averages as agg
from crosstask.tasks.scirepeval import benchmark as B

# Appendix H (MTL CTRL trained on format subsets): in-train CLF RGN PRX SRCH,
# out-of-train CLF RGN PRX SRCH, out-of-train Avg, overall Avg.
APPENDIX_H = {
    "CLF": (69.1, 16.3, 58.4, 71.3, 70.7, 18.3, 79.7, 73.4, 68.0, 63.7),
    "RGN": (48.8, 45.8, 53.1, 69.6, 63.9, 20.4, 61.5, 67.4, 56.4, 55.3),
    "PRX": (57.5, 33.8, 66.8, 73.1, 69.5, 17.6, 87.3, 78.5, 72.4, 68.0),
    "SRCH": (53.2, 32.0, 59.8, 78.1, 63.5, 14.6, 77.6, 78.0, 65.4, 62.0),
    "CLF+RGN": (68.4, 41.9, 60.9, 71.8, 71.5, 18.0, 79.0, 73.9, 67.8, 65.6),
    "CLF+PRX": (65.9, 31.9, 65.7, 73.0, 70.9, 16.3, 86.6, 75.7, 71.8, 68.0),
    "CLF+SRCH": (66.6, 20.3, 60.8, 78.4, 70.9, 13.9, 81.5, 72.0, 68.3, 64.4),
    "RGN+PRX": (58.4, 44.0, 67.4, 72.4, 69.5, 18.7, 87.3, 78.2, 72.6, 69.0),
    "RGN+SRCH": (54.6, 44.4, 60.2, 78.8, 67.2, 18.4, 77.2, 78.3, 66.5, 63.9),
    "PRX+SRCH": (57.5, 33.2, 66.8, 78.1, 68.2, 18.4, 86.8, 79.3, 72.1, 67.9),
    "All": (67.5, 44.8, 67.0, 78.3, 71.7, 19.3, 87.2, 79.7, 73.1, 70.4),
}
FORMATS = ("CLF", "RGN", "PRX", "SRCH")


@pytest.mark.parametrize("row", sorted({**agg.TABLE_2, **agg.APPENDIX_D}))
def test_average_from_in_and_out_of_train(row):
  in_train, out_of_train, average = {**agg.TABLE_2, **agg.APPENDIX_D}[row]
  assert agg.combined_average(in_train, out_of_train) == pytest.approx(average, abs=0.1 + 1e-9)


@pytest.mark.parametrize("row", sorted(APPENDIX_H))
def test_appendix_h_parts_from_format_averages(row):
  v = APPENDIX_H[row]
  fin, fout = dict(zip(FORMATS, v[:4])), dict(zip(FORMATS, v[4:8]))
  out = agg.from_format_averages(fout, "out_of_train")
  assert out == pytest.approx(v[8], abs=0.1 + 1e-9)
  overall = agg.combined_average(agg.from_format_averages(fin, "in_train"), out)
  assert overall == pytest.approx(v[9], abs=0.1 + 1e-9)


def test_counts_add_up_to_27():
  assert sum(agg.FORMAT_COUNTS["in_train"].values()) == 7
  assert sum(agg.FORMAT_COUNTS["out_of_train"].values()) == 20
  evaluated = [t for t in B.TASKS if t.evaluated]
  assert len(B.TASKS) == 24 and len(evaluated) == 23


def _results(value=50.0):
  out = {}
  for t in B.TASKS:
    if not t.evaluated:
      continue
    base = {m: value for m in t.metrics}
    if t.few_shot:
      out[t.name] = {"complete": base, "few_shot": [
          {"sample_size": k, "results": {m: value - 10 * (i + 1) for m in t.metrics}}
          for i, (k, _) in enumerate(t.few_shot)]}
    elif t.name == "Paper-Reviewer Matching":
      out[t.name] = {"hard_P_5": 10.0, "hard_P_10": 20.0, "soft_P_5": 30.0, "soft_P_10": 40.0}
    else:
      out[t.name] = base
  return out


def test_aggregate_of_a_full_results_file():
  res = _results()
  res["scored_by"] = {"backend": "sklearn"}
  got = agg.aggregate(res)
  assert got["complete"] and got["missing"] == []
  assert got["in_train_count"] == 7 and got["out_of_train_count"] == 20
  # Few-shot tasks: mean(50, 40, 30) = 40; PRM: mean(10..40) = 25; all else 50.
  assert got["numbers"]["in_train"]["Fields of study"] == 40.0
  assert got["numbers"]["out_of_train"]["Paper-Reviewer Matching"] == 25.0
  assert got["numbers"]["out_of_train"]["SciDocs CoView/map"] == 50.0
  assert got["in_train"] == pytest.approx((6 * 50 + 40) / 7)
  assert got["out_of_train"] == pytest.approx((17 * 50 + 2 * 40 + 25) / 20)
  assert got["average"] == pytest.approx(agg.combined_average(got["in_train"],
                                                              got["out_of_train"]))
  assert got["out_of_train_formats"]["PRX"] == pytest.approx((10 * 50 + 25) / 11)


def test_aggregate_reports_missing_tasks():
  res = _results()
  res["S2AND"] = {"not_run": True}
  del res["Search"]
  got = agg.aggregate(res)
  assert not got["complete"] and set(got["missing"]) == {"S2AND", "Search"}
  assert got["in_train_count"] == 6 and got["out_of_train_count"] == 19
  assert math.isclose(got["average"], np.mean(
      [v for part in got["numbers"].values() for v in part.values()]))


def test_a_few_shot_task_scored_without_its_runs_is_missing_not_a_key_error():
  """What `score --no_few_shot` writes for a few-shot task (its complete metrics, flat)
  has no paper number; the aggregate says so instead of failing with KeyError 'complete'."""
  res = _results()
  res["Fields of study"] = res["Fields of study"]["complete"]
  got = agg.aggregate(res)
  assert got["missing"] == ["Fields of study"] == got["without_few_shot"]
  assert not got["complete"] and got["in_train_count"] == 6


def test_tasks_scored_from_the_official_float16_cache():
  assert {t.name for t in B.TASKS if t.cached} == {
      "Max hIndex", "SciDocs MeSH", "SciDocs CoView", "SciDocs CoCite", "SciDocs CoRead"}


def test_task_table_matches_the_official_config(official_data):
  official = B.read_tasks_config(official_data / "scirepeval" / "scirepeval_tasks.jsonl")
  assert len(official) == 22
  ours = {t.name: t for t in B.TASKS if t.evaluated and not t.external}
  assert set(official) == set(ours)
  for name, spec in official.items():
    mine = ours[name]
    assert (spec.type, spec.metrics, spec.meta, spec.test, spec.few_shot, spec.multi_label,
            spec.fields, spec.simple_format, spec.cached) == (
        mine.type, mine.metrics, mine.meta, mine.test, mine.few_shot, mine.multi_label,
        mine.fields, mine.simple_format, mine.cached), name
  line = B.tasks_config_json(B.get("fos"))
  assert '"multi_label": true' in line and '"sample_size": 10' in line
