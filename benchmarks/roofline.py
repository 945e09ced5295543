"""The memory roofline of a decoding step: the bytes one step must read over HBM bandwidth.

Why: a decoding step does little arithmetic per byte it reads, so its floor is the
time to read, once, what it needs: the decoder's weights, the cross-attention keys
and values of the encoder's output, and the self-attention cache so far. A row's
`roofline_ratio` (measured step over that floor) says how far from the hardware the
loop runs, which a ratio against HF cannot.

Counted per step, at the compute dtype (bf16: 2 bytes; a loop that reads f32
parameters moves twice the weights' bytes, and that shows as a higher ratio):

- weights: per decoder layer the self-attention q, k, v, o (4 d h k), the
  cross-attention q and o (2 d h k: its k and v projections ran once, before the
  loop), the MLP (n d f + f d) and 3 norm scales (d); the final norm (d) and the
  output layer (d V). The position-bias table and the embedding rows gathered for
  the new tokens are left out (kilobytes).
- cross cache: keys and values per decoder layer, 2 S h k per example. crosstask
  keeps one copy per example and shares it across beams; HF's `generate` expands
  the encoder output per beam, so for HF rows it counts batch x beams.
- self cache: keys and values per decoder layer, 2 L h k per sequence (batch x
  beams), at L = the mean length read, half the new tokens.
"""

import dataclasses
from typing import Any

DTYPE_BYTES = {'bfloat16': 2, 'float16': 2, 'float32': 4}


@dataclasses.dataclass(frozen=True)
class StepBytes:
  weights: float
  cross_cache: float
  self_cache: float

  @property
  def total(self) -> float:
    return self.weights + self.cross_cache + self.self_cache


def decoder_step_params(cfg: Any) -> int:
  """Parameters a decoding step reads: the decoder's, less the cross k/v projections."""
  d, hk = cfg.d_model, cfg.num_heads * cfg.d_kv
  mlp = len(cfg.activations) * d * cfg.d_ff + cfg.d_ff * d
  per_layer = 6 * d * hk + mlp + 3 * d
  return cfg.num_decoder_layers * per_layer + d + d * cfg.vocab_size


def step_bytes(cfg: Any, batch: int, inputs: int, mean_length: float, beams: int = 1,
               shared_cross: bool = True) -> StepBytes:
  """What one decoding step of `batch` examples x `beams` reads, at cfg.dtype."""
  size = DTYPE_BYTES[cfg.dtype]
  kv_per_token = cfg.num_decoder_layers * 2 * cfg.num_heads * cfg.d_kv * size
  cross_rows = batch if shared_cross else batch * beams
  return StepBytes(weights=decoder_step_params(cfg) * size,
                   cross_cache=cross_rows * inputs * kv_per_token,
                   self_cache=batch * beams * mean_length * kv_per_token)


def decode_roofline(cfg: Any, batch: int, inputs: int, new_tokens: int, beams: int,
                    shared_cross: bool, hbm_bytes_per_s: float | None,
                    measured_s: float) -> dict[str, Any]:
  """A decode row's roofline fields: bytes per step, the floor's and the measured step
  time (the row's seconds over its new tokens: the encoder, run once, included) and
  their ratio; the times None where the chip's bandwidth is unknown (a CPU)."""
  read = step_bytes(cfg, batch, inputs, new_tokens / 2, beams, shared_cross)
  step_s = measured_s / new_tokens
  floor = read.total / hbm_bytes_per_s if hbm_bytes_per_s else None
  return {'step_bytes': {**dataclasses.asdict(read), 'total': read.total},
          'hbm_bytes_per_s': hbm_bytes_per_s, 'measured_step_s': step_s,
          'roofline_step_s': floor, 'roofline_ratio': step_s / floor if floor else None}
