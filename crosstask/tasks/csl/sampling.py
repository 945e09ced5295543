"""Episode sampling for the cross-task few-shot protocol (pure numpy on indices).

Per seed, the pool of records is permuted once: the first `n_test` indices are
the test set, the next `n_val` the validation set, and the rest is halved into
a few-shot pool and a meta pool, so test, validation, few-shot and meta
instances never share a paper (why: a meta task seeing a test paper's title
would leak the answer of a few-shot task on that paper). Within a pool, each
task draws with its own stream (seed, purpose, crc32 of the task key); the
k-shot sets are nested prefixes of one order, so 1-shot ⊂ 2-shot ⊂ 4-shot ⊂ 8-shot.
No TF randomness: the same seed always gives the same indices.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence

import numpy as np

META_SIZE = 100
K_SHOTS = (0, 1, 2, 4, 8)
SEEDS = tuple(range(8))
N_VAL = 64
N_TEST = 64


@dataclasses.dataclass(frozen=True)
class RecordSplit:
  """Disjoint record indices of one seed."""
  test: np.ndarray
  validation: np.ndarray
  few_pool: np.ndarray
  meta_pool: np.ndarray


def _rng(seed: int, purpose: int, key: str = "") -> np.random.Generator:
  return np.random.default_rng([seed, purpose, zlib.crc32(key.encode("utf-8"))])


def split_records(num_records: int, seed: int, n_val: int = N_VAL,
                  n_test: int = N_TEST) -> RecordSplit:
  """Disjoint test / validation / few-shot pool / meta pool indices for `seed`."""
  if num_records < n_val + n_test + 2:
    raise ValueError(f"episode sampling needs more than {n_val + n_test + 1} records "
                     f"(validation {n_val} + test {n_test} + pools), got {num_records}")
  perm = _rng(seed, 0).permutation(num_records)
  rest = perm[n_test + n_val:]
  half = len(rest) // 2
  return RecordSplit(test=perm[:n_test], validation=perm[n_test:n_test + n_val],
                     few_pool=rest[:half], meta_pool=rest[half:])


def few_shot_indices(split: RecordSplit, k: int, seed: int, task_key: str,
                     classes: Sequence | None = None) -> np.ndarray:
  """k instances (or k per class when `classes`, a label per record, is given)."""
  if k < 0:
    raise ValueError(f"k must be >= 0, got {k}")
  order = _rng(seed, 1, task_key).permutation(split.few_pool)
  if classes is None:
    return order[:k]
  taken: dict = {}
  chosen = []
  for i in order:
    c = classes[i]
    if taken.get(c, 0) < k:
      taken[c] = taken.get(c, 0) + 1
      chosen.append(i)
  return np.asarray(chosen, dtype=order.dtype)


def meta_indices(split: RecordSplit, seed: int, task_key: str,
                 n: int = META_SIZE) -> np.ndarray:
  """`n` meta-training instances of one task (fewer if the meta pool is smaller)."""
  return _rng(seed, 2, task_key).permutation(split.meta_pool)[:n]


def episode_split_name(seed: int, part: str) -> str:
  """SeqIO split name of an episode part: 'k4' (few-shot train), 'meta', 'validation', 'test'."""
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


def episode_splits(seeds: Sequence[int] = SEEDS, k_shots: Sequence[int] = K_SHOTS) -> list[str]:
  """All episode split names, registered on every CSL task."""
  parts = [f"k{k}" for k in k_shots] + ["meta", "validation", "test"]
  return [episode_split_name(s, p) for s in seeds for p in parts]
