"""Fixed-size global batches for inference, embedding and scoring, and results back.

Every host reads the whole eval set (or list of texts), so each builds the full
padded batch and the global array takes from it the rows each of its devices holds:
right for any mesh layout, host-major or not. The batch is a multiple of the data
axis, so every data shard gets whole rows, and one shape compiles once.
"""

from typing import Any, Mapping

import jax
import numpy as np
from jax.experimental import multihost_utils


def global_batch_size(batch_size: int, data_size: int) -> int:
  """`batch_size` rounded up to a multiple of the data axis (at least one row each)."""
  if batch_size < 1:
    raise ValueError(f'batch_size must be >= 1, got {batch_size!r}')
  return -(-batch_size // data_size) * data_size


def pad_rows(features: Mapping[str, Any], size: int) -> tuple[dict[str, np.ndarray], int]:
  """Each feature zero-padded along its first dimension to `size` rows; and the real
  row count (rows past it are padding whose results the caller drops)."""
  rows = {len(v) for v in features.values()}
  if len(rows) != 1:
    raise ValueError(f'features disagree on their row count: '
                     f'{ {k: len(v) for k, v in features.items()} }')
  n = rows.pop()
  if n > size:
    raise ValueError(f'{n} rows do not fit a batch of {size}')
  out = {}
  for key, value in features.items():
    value = np.asarray(value)
    out[key] = np.concatenate([value, np.zeros((size - n,) + value.shape[1:], value.dtype)])
  return out, n


def to_device(host_batch: Mapping[str, np.ndarray], sharding: jax.sharding.Sharding
              ) -> dict[str, jax.Array]:
  """Global arrays from the full batch every host holds, placed by `sharding`."""
  return {key: jax.make_array_from_callback(value.shape, sharding,
                                            lambda index, value=value: value[index])
          for key, value in host_batch.items()}


def to_host(x: jax.Array) -> np.ndarray:
  """The whole of a global array as numpy on every host."""
  if jax.process_count() > 1:
    return np.asarray(multihost_utils.process_allgather(x, tiled=True))
  return np.asarray(x)
