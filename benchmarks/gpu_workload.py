"""The work both sides of a gpu.py row are given, and how a call is timed.

Why one module: crosstask's and HF's rows must see the same lengths, the same tokens
and the same warm-up, so neither side builds its own.
"""

import dataclasses
import time
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Lengths:
  """Tokens per example: training rows' inputs / targets; decoding's inputs and new tokens."""
  inputs: int = 512
  targets: int = 512
  new_tokens: int = 128

  @classmethod
  def parse(cls, lengths: str, new_tokens: int) -> 'Lengths':
    try:
      inputs, targets = (int(n) for n in lengths.split('/'))
    except ValueError:
      raise ValueError(f'--lengths {lengths!r}: want INPUTS/TARGETS, e.g. 512/512') from None
    return cls(inputs, targets, new_tokens)


WARMUP_CALLS = 2  # untimed calls after the first (compilation) one


def timed(fn: Callable[[], Any], steps: int, sync: Callable[[Any], Any]) -> list[float]:
  """Seconds of `steps` calls of `fn`, each ended by `sync`, after WARMUP_CALLS untimed ones."""
  for _ in range(WARMUP_CALLS):
    sync(fn())
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    sync(fn())
    times.append(time.perf_counter() - start)
  return times


def packed_batch(batch: int, inputs: int, targets: int, vocab: int, seed: int = 0
                 ) -> dict[str, Any]:
  """Rows filled to the last token by 2-4 examples each, as the packing converter lays
  them out: segment ids from 1, positions restarting per example, decoder inputs the
  targets shifted right within each example (0 first)."""
  import numpy as np
  rng = np.random.default_rng(seed)
  out = {k: np.zeros((batch, n), np.int32) for k, n in (
      ('encoder_input_tokens', inputs), ('encoder_segment_ids', inputs),
      ('encoder_positions', inputs), ('decoder_input_tokens', targets),
      ('decoder_target_tokens', targets), ('decoder_segment_ids', targets),
      ('decoder_positions', targets))}
  for row in range(batch):
    k = int(rng.integers(2, 5))
    for name, length in (('encoder', inputs), ('decoder', targets)):
      cuts = np.sort(rng.choice(np.arange(1, length), k - 1, replace=False))
      starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [length]])
      for seg, (a, b) in enumerate(zip(starts, ends), start=1):
        out[f'{name}_segment_ids'][row, a:b] = seg
        out[f'{name}_positions'][row, a:b] = np.arange(b - a)
    out['encoder_input_tokens'][row] = rng.integers(2, vocab, inputs)
    tgt = rng.integers(2, vocab, targets)
    out['decoder_target_tokens'][row] = tgt
    dec = np.concatenate([[0], tgt[:-1]])
    dec[out['decoder_positions'][row] == 0] = 0
    out['decoder_input_tokens'][row] = dec
  out['decoder_loss_weights'] = np.ones((batch, targets), np.float32)
  return out


def decode_inputs(batch: int, inputs: int, vocab: int):
  """Random non-padding input tokens (ids >= 2: no EOS), seeded: both decoding sides'."""
  import numpy as np
  rng = np.random.default_rng(0)
  return rng.integers(2, vocab, (batch, inputs)).astype(np.int32)


def decoded_positions(rows, length: int) -> int:
  """Tokens decoded over all rows: each row up to and including its first EOS (id 1).

  A random model's argmax may well be the pad id, and decoding runs until every row
  has its EOS or fills its length, so positions are counted, not non-pad tokens."""
  total = 0
  for row in rows.tolist():
    total += row.index(1) + 1 if 1 in row else length
  return total
