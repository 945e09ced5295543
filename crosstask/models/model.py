"""EncoderDecoderModel: loss, decoding, scoring and embeddings around a Transformer.

Every method is a pure function of parameters and arrays: the runtime jits and
partitions them (runtime/state/trainer.py, runtime/predict/inference.py) with its platform's
options, so the model compiles nothing itself.

Batches use seqio.EncDecFeatureConverter keys. Decoder prefixes: an explicit
`batch['decoder_prompt_tokens']` (int32 [B, P], right-padded with 0) is always forced;
otherwise `prompt_with_targets=True` forces the leading nonzero tokens of
`batch['decoder_input_tokens'][:, 1:]` (the targets after the start token 0).
"""

import dataclasses
import difflib
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from flax import traverse_util
import flax
import flax.linen as nn
import jax
import jax.numpy as jnp

from crosstask.models import config as config_lib
from crosstask.models import decoding
from crosstask.models import layer_stacking
from crosstask.models import layers
from crosstask.models import losses

Batch = Mapping[str, jax.Array]
# decode_fn arguments the model fills in itself; decoder_params may not name them.
_SET_BY_MODEL = frozenset({"prompt", "cache", "tokens_to_logits", "eos_id", "max_decode_len",
                           "decode_rng", "num_decodes", "reorder_cache"})

class EncoderDecoderModel:
  """The contract a trainer / evaluator codes against (T5X EncoderDecoderModel-like)."""

  def __init__(self, module: nn.Module, input_vocabulary: Any, output_vocabulary: Any, *,
               label_smoothing: float = 0.0, z_loss: float = 1e-4,
               loss_normalizing_factor: float | str | None = None,
               decode_fn: Callable = decoding.temperature_sample,
               default_decoder_params: Mapping[str, Any] | None = None):
    if not 0.0 <= label_smoothing < 1.0:
      raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing!r}")
    if z_loss < 0:
      raise ValueError(f"z_loss must be >= 0, got {z_loss!r}")
    losses.check_loss_normalizing_factor(loss_normalizing_factor)
    self.module = module
    self.input_vocabulary = input_vocabulary
    self.output_vocabulary = output_vocabulary
    self.label_smoothing = label_smoothing
    self.z_loss = z_loss
    self.loss_normalizing_factor = loss_normalizing_factor
    self.decode_fn = decode_fn
    self._decode_args = set(inspect.signature(decode_fn).parameters)
    # None: the defaults the decoding function declares (temperature_sample's: greedy).
    if default_decoder_params is None:
      default_decoder_params = getattr(decode_fn, "model_defaults", {})
    self.default_decoder_params = dict(default_decoder_params)

  @property
  def eos_id(self) -> int:
    return int(getattr(self.output_vocabulary, "eos_id", 1) or 1)

  # ------------------------------------------------------------------ training

  def get_initial_variables(self, rng: jax.Array, input_shapes: Mapping[str, tuple[int, ...]]
                            ) -> dict:
    """{'params': boxed nn.Partitioned leaves}; `nn.get_partition_spec` gives logical specs.

    Unjitted: wrap it in `jax.eval_shape` for shapes, or `jax.jit` to initialise.
    The network is traced with its speed settings at their plainest (`config.SPEED_SETTINGS`):
    they never change the parameters (a test holds them to it), so every variant of a
    model shares one init program, and a persistent compilation cache compiles it once.
    """
    for key in ("encoder_input_tokens", "decoder_input_tokens"):
      if key not in input_shapes:
        raise ValueError(f"input_shapes lacks {key!r} (got {sorted(input_shapes)})")
    enc = jnp.ones(input_shapes["encoder_input_tokens"], jnp.int32)
    dec = jnp.ones(input_shapes["decoder_input_tokens"], jnp.int32)
    cfg = self.module.config
    plain = {k: v for k, v in config_lib.SPEED_SETTINGS.items() if hasattr(cfg, k)}
    variables = self.module.clone(config=dataclasses.replace(cfg, **plain)).init(rng, enc, dec)
    return {"params": variables["params"]}

  def _logits(self, params, batch: Batch, dropout_rng=None) -> jax.Array:
    _check_batch(batch)
    rngs = {"dropout": dropout_rng} if dropout_rng is not None else None
    return self.module.apply(
        {"params": params}, batch["encoder_input_tokens"], batch["decoder_input_tokens"],
        batch["decoder_target_tokens"], batch.get("encoder_segment_ids"),
        batch.get("decoder_segment_ids"), batch.get("encoder_positions"),
        batch.get("decoder_positions"), enable_dropout=dropout_rng is not None, rngs=rngs)

  def loss_fn(self, params, batch: Batch, dropout_rng: jax.Array | None
              ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Scalar loss (T5X normalisation) and scalar metrics; no dropout when rng is None."""
    logits = self._logits(params, batch, dropout_rng)
    factor, weights = losses.get_loss_normalizing_factor_and_weights(
        self.loss_normalizing_factor, batch)
    targets = batch["decoder_target_tokens"]
    loss, z_loss, weight_sum = losses.compute_weighted_cross_entropy(
        logits, targets, weights, self.label_smoothing, self.z_loss, factor)
    real = losses.loss_weights(batch)
    correct = (jnp.argmax(logits, -1) == targets).astype(jnp.float32)
    metrics = {
        "loss": loss, "z_loss": z_loss, "cross_ent_loss": loss - z_loss,
        "accuracy": jnp.sum(correct * real) / jnp.maximum(jnp.sum(real), 1.0),
        "nonpadding_tokens": jnp.sum(real), "weight_sum": weight_sum,
    }
    return loss, metrics

  def score_batch(self, params, batch: Batch) -> jax.Array:
    """float32 [B]: sum of target log-likelihoods times decoder_loss_weights."""
    logits = self._logits(params, batch)
    targets = batch["decoder_target_tokens"]
    weights = losses.loss_weights(batch)
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    token = jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    return jnp.sum(token * weights, axis=-1)

  def embed(self, params, batch: Batch, pooling: str = "mean") -> jax.Array:
    """float32 [B, d_model] encoder embeddings: mean over non-padding tokens, or the first."""
    if pooling not in ("mean", "first"):
      raise ValueError(f"pooling must be 'mean' or 'first', got {pooling!r}")
    tokens = batch["encoder_input_tokens"]
    encoded = self.module.apply({"params": params}, tokens, method=self.module.encode)
    encoded = encoded.astype(jnp.float32)
    if pooling == "first":
      return encoded[:, 0]
    mask = (tokens > 0).astype(jnp.float32)[..., None]
    return jnp.sum(encoded * mask, axis=1) / jnp.maximum(jnp.sum(mask, axis=1), 1.0)

  # ------------------------------------------------------------------ decoding

  def predict_batch(self, params, batch: Batch, rng: jax.Array | None = None, *,
                    decoder_params: Mapping[str, Any] | None = None, num_decodes: int = 1,
                    return_all_decodes: bool = False, prompt_with_targets: bool = False
                    ) -> jax.Array:
    """int32 [B, L] best decodes ([B, num_decodes, L] with return_all_decodes).

    A pure function: jit it with the keyword arguments static (the runtime's
    `Inference` compiles `decoding_programs` instead, each with its own options).
    """
    return self.predict_batch_with_aux(
        params, batch, rng, decoder_params=decoder_params, num_decodes=num_decodes,
        return_all_decodes=return_all_decodes, prompt_with_targets=prompt_with_targets)[0]

  def predict_batch_with_aux(self, params, batch: Batch, rng: jax.Array | None = None, *,
                             decoder_params: Mapping[str, Any] | None = None,
                             num_decodes: int = 1, return_all_decodes: bool = False,
                             prompt_with_targets: bool = False
                             ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """(tokens, {'scores': float32 [B]}); L = decoder_input_tokens length; best first."""
    static = self._decode_settings(decoder_params, num_decodes, prompt_with_targets)
    if rng is None:
      rng = jax.random.PRNGKey(0)
    prompt_keys = ("decoder_prompt_tokens",) if "decoder_prompt_tokens" in batch else ()
    inputs = {k: batch[k] for k in ("encoder_input_tokens", "decoder_input_tokens") + prompt_keys}
    seqs, scores = self._predict_impl(params, inputs, rng, **static)
    if return_all_decodes:
      return seqs, {"scores": scores}
    return seqs[:, 0], {"scores": scores[:, 0]}

  def decoding_programs(self, *, decoder_params: Mapping[str, Any] | None = None,
                        num_decodes: int = 1, prompt_with_targets: bool = False
                        ) -> tuple[Callable, Callable]:
    """(encode, loop): a decode as two pure functions, for a caller that jits them itself.

    encode(params, batch) -> (encoded, cache); loop(params, batch, encoded, cache, rng)
    -> (int32 [B, num_decodes, L] decodes, float32 [B, num_decodes] scores), best first.
    Two programs, so a runtime can compile the encoder and the loop each with the
    options that suit it (see runtime/config/platform.py).
    """
    static = self._decode_settings(decoder_params, num_decodes, prompt_with_targets)
    return self._predict_encoder, functools.partial(self._predict_loop, **static)

  def _decode_settings(self, decoder_params: Mapping[str, Any] | None, num_decodes: int,
                       prompt_with_targets: bool) -> dict[str, Any]:
    """_predict_loop's static keyword arguments, once decoder_params are checked."""
    if num_decodes < 1:
      raise config_lib.ConfigError(f"num_decodes must be >= 1, got {num_decodes!r}")
    merged = {**self.default_decoder_params, **(decoder_params or {})}
    name = getattr(self.decode_fn, "__name__", "decode_fn")
    unknown = set(merged) - self._decode_args
    if unknown:
      settable = sorted(self._decode_args - _SET_BY_MODEL - {"prompt", "cache",
                                                              "tokens_to_logits"})
      hints = [f"{u!r}: did you mean {close[0]!r}?" for u in sorted(unknown)
               if (close := difflib.get_close_matches(u, settable, n=1))]
      raise config_lib.ConfigError(
          f"decoder_params {sorted(unknown)} are not arguments of {name}; it takes "
          f"{settable}" + (f" ({'; '.join(hints)})" if hints else ""))
    reserved = set(merged) & _SET_BY_MODEL
    if reserved:
      raise config_lib.ConfigError(
          f"decoder_params {sorted(reserved)} are set by the model (use predict_batch's "
          "num_decodes / rng, the vocabulary's eos_id, or TransformerConfig.beam_self_cache "
          "for reorder_cache)")
    if num_decodes > 1 and "num_decodes" not in self._decode_args:
      raise config_lib.ConfigError(f"num_decodes={num_decodes} but {name} takes no num_decodes")
    if num_decodes > 1 and "temperature" in self._decode_args and merged.get("temperature") == 0:
      # Greedy is one decode: more would be copies of it, and a beam never searched.
      raise config_lib.ConfigError(
          f"num_decodes={num_decodes} with greedy decoding ({name}, temperature 0) gives "
          f"{num_decodes} copies of one decode: add --gin_file=beam_search.gin (after the "
          "model gin file, where one is named) for a beam of num_decodes, or set a "
          "temperature to sample")
    return dict(decoder_items=tuple(sorted(merged.items())), num_decodes=num_decodes,
                prompt_with_targets=prompt_with_targets)

  def _predict_impl(self, params, batch, rng, *, decoder_items, num_decodes,
                    prompt_with_targets):
    encoded, cache = self._predict_encoder(params, batch)
    return self._predict_loop(params, batch, encoded, cache, rng, decoder_items=decoder_items,
                              num_decodes=num_decodes, prompt_with_targets=prompt_with_targets)

  def _decoding_network(self, params) -> tuple[nn.Module, Any]:
    """(network, params) that decode step by step: a scanned stack decodes unrolled.

    Why: a step of a scanned decoder slices every layer's weights out of the stacked
    arrays and copies the stacked self-attention caches whole at every token (the
    profile in benchmarks/README.md); unrolled, each layer reads its own weights and
    updates its own cache in place. The unrolled network computes the same layers.
    """
    cfg = self.module.config
    if not cfg.scan_layers:
      return self.module, params
    unrolled = self.module.clone(config=dataclasses.replace(cfg, scan_layers=False))
    return unrolled, layer_stacking.unstack_layers(params)

  def _predict_encoder(self, params, batch):
    """(encoder output, decoding cache): the encoder, and its keys/values projected once."""
    enc = batch["encoder_input_tokens"]
    dec_in = batch["decoder_input_tokens"]
    module = self.module
    encoded = module.apply({"params": params}, enc, method=module.encode)
    module, params = self._decoding_network(params)
    # One dummy token: sizes the self-attention caches and projects encoder keys/values once.
    _, init = module.apply({"params": params}, encoded, enc, jnp.zeros_like(dec_in[:, :1]),
                           decode=True, max_decode_length=dec_in.shape[1], method=module.decode,
                           mutable=["cache"])
    return encoded, init["cache"]

  def _predict_loop(self, params, batch, encoded, init_cache, rng, *, decoder_items,
                    num_decodes, prompt_with_targets):
    enc = batch["encoder_input_tokens"]
    dec_in = batch["decoder_input_tokens"]
    max_len = dec_in.shape[1]
    module, params = self._decoding_network(params)
    params = params_for_decoding(params, module.config.compute_dtype,
                                 module.config.residual_stream_dtype,
                                 fused_qkv=module.config.fused_qkv,
                                 fused_mlp=module.config.fused_mlp)
    # Encoder keys/values stay out of the loop state at batch B: the loop neither
    # repeats them per beam nor reorders them every step (see layers.MultiHeadAttention).
    static_cache, cache = _split_cross_cache(init_cache)
    if "decoder_prompt_tokens" in batch:
      prompt = batch["decoder_prompt_tokens"].astype(jnp.int32)
    elif prompt_with_targets:
      # The targets up to their EOS, which stays out (as T5X strips it): a prompt is a
      # start to continue, not a decode that has ended.
      tail = dec_in[:, 1:]
      prompt = tail * jnp.cumprod((tail != 0) & (tail != self.eos_id), axis=1).astype(tail.dtype)
    else:
      prompt = jnp.zeros((enc.shape[0], 1), jnp.int32)

    def tokens_to_logits(token, step_cache):
      full_cache = flax.core.unfreeze(traverse_util.unflatten_dict(
          {**traverse_util.flatten_dict(step_cache), **static_cache}))
      logits, mutated = module.apply(
          {"params": params, "cache": full_cache}, encoded, enc, token,
          decode=True, max_decode_length=max_len, method=module.decode, mutable=["cache"])
      return logits[:, -1], _split_cross_cache(mutated["cache"])[1]

    kwargs = dict(decoder_items)
    if "decode_rng" in self._decode_args:
      kwargs["decode_rng"] = rng
    if "num_decodes" in self._decode_args:
      kwargs["num_decodes"] = num_decodes
    # A network whose config has no such field reads no tables: its caches are copied.
    if ("reorder_cache" in self._decode_args and num_decodes > 1
        and getattr(module.config, "beam_self_cache", "reorder") == "indirect"):
      cache = _with_beam_sources(cache)
      kwargs["reorder_cache"] = _reorder_beams_in_place
    seqs, scores = self.decode_fn(prompt, cache, tokens_to_logits, eos_id=self.eos_id,
                                  max_decode_len=max_len, **kwargs)
    return seqs.astype(jnp.int32), scores.astype(jnp.float32)


# Parameters the network reads only through a cast to the compute dtype: every
# projection kernel and the embedding (layers.py). Norm scales and the position-bias
# tables are read in float32 and are left as they are.
_READ_IN_COMPUTE_DTYPE = frozenset({"query", "key", "value", "out", "wi", "wo", "embedding",
                                    "logits_dense"})


def params_for_decoding(params, compute_dtype, residual_dtype=None, *,
                        fused_qkv: bool = False, fused_mlp: bool = False) -> Any:
  """`params` with every leaf the network casts to `compute_dtype` cast once, here.

  Why: inside the decoding loop XLA converts the float32 weights again at every step
  (it does not hoist the converts out of the while loop), so each step read the
  weights twice over in float32. Cast once before the loop, a step reads them once in
  the compute dtype; the network's own cast is then a no-op, so decodes are the same
  token for token. A residual stream in another dtype than `compute_dtype` (config
  `residual_dtype`) looks the embedding up in its own dtype: the embedding stays as it is.
  With `fused_qkv`, each self-attention's query, key and value kernels are stacked into
  one [d_model, heads, 3, d_kv] `qkv` kernel, and with `fused_mlp` a gated MLP's input
  kernels into one [d_model, d_ff, n]: here, once, rather than at every step.
  """
  keep_embedding = residual_dtype is not None and jnp.dtype(residual_dtype) != compute_dtype

  def cast(path, leaf):
    name = str(getattr(path[-1], "key", path[-1]))
    wanted = ((name in _READ_IN_COMPUTE_DTYPE or name.startswith("wi_"))
              and not (keep_embedding and name == "embedding"))
    if wanted and jnp.issubdtype(leaf.dtype, jnp.floating) and leaf.dtype != compute_dtype:
      return leaf.astype(compute_dtype)
    return leaf
  params = jax.tree_util.tree_map_with_path(cast, params)
  if not (fused_qkv or fused_mlp):
    return params
  flat = traverse_util.flatten_dict(flax.core.unfreeze(params))

  def stack(module, names, into):  # as the layers stack them in training
    flat[module + (into,)] = layers.stack_kernels([flat.pop(module + (n,)) for n in names])
  for path in list(flat):
    if fused_qkv and path[-2:] == ("self_attention", "query"):
      stack(path[:-1], ("query", "key", "value"), layers.FUSED_QKV)
    if fused_mlp and path[-2:] == ("mlp", "wi_0"):
      branches = sorted((n[-1] for n in flat if n[:-1] == path[:-1] and n[-1].startswith("wi_")),
                        key=lambda name: int(name.removeprefix("wi_")))  # wi_2 before wi_10
      stack(path[:-1], branches, layers.FUSED_MLP)
  return traverse_util.unflatten_dict(flat)


def _with_beam_sources(cache) -> dict:
  """The loop's cache with a `layers.BEAM_SOURCE` table beside each self-attention
  cache: int32 [rows, length], filled in as the steps write their positions."""
  flat = traverse_util.flatten_dict(flax.core.unfreeze(cache))
  for path, leaf in list(flat.items()):
    if path[-1] == layers.CACHED_KEY:
      if leaf.ndim != 4:  # a scanned stack's cache has a layer axis; decoding unrolls it
        raise ValueError(f"{'/'.join(path)}: expected [rows, heads, length, d], got "
                         f"{leaf.shape}")
      flat[path[:-1] + (layers.BEAM_SOURCE,)] = jnp.zeros((leaf.shape[0], leaf.shape[2]),
                                                          jnp.int32)
  return traverse_util.unflatten_dict(flat)


def _reorder_beams_in_place(cache, flat_parent: jax.Array):
  """beam_search's reorder for `beam_self_cache="indirect"`: every leaf follows its
  row's parent except the self-attention keys and values, which stay where they were
  written; the tables, reordered, say where each row's past now lives."""
  def reorder(path, leaf):
    if leaf.ndim == 0 or path[-1].key in (layers.CACHED_KEY, layers.CACHED_VALUE):
      return leaf
    return jnp.take(leaf, flat_parent, axis=0)
  return jax.tree_util.tree_map_with_path(reorder, cache)


def _split_cross_cache(cache) -> tuple[dict, dict]:
  """({flat path: leaf} of the projected encoder keys/values, the rest as a nested dict)."""
  flat = traverse_util.flatten_dict(flax.core.unfreeze(cache))
  cross = {k: v for k, v in flat.items() if k[-1] in ("cross_key", "cross_value")}
  rest = {k: v for k, v in flat.items() if k not in cross}
  return cross, traverse_util.unflatten_dict(rest)


def _check_batch(batch: Batch) -> None:
  for key in ("encoder_input_tokens", "decoder_input_tokens", "decoder_target_tokens"):
    if key not in batch:
      raise ValueError(f"batch lacks {key!r} (got {sorted(batch)})")
  if batch["decoder_input_tokens"].shape != batch["decoder_target_tokens"].shape:
    raise ValueError(f"decoder_input_tokens shape {batch['decoder_input_tokens'].shape} != "
                     f"decoder_target_tokens shape {batch['decoder_target_tokens'].shape}")
