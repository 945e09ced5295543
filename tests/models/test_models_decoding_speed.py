"""What makes decoding fast keeps it exact: the weights cast once per decode and a
scanned stack decoding unrolled give the tokens the plain program gives."""

import dataclasses
import functools
import re
import types

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util

import numpy_params
from crosstask.models import attention
from crosstask.models import decoding
from crosstask.models import layer_stacking
from crosstask.models import model as model_lib
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer

CFG = TransformerConfig(vocab_size=48, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=2, num_decoder_layers=3, dropout_rate=0.0,
                        dtype="bfloat16", relative_attention_num_buckets=8,
                        relative_attention_max_distance=16)
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=48)


def _batch(b=3, enc_len=10, dec_len=7):
  rng = np.random.default_rng(5)
  enc = rng.integers(2, 48, (b, enc_len)).astype(np.int32)
  enc[1, 6:] = 0
  dec = np.zeros((b, dec_len), np.int32)
  return {"encoder_input_tokens": enc, "decoder_input_tokens": dec,
          "decoder_target_tokens": dec}


@functools.cache
def _params(cfg):
  """Drawn once per module with numpy (a jitted init compiles for seconds)."""
  b = _batch()
  params = numpy_params.random_params(Transformer(cfg), b["encoder_input_tokens"],
                                      b["decoder_input_tokens"])
  # Weights well away from bf16's grid (the norm scales too), so a cast in the wrong place
  # would show.
  return jax.tree.map(lambda x: jax.device_put((np.asarray(x) * 1.37).astype(x.dtype)), params)


def test_only_the_weights_read_in_the_compute_dtype_are_cast():
  cast = model_lib.params_for_decoding(_params(CFG), jnp.bfloat16)
  dtypes = {"/".join(str(getattr(p, "key", p)) for p in path): str(leaf.dtype)
            for path, leaf in jax.tree_util.tree_flatten_with_path(cast)[0]}
  assert dtypes["decoder/layers_0/self_attention/query"] == "bfloat16"
  assert dtypes["decoder/layers_2/mlp/wo"] == "bfloat16"
  assert dtypes["token_embedder/embedding"] == "bfloat16"
  # Read in float32 by the network: left as they are.
  assert dtypes["decoder/layers_0/pre_self_attention_layer_norm/scale"] == "float32"
  assert dtypes["decoder/relpos_bias/rel_embedding"] == "float32"
  # A float32 network casts nothing.
  same = model_lib.params_for_decoding(_params(CFG), jnp.float32)
  assert all(str(x.dtype) == "float32" for x in jax.tree.leaves(same))


@pytest.mark.parametrize("decode_fn,num_decodes", [(decoding.temperature_sample, 1),
                                                   (decoding.beam_search, 3)])
def test_weights_cast_once_decode_the_same_tokens(monkeypatch, decode_fn, num_decodes):
  params = _params(CFG)
  model = model_lib.EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB, decode_fn=decode_fn)
  extra = {"temperature": 0.0} if num_decodes == 1 else {}
  fast = np.asarray(model.predict_batch(params, _batch(), decoder_params=extra,
                                        num_decodes=num_decodes))
  monkeypatch.setattr(model_lib, "params_for_decoding", lambda p, *_, **__: p)
  plain = np.asarray(model.predict_batch(params, _batch(), decoder_params=extra,
                                         num_decodes=num_decodes))
  np.testing.assert_array_equal(fast, plain)
  assert (fast > 1).any()


def test_a_scanned_stack_decodes_unrolled_to_the_same_tokens():
  scanned_cfg = dataclasses.replace(CFG, scan_layers=True)
  params = _params(CFG)
  stacked = layer_stacking.stack_layers(params)
  model = model_lib.EncoderDecoderModel(Transformer(scanned_cfg), VOCAB, VOCAB)
  encode, _ = model.decoding_programs()
  _, cache = jax.jit(encode)(stacked, _batch())
  # The decoding cache is per layer (unrolled), not one stacked `layers` entry.
  assert sorted(k for k in cache["decoder"] if k.startswith("layers")) == [
      "layers_0", "layers_1", "layers_2"]
  plain = model_lib.EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB)
  np.testing.assert_array_equal(np.asarray(model.predict_batch(stacked, _batch())),
                                np.asarray(plain.predict_batch(params, _batch())))


def _decode_with(cfg, decode_fn, num_decodes):
  """(tokens decoded with `cfg`, the shape of layer 0's cached encoder keys)."""
  extra = {"temperature": 0.0} if num_decodes == 1 else {}
  model = model_lib.EncoderDecoderModel(Transformer(cfg), VOCAB, VOCAB, decode_fn=decode_fn)
  tokens = np.asarray(model.predict_batch(_params(CFG), _batch(), decoder_params=extra,
                                          num_decodes=num_decodes))
  _, cache = model.decoding_programs()[0](_params(CFG), _batch())
  return tokens, cache["decoder"]["layers_0"]["encoder_decoder_attention"]["cross_key"].shape


# The cached encoder keys [b, h, d, len] or [b, h, len, d]; each step's cross-attention
# as XLA's two products or jax's flash-decoding kernel (interpreted on the CPU), on a
# batch with a padded example; the kernel's cache is padded to 16 encoder positions.
@pytest.mark.parametrize("changes,key_shape", [
    ({"cross_keys_last": False}, (3, 4, 10, 8)),
    ({"decode_cross_attention": "pallas_interpret"}, (3, 4, 16, 8))])
# The fast set (`-m 'not slow'`) decodes each with beam search; the full suite greedily too.
@pytest.mark.parametrize("decode_fn,num_decodes", [
    pytest.param(decoding.temperature_sample, 1, marks=pytest.mark.slow),
    (decoding.beam_search, 3)])
def test_each_layout_and_kernel_of_cross_attention_decodes_the_same_tokens(
    changes, key_shape, decode_fn, num_decodes):
  plain, plain_shape = _decode_with(CFG, decode_fn, num_decodes)
  assert plain_shape == (3, 4, 8, 10)  # the default: keys last
  tokens, shape = _decode_with(dataclasses.replace(CFG, **changes), decode_fn, num_decodes)
  assert shape == key_shape
  np.testing.assert_array_equal(tokens, plain)
  assert (plain > 1).any()


def _loop_dots(cfg) -> int:
  """dot_general equations in the decoding loop's program (its step, once)."""
  model = model_lib.EncoderDecoderModel(Transformer(cfg), VOCAB, VOCAB)
  encode, loop = model.decoding_programs()
  encoded, cache = encode(_params(CFG), _batch())
  jaxpr = jax.make_jaxpr(loop)(_params(CFG), _batch(), encoded, cache, jax.random.key(0))
  return str(jaxpr).count("dot_general[")


def test_fused_qkv_stacks_self_attention_kernels_once_and_a_step_reads_them_in_one_matmul():
  params = _params(CFG)
  fused = model_lib.params_for_decoding(params, jnp.bfloat16, fused_qkv=True)
  attn = fused["decoder"]["layers_2"]["self_attention"]
  assert sorted(attn) == ["out", "qkv"] and attn["qkv"].dtype == jnp.bfloat16
  for i, name in enumerate(("query", "key", "value")):
    want = params["decoder"]["layers_2"]["self_attention"][name].astype(jnp.bfloat16)
    np.testing.assert_array_equal(np.asarray(attn["qkv"][:, :, i], np.float32),
                                  np.asarray(want, np.float32))
  # Cross-attention projects only its query in a step; the encoder is not in the loop.
  assert "qkv" not in fused["decoder"]["layers_2"]["encoder_decoder_attention"]
  assert "qkv" not in fused["encoder"]["layers_0"]["attention"]
  # Two matmuls fewer a layer in the step.
  fused_cfg = dataclasses.replace(CFG, fused_qkv=True)
  assert _loop_dots(CFG) - _loop_dots(fused_cfg) == 2 * CFG.num_decoder_layers


# Unrolled: test_models_fused_projections.py (with the fused MLP); here a scanned stack,
# whose parameters are unstacked before the kernels are stacked for the loop.
@pytest.mark.parametrize("scan", [True], ids=["scanned"])
@pytest.mark.parametrize("decode_fn,num_decodes", [(decoding.temperature_sample, 1),
                                                   (decoding.beam_search, 3)])
def test_fused_qkv_decodes_the_same_tokens(decode_fn, num_decodes, scan):
  plain, _ = _decode_with(CFG, decode_fn, num_decodes)
  cfg = dataclasses.replace(CFG, fused_qkv=True, scan_layers=scan)
  extra = {"temperature": 0.0} if num_decodes == 1 else {}
  params = layer_stacking.stack_layers(_params(CFG)) if scan else _params(CFG)
  model = model_lib.EncoderDecoderModel(Transformer(cfg), VOCAB, VOCAB, decode_fn=decode_fn)
  tokens = np.asarray(model.predict_batch(params, _batch(), decoder_params=extra,
                                          num_decodes=num_decodes))
  np.testing.assert_array_equal(tokens, plain)
  assert (plain > 1).any()


def test_fused_qkv_is_checked():
  with pytest.raises(ValueError, match="fused_qkv must be a bool"):
    TransformerConfig(fused_qkv="yes")


# ------------------------------------------- beam search's self caches left in place

def _beam_decode(cfg, num_decodes, prompt=None):
  """(tokens [B, K, L], scores [B, K]) of beam search with `cfg`, every beam returned."""
  model = model_lib.EncoderDecoderModel(Transformer(cfg), VOCAB, VOCAB,
                                        decode_fn=decoding.beam_search)
  batch = _batch(b=4, dec_len=9)
  if prompt is not None:
    batch["decoder_prompt_tokens"] = prompt
  tokens, aux = model.predict_batch_with_aux(_params(dataclasses.replace(CFG, dtype=cfg.dtype)),
                                             batch, num_decodes=num_decodes,
                                             return_all_decodes=True)
  return np.asarray(tokens), np.asarray(aux["scores"])


# The fast set (`-m 'not slow'`) checks float32; the full suite bfloat16 with 4 beams too.
@pytest.mark.parametrize("dtype,num_decodes", [
    ("float32", 3), pytest.param("bfloat16", 4, marks=pytest.mark.slow)])
def test_beam_search_with_self_caches_left_in_place_decodes_the_same_beams(
    monkeypatch, dtype, num_decodes):
  plain_cfg = dataclasses.replace(CFG, dtype=dtype, beam_self_cache="reorder")
  prompt = np.array([[7, 5], [0, 0], [9, 0], [0, 0]], np.int32)  # forced prefixes of 2, 1, 0 tokens
  want, want_scores = _beam_decode(plain_cfg, num_decodes, prompt)
  moved = []  # per step: did some beam continue another row's past?
  reorder = model_lib._reorder_beams_in_place

  def recording(cache, flat_parent):
    jax.debug.callback(lambda p: moved.append(bool((p != np.arange(p.size)).any())),
                       flat_parent)
    return reorder(cache, flat_parent)
  monkeypatch.setattr(model_lib, "_reorder_beams_in_place", recording)
  got, got_scores = _beam_decode(dataclasses.replace(plain_cfg, beam_self_cache="indirect"),
                                 num_decodes, prompt)
  assert sum(moved) >= 3, moved  # the tables were exercised, not just carried
  np.testing.assert_array_equal(got, want)
  # The same scores up to rounding: K query rows a matmul sum their products in another
  # order (2.4e-6 here; up to 5e-5 seen on other weights and longer decodes).
  np.testing.assert_allclose(got_scores, want_scores, rtol=2e-4)
  assert (want > 1).sum() > 20


def test_beam_self_attention_equals_attention_over_caches_copied_into_each_beams_past():
  rng = np.random.default_rng(0)
  batch, beams, heads, length, d = 2, 3, 4, 6, 8
  rows = batch * beams
  query, key, value = (jnp.asarray(rng.normal(size=s), jnp.float32) for s in (
      (rows, heads, 1, d), (rows, heads, length, d), (rows, heads, length, d)))
  source = rng.integers(0, beams, (rows, length)).astype(np.int32)
  bias = jnp.asarray(np.where(np.arange(length) <= 4, 0.0, -1e10), jnp.float32)[None, None, None]
  bias = bias + jnp.asarray(rng.normal(size=(1, heads, 1, length)), jnp.float32)
  got = attention.beam_self_attention(query, key, value, jnp.asarray(source), bias, beams)
  # Each row's past copied out of the row the table names, then plain attention.
  holder = (np.arange(rows) // beams * beams)[:, None] + source  # [rows, length]
  past_k = np.asarray(key)[holder, :, np.arange(length)[None, :]].transpose(0, 2, 1, 3)
  past_v = np.asarray(value)[holder, :, np.arange(length)[None, :]].transpose(0, 2, 1, 3)
  logits = jnp.einsum("bhqd,bhkd->bhqk", query, past_k) + bias
  want = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(logits, axis=-1), past_v)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def _cache_gathers(cfg, num_decodes) -> int:
  """Gathers in the beam-search loop's program whose result is a whole self-attention cache."""
  model = model_lib.EncoderDecoderModel(Transformer(cfg), VOCAB, VOCAB,
                                        decode_fn=decoding.beam_search)
  encode, loop = model.decoding_programs(num_decodes=num_decodes)
  encoded, cache = encode(_params(CFG), _batch())
  jaxpr = str(jax.make_jaxpr(loop)(_params(CFG), _batch(), encoded, cache, jax.random.key(0)))
  rows, length = 3 * num_decodes, _batch()["decoder_input_tokens"].shape[1]
  cache_type = f"bf16[{rows},{CFG.num_heads},{length},{CFG.d_kv}]"
  # jnp.take's calls, and the gather inside it where it is a jit of its own.
  return len(re.findall(rf":{re.escape(cache_type)} = (?:gather\[|jit\[name=_take)", jaxpr))


def test_beam_search_with_self_caches_left_in_place_copies_none_of_them():
  # Copied: every step gathers each decoder layer's cached keys and values.
  assert _cache_gathers(dataclasses.replace(CFG, beam_self_cache="reorder"), 3) >= (
      2 * CFG.num_decoder_layers)
  assert _cache_gathers(CFG, 3) == 0  # the default: left in place


def test_tables_of_caches_left_in_place_are_refused_where_they_cannot_be_read():
  model = model_lib.EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB)
  encoded, cache = model.decoding_programs()[0](_params(CFG), _batch())
  static, step_cache = model_lib._split_cross_cache(cache)
  tables = model_lib._with_beam_sources(step_cache)
  assert tables["decoder"]["layers_1"]["self_attention"]["beam_source"].shape == (3, 7)
  # One row an example (no beams) cannot follow a table: an error, not uncopied caches.
  full = flax.core.unfreeze(traverse_util.unflatten_dict(
      {**traverse_util.flatten_dict(tables), **static}))
  module = Transformer(CFG)
  with pytest.raises(ValueError, match="'beam_source' table with 1 row"):
    module.apply({"params": _params(CFG), "cache": full}, encoded, _batch()["encoder_input_tokens"],
                 np.zeros((3, 1), np.int32), decode=True, max_decode_length=7,
                 method=module.decode, mutable=["cache"])
  # A scanned stack's caches (a layer axis) are not what the tables describe.
  stacked = jax.tree.map(lambda x: x[:, None] if x.ndim == 4 else x, step_cache)
  with pytest.raises(ValueError, match="cached_key: expected \\[rows, heads, length, d\\]"):
    model_lib._with_beam_sources(stacked)


def test_beam_self_cache_is_checked():
  with pytest.raises(ValueError, match="beam_self_cache must be one of"):
    TransformerConfig(beam_self_cache="copy")
