"""Shared k-shot sampling and report helpers."""

import collections

import pytest

from crosstask.tasks.common import report, sampling


def test_k_shot_nested_per_class_and_seeded():
  records = [{"label": f"c{i % 3}"} for i in range(30)]
  previous = []
  for k in (1, 2, 4):
    idx = sampling.k_shot(records, k, seed=5, label_of=lambda r: r["label"])
    assert collections.Counter(records[i]["label"] for i in idx) == {"c0": k, "c1": k, "c2": k}
    assert set(previous) <= set(idx)
    previous = idx
  assert sampling.k_shot(records, 4, 5) == sampling.k_shot(records, 4, 5) != sampling.k_shot(records, 4, 6)
  assert len(sampling.k_shot(records, 7, 0)) == 7
  with pytest.raises(ValueError, match="k must be >= 0"):
    sampling.k_shot(records, -1, 0)


def test_episode_helpers():
  split = sampling.split_records(200, 1, n_val=10, n_test=20)
  assert (len(split.test), len(split.validation)) == (20, 10)
  assert len(sampling.meta_indices(split, 1, "t", n=30)) == 30
  assert sampling.episode_splits([0], [1]) == ["s0_k1", "s0_meta", "s0_validation", "s0_test"]
  assert sampling.parse_episode_split("s2_k16") == (2, "k16")
  assert sampling.parse_episode_split("s2_kx") is None


def test_markdown_tables_and_mean_std(tmp_path):
  table = report.markdown_table([{"a": "x|y", "b": 1.234}, {"a": "z"}], ["a", "b"], title="T")
  assert table.splitlines() == ["**T**", "", "| a | b |", "|---|---|", "| x\\|y | 1.23 |", "| z | - |"]
  side = report.beside_paper({"T5 1-1": {"R-L": 40.0}}, {"T5 1-1": {"R-L": 40.4, "B-4": 17.1}},
                             ["R-L", "B-4"])
  assert "| T5 1-1 | 40.0 | 40.4 | -0.4 | - | 17.1 | - |" in side
  assert report.mean_std([1.0, 3.0]) == (2.0, 1.0)
  with pytest.raises(ValueError):
    report.mean_std([])
