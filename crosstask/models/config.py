"""Hyper-parameters of the T5-family encoder-decoder (T5 1.0, T5 1.1, mT5, LongLM)."""

import dataclasses

import jax.numpy as jnp

from crosstask.models import remat


class ConfigError(ValueError):
  """A model setting given wrongly (a binding of the model gin file): the entry points
  print it as one line, as a gin binding's mistake, not a traceback."""


def _is_number(value) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unquoted(value, macro: str) -> str:
  """The hint for a number written in quotes: gin reads '0.1' as a string."""
  return (f" (a string: write the number unquoted, e.g. --gin.{macro}={value})"
          if isinstance(value, str) else "")


_ACTIVATIONS = ("relu", "gelu", "gelu_exact", "silu", "linear")
_DTYPES = ("float32", "bfloat16", "float16")
# "auto" is for the runtime's platform profile to replace; the model reads it as the
# first real choice ("none" remat, "xla" attention, one layer per scan iteration).
REMAT_POLICIES = remat.NO_REMAT + tuple(remat.POLICIES)  # the policies remat.py defines
ATTENTION_IMPLEMENTATIONS = ("auto", "xla", "dot_product", "cudnn", "cudnn_segments", "flash")
DECODE_CROSS_ATTENTION = ("einsum", "pallas", "pallas_interpret")
BEAM_SELF_CACHE = ("reorder", "indirect")
# The fields that change how a training step runs, never the parameters it starts from,
# each at its plainest: the model initialises with these (model.get_initial_variables).
SPEED_SETTINGS = {"remat_policy": "none", "scan_unroll": 1, "attention": "xla",
                  "fused_qkv": False, "fused_mlp": False}


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
  """One frozen record so a gin file or an HF config.json fully determines the net.

  `activations` lists the MLP branches multiplied together: ("relu",) is T5 1.0 /
  LongLM, ("gelu", "linear") the gated-GELU of T5 1.1 / mT5. "gelu" is the tanh
  approximation (HF `gelu_new`, T5X), "gelu_exact" the erf form.
  `remat_policy` trades compute for activation memory in training, like T5X's: "none"
  keeps every activation, "full" recomputes each layer in the backward pass (keeps only
  its inputs), "dots" keeps every matmul output (`dots_saveable`, attention logits
  included), "minimal" keeps the weight matmul outputs only
  (`dots_with_no_batch_dims_saveable`) and recomputes attention, norms and
  activations; "dots_attention" keeps the fused attention kernel's outputs too (no
  attention forward runs twice), "dots_attention_norms" also RMSNorm's outputs (no norm
  is recomputed); "auto" is read as "none" (models/remat.py). What is kept shrinks in
  that order (none, dots, minimal, full), and so does the memory XLA plans for a
  scanned stack; in an unrolled stack XLA:CPU's scheduler can place the recomputation so
  that the order differs, and "minimal" can plan more than "none"
  (tests/models/test_models_remat.py).
  `attention` picks the attention implementation: "xla" (einsum; "auto" is read as
  "xla"), "dot_product", "cudnn", "cudnn_segments" or "flash" (fused kernels that skip
  dropout on the attention probabilities; models/attention.py).
  `scan_layers` runs each layer stack as one `nn.scan` over stacked parameters (a
  leading "layers" axis, params under `layers` instead of `layers_0..N-1`): the
  compiler sees one layer instead of N, which cuts compile time and compile memory
  of deep models; models/layer_stacking.py converts parameters between the layouts.
  `scan_unroll` layers run per iteration of that scan (`lax.scan`'s unroll; 1: one;
  "auto": the platform profile's, else 1): fewer iterations, fewer of the loop's
  per-iteration copies, a longer compile. "full" runs each stack as straight-line
  code with no loop: the backward pass then reads each layer's saved activations
  where they were computed, with no stacked buffers to zero, fill and slice, and the
  parameters keep the scanned layout. XLA:TPU plans it at about the loop's memory but
  3.6% more HBM bytes (T5 1.1 base on a v5e-8), so it is a GPU candidate, not a default.
  Training only: decoding runs unrolled.
  `dropout_shared_along_length` draws each dropout mask once per feature and shares it
  over the positions of a sequence, as T5X's network does (embeddings, residual branches,
  the MLP's hidden layer, the decoder's output; attention probabilities share one mask
  over the queries; the encoder's output alone is masked per element); False masks every
  element, as HF's T5.
  `logits_via_embedding` ties the output layer to the token embedding and, as T5 1.0
  (and HF), rescales the decoder output by d_model**-0.5 first.
  `residual_dtype` is the residual stream's dtype, the sum every layer adds into (None:
  `dtype`, as T5X). "float32" keeps it as HF's T5 does under bfloat16 autocast: the
  embedding is looked up in float32 and each sublayer's `dtype` output is added to a
  float32 sum, so the rounding of a bfloat16 sum does not build up over the layers;
  norms, matmuls and attention still compute in `dtype`.
  """
  vocab_size: int = 32128
  d_model: int = 512
  d_ff: int = 2048
  num_heads: int = 8
  d_kv: int = 64
  num_encoder_layers: int = 6
  num_decoder_layers: int = 6
  activations: tuple[str, ...] = ("relu",)
  logits_via_embedding: bool = True
  dropout_rate: float = 0.1
  dropout_shared_along_length: bool = True
  relative_attention_num_buckets: int = 32
  relative_attention_max_distance: int = 128
  layer_norm_epsilon: float = 1e-6
  # The id the decoder sees first (HF `decoder_start_token_id`): 0 for T5/mT5,
  # 1 in every LongLM generation call. Data and decoding keep 0 there; the
  # decoder embeds it as this id.
  decoder_start_id: int = 0
  dtype: str = "bfloat16"
  param_dtype: str = "float32"
  residual_dtype: str | None = None
  remat_policy: str = "auto"
  attention: str = "auto"
  scan_layers: bool = False
  scan_unroll: int | str = "auto"
  # Decoding's cached encoder keys: [b, h, d, len] (True) or [b, h, len, d].
  cross_keys_last: bool = True
  # A decoding step's cross-attention: "einsum" (XLA) or "pallas" (one flash-decoding
  # kernel, compiled for a GPU; "pallas_interpret" runs it through Pallas's interpreter,
  # which the runtime's platform profile picks off a GPU); keys cached [b, h, len, d]
  # whatever cross_keys_last says (models/attention.py).
  decode_cross_attention: str = "einsum"
  # Projections that read the same input as one matmul over their kernels stacked:
  # self-attention's query, key and value and cross-attention's key and value
  # (`fused_qkv`), a gated MLP's input branches (`fused_mlp`). One wider GEMM instead of
  # two or three, and in the backward pass one input gradient instead of a sum. Training
  # stacks the kernels with their cast to the compute dtype, a decode once
  # (model.params_for_decoding), where a step's three small GEMMs each read their kernel
  # at a fraction of the HBM rate (benchmarks/README.md, GPU). Parameters and
  # checkpoints keep the kernels apart.
  fused_qkv: bool = False
  fused_mlp: bool = False
  # Beam search's self-attention caches when the beams are reordered after each step:
  # "indirect" leaves them where they were written and keeps, per beam and position,
  # which of its example's beam rows holds that position (an int32 table a layer), so a
  # step reads each cached key once and writes only its new token; "reorder" copies
  # every layer's cached keys and values into the new beam order, as T5X does (the
  # whole allocated cache, read and written, every step). The same beams up to
  # rounding: the scores' last bits may differ (attention.beam_self_attention).
  beam_self_cache: str = "indirect"

  def __post_init__(self):
    # Gin hands lists; keep the record hashable.
    object.__setattr__(self, "activations", tuple(self.activations))
    for name in ("vocab_size", "d_model", "d_ff", "num_heads", "d_kv",
                 "num_encoder_layers", "num_decoder_layers",
                 "relative_attention_num_buckets", "relative_attention_max_distance"):
      value = getattr(self, name)
      if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"TransformerConfig.{name} must be a positive int, got {value!r}")
    if not self.activations or any(a not in _ACTIVATIONS for a in self.activations):
      raise ConfigError(f"TransformerConfig.activations must be a non-empty tuple of "
                       f"{_ACTIVATIONS}, got {self.activations!r}")
    if not _is_number(self.dropout_rate) or not 0.0 <= self.dropout_rate < 1.0:
      raise ConfigError(f"TransformerConfig.dropout_rate must be a number in [0, 1), got "
                        f"{self.dropout_rate!r}{_unquoted(self.dropout_rate, 'DROPOUT_RATE')}")
    if self.relative_attention_num_buckets < 2:
      raise ConfigError(f"TransformerConfig.relative_attention_num_buckets must be >= 2, "
                       f"got {self.relative_attention_num_buckets!r}")
    if (not isinstance(self.decoder_start_id, int) or isinstance(self.decoder_start_id, bool)
        or not 0 <= self.decoder_start_id < self.vocab_size):
      raise ConfigError(f"TransformerConfig.decoder_start_id must be an id in [0, vocab_size="
                       f"{self.vocab_size}), got {self.decoder_start_id!r}")
    if not _is_number(self.layer_norm_epsilon) or self.layer_norm_epsilon <= 0:
      raise ConfigError(f"TransformerConfig.layer_norm_epsilon must be > 0, "
                        f"got {self.layer_norm_epsilon!r}")
    if self.remat_policy not in REMAT_POLICIES:
      raise ConfigError(f"TransformerConfig.remat_policy must be one of {REMAT_POLICIES}, "
                       f"got {self.remat_policy!r}")
    if self.attention not in ATTENTION_IMPLEMENTATIONS:
      raise ConfigError(f"TransformerConfig.attention must be one of {ATTENTION_IMPLEMENTATIONS}, "
                       f"got {self.attention!r}")
    if not isinstance(self.scan_layers, bool):
      raise ConfigError(f"TransformerConfig.scan_layers must be a bool, got {self.scan_layers!r}")
    if self.decode_cross_attention not in DECODE_CROSS_ATTENTION:
      raise ConfigError(f"TransformerConfig.decode_cross_attention must be one of "
                       f"{DECODE_CROSS_ATTENTION}, got {self.decode_cross_attention!r}")
    if self.beam_self_cache not in BEAM_SELF_CACHE:
      raise ConfigError(f"TransformerConfig.beam_self_cache must be one of {BEAM_SELF_CACHE}, "
                       f"got {self.beam_self_cache!r}")
    for name in ("fused_qkv", "fused_mlp"):
      if not isinstance(getattr(self, name), bool):
        raise ConfigError(f"TransformerConfig.{name} must be a bool, got {getattr(self, name)!r}")
    if not isinstance(self.cross_keys_last, bool):
      raise ConfigError(f"TransformerConfig.cross_keys_last must be a bool, "
                       f"got {self.cross_keys_last!r}")
    if self.scan_unroll not in ("auto", "full") and (not isinstance(self.scan_unroll, int)
                                                     or isinstance(self.scan_unroll, bool)
                                                     or self.scan_unroll < 1):
      raise ConfigError(f"TransformerConfig.scan_unroll must be a positive int, 'full' or "
                       f"'auto', got {self.scan_unroll!r}")
    for name in ("dtype", "param_dtype"):
      if getattr(self, name) not in _DTYPES:
        raise ConfigError(f"TransformerConfig.{name} must be one of {_DTYPES}, "
                          f"got {getattr(self, name)!r}")
    if self.residual_dtype is not None and self.residual_dtype not in _DTYPES:
      raise ConfigError(f"TransformerConfig.residual_dtype must be None or one of {_DTYPES}, "
                       f"got {self.residual_dtype!r}")

  def layers_per_scan_iteration(self, num_layers: int) -> int:
    """`scan_unroll` as the scan of a `num_layers` stack takes it ("auto" left
    unresolved reads as 1; "full": the whole stack in one straight-line iteration)."""
    if self.scan_unroll == "full":
      return num_layers
    return 1 if self.scan_unroll == "auto" else self.scan_unroll

  @property
  def dropout_broadcast_dims(self) -> tuple[int, ...]:
    """`nn.Dropout`'s broadcast_dims at the sites T5X shares a mask: the length axis."""
    return (-2,) if self.dropout_shared_along_length else ()

  @property
  def compute_dtype(self) -> jnp.dtype:
    return jnp.dtype(self.dtype)

  @property
  def residual_stream_dtype(self) -> jnp.dtype:
    return jnp.dtype(self.residual_dtype or self.dtype)

  @property
  def params_dtype(self) -> jnp.dtype:
    return jnp.dtype(self.param_dtype)
