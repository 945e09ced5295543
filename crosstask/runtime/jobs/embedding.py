"""Batched, sharded encoder embeddings of tokenized texts (the embedding path's engine).

Like `inference.Inference`: the global batch is a multiple of the mesh's data
axis (`batching`), parameters keep their training placement.
Texts are sorted by length and padded to a power-of-two bucket, so a long
abstract does not pad a whole batch of titles and few shapes get compiled.
"""

from typing import Any, Sequence

import jax
import numpy as np

from crosstask.runtime.config import run as run_lib
from crosstask.runtime.data import batching
from crosstask.runtime.jobs import restoring
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints

POOLINGS = ('mean', 'first')


def restore_params(run: run_lib.Run, cfg: checkpoints.RestoreCheckpointConfig
                   ) -> tuple[Any, Any, str]:
  """(params, their shardings, state dir) of the newest checkpoint `cfg` selects."""
  abstract, shardings = run.abstract_params()
  _, state_dir = restoring.newest_checkpoint(cfg)
  return (checkpoints.load_params(state_dir, abstract, run.vocabularies, run.model_config),
          shardings, state_dir)


def bucket_length(n: int, max_length: int, minimum: int = 16) -> int:
  length = minimum
  while length < n:
    length *= 2
  return min(length, max_length)


class Embedder:
  """`embed(params, token_lists) -> float32 [N, d_model]` with the model's `embed` pooling."""

  def __init__(self, model: Any, partitioner: partitioning.Partitioner,
               param_shardings: Any, batch_size: int, pooling: str = 'mean'):
    if pooling not in POOLINGS:
      raise ValueError(f'pooling must be one of {POOLINGS}, got {pooling!r}')
    self.partitioner = partitioner
    self.batch_size = batching.global_batch_size(batch_size, partitioner.data_size)
    self._embed = jax.jit(lambda params, batch: model.embed(params, batch, pooling=pooling),
                          in_shardings=(param_shardings, partitioner.data_sharding),
                          out_shardings=partitioner.data_sharding)

  def embed(self, params, token_lists: Sequence[Sequence[int]], max_length: int) -> np.ndarray:
    order = sorted(range(len(token_lists)), key=lambda i: len(token_lists[i]))
    out: list[np.ndarray | None] = [None] * len(token_lists)
    with self.partitioner.context():
      for start in range(0, len(order), self.batch_size):
        chunk = order[start:start + self.batch_size]
        length = bucket_length(max(len(token_lists[i]) for i in chunk), max_length)
        tokens = np.zeros((self.batch_size, length), np.int32)
        for row, i in enumerate(chunk):
          tokens[row, :len(token_lists[i])] = token_lists[i]
        batch = batching.to_device({'encoder_input_tokens': tokens},
                                   self.partitioner.data_sharding)
        vectors = batching.to_host(self._embed(params, batch))
        for row, i in enumerate(chunk):
          out[i] = vectors[row]
    return np.stack(out).astype(np.float32) if out else np.zeros((0, 0), np.float32)
