"""Seeded episode and k-shot sampling on record indices (numpy only, no TF randomness).

Episodes (the cross-task protocol): per seed, the records are permuted once;
the first `n_test` indices are the test set, the next `n_val` the validation
set, and the rest is halved into a few-shot pool and a meta pool, so test,
validation, few-shot and meta instances never share a record (why: a meta
task seeing a test paper's title would leak a few-shot task's answer). Within
a pool each task draws with its own stream (seed, purpose, crc32 of the task
key); k-shot sets are prefixes of one order, so 1-shot ⊂ 2-shot ⊂ 4-shot.
"""

from __future__ import annotations

import dataclasses
import functools
import zlib
from collections.abc import Callable, Sequence

import numpy as np
from absl import logging


@dataclasses.dataclass(frozen=True)
class RecordSplit:
  """Disjoint record indices of one seed."""
  test: np.ndarray
  validation: np.ndarray
  few_pool: np.ndarray
  meta_pool: np.ndarray


def rng(seed: int, purpose: int, key: str = "") -> np.random.Generator:
  """The random stream of (seed, purpose, key): stable across runs and platforms."""
  return np.random.default_rng([seed, purpose, zlib.crc32(key.encode("utf-8"))])


def split_records(num_records: int, seed: int, n_val: int, n_test: int) -> RecordSplit:
  """Disjoint test / validation / few-shot pool / meta pool indices for `seed`."""
  if num_records < n_val + n_test + 2:
    raise ValueError(f"episode sampling needs more than {n_val + n_test + 1} records "
                     f"(validation {n_val} + test {n_test} + pools), got {num_records}")
  perm = rng(seed, 0).permutation(num_records)
  rest = perm[n_test + n_val:]
  half = len(rest) // 2
  return RecordSplit(test=perm[:n_test], validation=perm[n_test:n_test + n_val],
                     few_pool=rest[:half], meta_pool=rest[half:])


@functools.lru_cache(maxsize=None)
def warn_cut(part: str, got: int, wanted: int, why: str) -> None:
  """Logs, once per message, that an episode `part` holds `got` of the `wanted` examples
  the protocol asks, and `why` (the data behind it).

  Why: a data root smaller than the benchmark's (the bundled sample) still builds every
  episode split, each cut to what its pool holds; a score from one is not the paper's
  setting, and nothing else says so."""
  logging.warning("%s holds %d of the %d examples the protocol asks: %s", part, got, wanted, why)


def _first_k(order: Sequence[int], k: int, classes=None) -> list[int]:
  """The first k of `order`, or the first k of each class (classes[i] = label of i)."""
  if k < 0:
    raise ValueError(f"k must be >= 0, got {k}")
  if classes is None:
    return [int(i) for i in order[:k]]
  taken: dict = {}
  chosen = []
  for i in order:
    c = classes[i]
    if taken.get(c, 0) < k:
      taken[c] = taken.get(c, 0) + 1
      chosen.append(int(i))
  return chosen


def few_shot_indices(split: RecordSplit, k: int, seed: int, task_key: str,
                     classes: Sequence | None = None) -> np.ndarray:
  """k instances of the few-shot pool (k per class when `classes`, a label per record, is given)."""
  order = rng(seed, 1, task_key).permutation(split.few_pool)
  return np.asarray(_first_k(order, k, classes), dtype=order.dtype)


def meta_indices(split: RecordSplit, seed: int, task_key: str, n: int) -> np.ndarray:
  """`n` meta-training instances of one task (fewer if the meta pool is smaller)."""
  return rng(seed, 2, task_key).permutation(split.meta_pool)[:n]


def k_shot(records: Sequence, k: int, seed: int,
           label_of: Callable[[object], object] | None = None) -> list[int]:
  """Indices of k records (k per class under `label_of`), nested across k for one seed."""
  order = rng(seed, 3).permutation(len(records))
  classes = None if label_of is None else [label_of(r) for r in records]
  return _first_k(order, k, classes)


def episode_split_name(seed: int, part: str) -> str:
  """SeqIO split name of an episode part: 's0_k4' (few-shot train), 's0_meta', 's0_test'."""
  return f"s{seed}_{part}"


def parse_episode_split(name: str) -> tuple[int, str] | None:
  """(seed, part) of an episode split name, or None for ordinary splits."""
  if not name.startswith("s") or "_" not in name:
    return None
  seed, part = name[1:].split("_", 1)
  if not seed.isdigit() or not (part in ("meta", "validation", "test")
                                or (part[:1] == "k" and part[1:].isdigit())):
    return None
  return int(seed), part


def episode_splits(seeds: Sequence[int], k_shots: Sequence[int]) -> list[str]:
  """All episode split names for `seeds` and `k_shots`."""
  parts = [f"k{k}" for k in k_shots] + ["meta", "validation", "test"]
  return [episode_split_name(s, p) for s in seeds for p in parts]
