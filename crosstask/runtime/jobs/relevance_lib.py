"""Log-likelihood of fixed targets for many inputs, from a checkpoint (relevance scoring).

A text-to-text relevance judgement is log P(target | input) for a few fixed
targets ("yes", "no"); `TargetScorer` batches and shards those passes like
inference, and `target_log_likelihoods` restores the newest checkpoint and
scores every input against every target.
"""

from typing import Any, Mapping, Sequence

import jax
import numpy as np

from crosstask.runtime.config import run as run_lib
from crosstask.runtime.data import batching
from crosstask.runtime.jobs import embedding
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints


class TargetScorer:
  """Log-likelihood of fixed target token lists for many encoder inputs."""

  def __init__(self, model: Any, partitioner: partitioning.Partitioner,
               param_shardings: Any, batch_size: int):
    self.partitioner = partitioner
    self.batch_size = batching.global_batch_size(batch_size, partitioner.data_size)
    self._score = jax.jit(model.score_batch,
                          in_shardings=(param_shardings, partitioner.data_sharding),
                          out_shardings=partitioner.data_sharding)

  def score(self, params, inputs: Sequence[Sequence[int]], target: Sequence[int],
            max_length: int) -> np.ndarray:
    target = list(target)
    dec_len = embedding.bucket_length(len(target), 64, minimum=4)
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
    out = np.zeros(len(inputs), np.float32)
    with self.partitioner.context():
      for start in range(0, len(order), self.batch_size):
        chunk = order[start:start + self.batch_size]
        length = embedding.bucket_length(max(len(inputs[i]) for i in chunk), max_length)
        enc = np.zeros((self.batch_size, length), np.int32)
        tgt = np.zeros((self.batch_size, dec_len), np.int32)
        for row, i in enumerate(chunk):
          enc[row, :len(inputs[i])] = inputs[i]
          tgt[row, :len(target)] = target
        dec_in = np.concatenate([np.zeros((self.batch_size, 1), np.int32), tgt[:, :-1]], 1)
        feats = {'encoder_input_tokens': enc, 'decoder_input_tokens': dec_in,
                 'decoder_target_tokens': tgt,
                 'decoder_loss_weights': (tgt > 0).astype(np.int32)}
        batch = batching.to_device(feats, self.partitioner.data_sharding)
        scores = batching.to_host(self._score(params, batch))
        out[chunk] = scores[:len(chunk)]
    return out


def encode(vocabulary, text: str, max_length: int) -> list[int]:
  """Token ids + EOS, trimmed to max_length (EOS kept, as seqio trims inputs)."""
  eos = int(getattr(vocabulary, 'eos_id', 1) or 1)
  return list(vocabulary.encode(text))[:max_length - 1] + [eos]


def target_log_likelihoods(model: Any, restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig,
                           partitioner: partitioning.Partitioner | None, texts: Sequence[str],
                           targets: Mapping[str, str], batch_size: int, max_length: int
                           ) -> tuple[dict[str, np.ndarray], str]:
  """{name: log P(target | text) per text} for each named target, and the checkpoint read."""
  run = run_lib.resolve(model, partitioner, batch_size=batch_size,
                        lengths={'inputs': max_length, 'targets': 64}, pads_batch=True)
  params, param_shardings, state_dir = embedding.restore_params(run, restore_checkpoint_cfg)
  scorer = TargetScorer(run.model, run.partitioner, param_shardings, run.batch_size)
  in_vocab, out_vocab = model.input_vocabulary, model.output_vocabulary
  tokens = [encode(in_vocab, t, max_length) for t in texts]
  out = {name: scorer.score(params, tokens, encode(out_vocab, target, 64), max_length)
         for name, target in targets.items()}
  return out, state_dir
