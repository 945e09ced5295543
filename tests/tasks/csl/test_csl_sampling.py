"""Cross-task episodes: disjoint, deterministic, right-sized."""

import collections
import logging

import numpy as np
import pytest
import seqio

import crosstask.tasks.csl  # pylint: disable=unused-import  # registers CSL
from crosstask import paths
from crosstask.tasks.csl import sampling
from crosstask.tasks.csl import tasks as T


@pytest.mark.parametrize("seed", sampling.SEEDS)
def test_split_is_disjoint_and_sized(seed):
  s = sampling.split_records(1000, seed)
  assert len(s.test) == len(s.validation) == 64
  parts = [s.test, s.validation, s.few_pool, s.meta_pool]
  allidx = np.concatenate(parts)
  assert len(allidx) == len(set(allidx.tolist())) == 1000
  meta = sampling.meta_indices(s, seed, "task")
  assert len(meta) == 100 and set(meta.tolist()) <= set(s.meta_pool.tolist())


def test_determinism_and_seed_dependence():
  a, b = sampling.split_records(500, 3), sampling.split_records(500, 3)
  assert all(np.array_equal(x, y) for x, y in zip(vars(a).values(), vars(b).values()))
  assert not np.array_equal(a.test, sampling.split_records(500, 4).test)
  k1 = sampling.few_shot_indices(a, 8, 3, "t1")
  assert np.array_equal(k1, sampling.few_shot_indices(b, 8, 3, "t1"))
  assert not np.array_equal(k1, sampling.few_shot_indices(a, 8, 3, "t2"))


def test_k_shot_sets_are_nested_and_per_class():
  s = sampling.split_records(1000, 0)
  classes = [f"c{i % 7}" for i in range(1000)]
  previous = set()
  for k in sampling.K_SHOTS:
    idx = sampling.few_shot_indices(s, k, 0, "cls", classes)
    counts = collections.Counter(classes[i] for i in idx)
    assert all(v == k for v in counts.values()) and (k == 0 or len(counts) == 7)
    assert previous <= set(idx.tolist()) <= set(s.few_pool.tolist())
    previous = set(idx.tolist())
    assert len(sampling.few_shot_indices(s, k, 0, "gen")) == k


def test_too_few_records_is_a_clear_error():
  with pytest.raises(ValueError, match="needs more than 129 records"):
    sampling.split_records(100, 0)


def test_episode_split_names():
  assert sampling.parse_episode_split("s3_k8") == (3, "k8")
  assert sampling.parse_episode_split("s0_meta") == (0, "meta")
  assert sampling.parse_episode_split("validation") is None
  assert len(sampling.episode_splits()) == 8 * 8


def test_episode_datasets_on_official_data(official_data):
  del official_data
  pool = T.episode_pool()
  task = seqio.get_mixture_or_task("csl_zh_abstract_to_discipline")
  n_classes = len({r["discipline"] for r in pool})
  lengths = {"inputs": 8, "targets": 8}
  few = list(task.get_dataset(lengths, split="s1_k1", shuffle=False).as_numpy_iterator())
  labels = [ex["targets_pretokenized"].decode() for ex in few]
  assert len(labels) == len(set(labels)) >= n_classes - 5  # rare classes may be absent from the pool
  test = list(task.get_dataset(lengths, split="s1_test", shuffle=False).as_numpy_iterator())
  assert len(test) == 64
  en = seqio.get_mixture_or_task("csl_en_abstract_to_discipline")
  en_test = list(en.get_dataset(lengths, split="s1_test", shuffle=False).as_numpy_iterator())
  assert [e["targets_pretokenized"] for e in en_test] == [e["targets_pretokenized"] for e in test]
  meta = seqio.get_mixture_or_task("csl_zh_title_to_keywords")
  meta_titles = {ex["inputs_pretokenized"].decode().split("标题：", 1)[1] for ex in
                 meta.get_dataset(lengths, split="s1_meta", shuffle=False).as_numpy_iterator()}
  assert len(meta_titles) == 100
  split = sampling.split_records(len(pool), 1)
  assert not meta_titles & {pool[i]["title"] for i in np.concatenate([split.test, split.validation])}


def test_episodes_cut_short_by_a_small_data_root_say_so(caplog):
  # The bundled sample's 130 records leave one record to each seed's two pools, so a
  # meta set holds 1 of its 100 instances and an 8-shot set 1 of its 8: said once each.
  T._read_pool.cache_clear()  # pylint: disable=protected-access
  sampling.warn_cut.cache_clear()
  root = paths.SAMPLE_DIR
  with paths.use_data_dir(root), caplog.at_level(logging.WARNING, logger="absl"):
    for _ in range(2):
      assert len(T.read_split("s0_meta", inputs=("title",), outputs=("keywords",))) == 1
      assert len(T.read_split("s1_k8", inputs=("abstract",), outputs=("title",))) == 1
  why = (f"the 130 CSL records under {root} leave each seed a few-shot pool of 1 and a "
         "meta pool of 1 (the paper's data: thousands)")
  assert [r.getMessage() for r in caplog.records] == [
      f"each CSL task's meta set (s<seed>_meta) holds 1 of the 100 examples the protocol "
      f"asks: {why}",
      f"each CSL task's 8-shot set (s<seed>_k8) holds 1 of the 8 examples the protocol asks: "
      f"{why}"]
  caplog.clear()
  with caplog.at_level(logging.WARNING, logger="absl"):  # 1,000 records: nothing to say
    with_enough = [dict(T.episode_pool(root)[0], title=str(i)) for i in range(1000)]
    assert len(T.episode_indices(with_enough, ("title",), ("keywords",), 0, "meta")) == 100
  assert not caplog.records
