"""CSL's episode protocol (paper §3) on the shared sampler.

100 instances per meta task, k ∈ {0, 1, 2, 4, 8} per few-shot task ("k samples
per class for classification tasks"), 64 validation and 64 test instances,
8 seeds. The sampling itself is `common.sampling`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crosstask.tasks.common import sampling as common
from crosstask.tasks.common.sampling import RecordSplit
from crosstask.tasks.common.sampling import episode_split_name
from crosstask.tasks.common.sampling import few_shot_indices
from crosstask.tasks.common.sampling import parse_episode_split
from crosstask.tasks.common.sampling import warn_cut

META_SIZE = 100
K_SHOTS = (0, 1, 2, 4, 8)
SEEDS = tuple(range(8))
N_VAL = 64
N_TEST = 64

__all__ = ["META_SIZE", "K_SHOTS", "SEEDS", "N_VAL", "N_TEST", "RecordSplit", "split_records",
           "few_shot_indices", "meta_indices", "episode_split_name", "parse_episode_split",
           "episode_splits", "warn_cut"]


def split_records(num_records: int, seed: int, n_val: int = N_VAL,
                  n_test: int = N_TEST) -> RecordSplit:
  return common.split_records(num_records, seed, n_val, n_test)


def meta_indices(split: RecordSplit, seed: int, task_key: str, n: int = META_SIZE) -> np.ndarray:
  return common.meta_indices(split, seed, task_key, n)


def episode_splits(seeds: Sequence[int] = SEEDS, k_shots: Sequence[int] = K_SHOTS) -> list[str]:
  """All episode split names, registered on every CSL task."""
  return common.episode_splits(seeds, k_shots)
