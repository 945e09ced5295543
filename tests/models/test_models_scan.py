"""scan_layers: the scanned stacks compute what the unscanned ones do, from the same weights
(stacked by layer_stacking), in training, decoding and HF import / export."""

import dataclasses
import functools
import types

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import numpy_params
from crosstask.models import decoding
from crosstask.models import hf_import
from crosstask.models import layer_stacking
from crosstask.models.config import TransformerConfig
from crosstask.models.model import EncoderDecoderModel
from crosstask.models.network import Transformer

CFG = TransformerConfig(vocab_size=48, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=2, num_decoder_layers=3, activations=("gelu", "linear"),
                        logits_via_embedding=False, dropout_rate=0.1, dtype="float32",
                        relative_attention_num_buckets=8, relative_attention_max_distance=16)
SCANNED = dataclasses.replace(CFG, scan_layers=True, remat_policy="full")
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=48)


def _batch(seed=0, b=3, enc_len=10, dec_len=7):
  rng = np.random.default_rng(seed)
  enc = rng.integers(2, 48, (b, enc_len)).astype(np.int32)
  enc[1, 6:] = 0
  tgt = rng.integers(2, 48, (b, dec_len)).astype(np.int32)
  tgt[0, 4:] = 0
  dec = np.concatenate([np.zeros((b, 1), np.int32), tgt[:, :-1]], 1)
  return {"encoder_input_tokens": enc, "decoder_input_tokens": dec, "decoder_target_tokens": tgt,
          "decoder_loss_weights": (tgt > 0).astype(np.float32)}


@functools.cache
def _params():
  b = _batch()
  return numpy_params.random_params(Transformer(CFG), b["encoder_input_tokens"],
                                    b["decoder_input_tokens"])


def _loss_logits_grads(cfg, params):
  b = _batch()
  model = Transformer(cfg)

  def loss(p):
    logits = model.apply({"params": p}, b["encoder_input_tokens"], b["decoder_input_tokens"],
                         b["decoder_target_tokens"])
    logp = jax.nn.log_softmax(logits)
    token = -jnp.take_along_axis(logp, b["decoder_target_tokens"][..., None], -1)[..., 0]
    return jnp.sum(token * b["decoder_loss_weights"]), logits

  (value, logits), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
  return value, logits, grads


def test_scanned_params_are_the_stacked_unscanned_ones():
  b = _batch()
  variables = jax.eval_shape(Transformer(SCANNED).init, jax.random.PRNGKey(0),
                             b["encoder_input_tokens"], b["decoder_input_tokens"])
  want = jax.tree.map(lambda x: x.shape, layer_stacking.stack_layers(_params()))
  assert jax.tree.map(lambda x: x.shape, nn.meta.unbox(variables["params"])) == want
  wo = variables["params"]["decoder"]["layers"]["mlp"]["wo"]
  assert wo.names == ("layers", "mlp", "embed")  # the stacked axis has its own logical name
  assert layer_stacking.layout(variables["params"]) == "stacked"
  assert layer_stacking.layout(_params()) == "unstacked"


def test_scanned_equals_unscanned_in_logits_loss_and_gradients():
  loss, logits, grads = _loss_logits_grads(CFG, _params())
  s_loss, s_logits, s_grads = _loss_logits_grads(SCANNED, layer_stacking.stack_layers(_params()))
  np.testing.assert_allclose(s_logits, logits, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(s_loss, loss, rtol=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
               s_grads, layer_stacking.stack_layers(grads))


def test_an_unrolled_scan_computes_the_same_and_refuses_nonsense():
  # Two layers per iteration over stacks of 2 and 3 layers (the last iteration short).
  loss, logits, grads = _loss_logits_grads(SCANNED, layer_stacking.stack_layers(_params()))
  two = dataclasses.replace(SCANNED, scan_unroll=2)
  u_loss, u_logits, u_grads = _loss_logits_grads(two, layer_stacking.stack_layers(_params()))
  np.testing.assert_allclose(u_logits, logits, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(u_loss, loss, rtol=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
               u_grads, grads)
  # And it does unroll: two layers per iteration make another program.
  b, stacked = _batch(), layer_stacking.stack_layers(_params())

  def program(cfg):
    return jax.jit(Transformer(cfg).apply).lower(
        {"params": stacked}, b["encoder_input_tokens"], b["decoder_input_tokens"]).as_text()
  assert program(two) != program(SCANNED)
  # 'auto' the platform profile did not resolve runs one layer per iteration.
  assert SCANNED.scan_unroll == "auto"
  assert program(SCANNED) == program(dataclasses.replace(SCANNED, scan_unroll=1))
  with pytest.raises(ValueError, match="scan_unroll must be a positive int, 'full' or 'auto'"):
    dataclasses.replace(SCANNED, scan_unroll=0)
  with pytest.raises(ValueError, match="scan_unroll must be"):
    dataclasses.replace(SCANNED, scan_unroll="all")


def test_a_fully_unrolled_scan_computes_the_same_with_no_loop_and_no_stacked_residuals():
  # 'full' runs each stack (2 and 3 layers here) as straight-line code over the same
  # stacked parameters: the same loss, logits and gradients, and a gradient program
  # without the while loop whose stacked residuals the backward pass reads (zeroed,
  # written a layer per iteration, sliced: ~70 of the H200's 566 ms LongLM-large step).
  stacked = layer_stacking.stack_layers(_params())
  loss, logits, grads = _loss_logits_grads(SCANNED, stacked)
  full = dataclasses.replace(SCANNED, scan_unroll="full")
  f_loss, f_logits, f_grads = _loss_logits_grads(full, stacked)
  np.testing.assert_allclose(f_logits, logits, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(f_loss, loss, rtol=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), f_grads, grads)
  b = _batch()

  def loops_and_updates(cfg):
    model = Transformer(cfg)

    def loss_fn(p):
      return jnp.sum(model.apply({"params": p}, b["encoder_input_tokens"],
                                 b["decoder_input_tokens"]))
    program = jax.jit(jax.grad(loss_fn)).lower(stacked).as_text()  # before any backend pass
    return program.count("stablehlo.while"), program.count("stablehlo.dynamic_update_slice")
  assert loops_and_updates(full) == (0, 0)
  scanned_loops, scanned_updates = loops_and_updates(SCANNED)
  assert scanned_loops >= 4 and scanned_updates > 0  # forward and backward, two stacks each
  assert full.layers_per_scan_iteration(3) == 3 and SCANNED.layers_per_scan_iteration(3) == 1


def test_stack_and_unstack_round_trip_and_refuse_gaps():
  params = _params()
  back = layer_stacking.unstack_layers(layer_stacking.stack_layers(params))
  jax.tree.map(np.testing.assert_array_equal, back, params)
  gap = {"encoder": {"layers_0": {"w": np.zeros(2)}, "layers_2": {"w": np.zeros(2)}}}
  with pytest.raises(ValueError, match="layers_0 .. layers_"):
    layer_stacking.stack_layers(gap)


@pytest.mark.parametrize("decode_fn,params", [
    pytest.param(decoding.temperature_sample, {"temperature": 0.0},  # greedy
                 marks=pytest.mark.slow),
    (decoding.beam_search, {}),  # 2 beams: the cache is repeated and reordered per beam
])
def test_decoding_scanned_equals_unscanned(decode_fn, params):
  batch = _batch(seed=3)
  outputs = []
  for cfg, weights in ((CFG, _params()), (SCANNED, layer_stacking.stack_layers(_params()))):
    model = EncoderDecoderModel(Transformer(cfg), VOCAB, VOCAB, decode_fn=decode_fn)
    outputs.append(np.asarray(model.predict_batch(weights, batch, decoder_params=params,
                                                  num_decodes=2 if params == {} else 1)))
  np.testing.assert_array_equal(outputs[1], outputs[0])
  assert outputs[0].shape[0] == 3 and (outputs[0] > 1).any()


def test_hf_import_and_export_with_scanned_layers(tmp_path):
  folder = hf_import.save_hf_checkpoint(tmp_path / "hf", CFG, _params())
  tensors = hf_import.read_tensors(folder)
  scanned = hf_import.params_from_hf_tensors(SCANNED, tensors)
  unscanned = hf_import.params_from_hf_tensors(CFG, tensors)
  jax.tree.map(np.testing.assert_array_equal, scanned, layer_stacking.stack_layers(unscanned))
  exported = hf_import.hf_tensors_from_params(SCANNED, scanned)
  assert sorted(exported) == sorted(tensors)
  for name, value in tensors.items():
    np.testing.assert_array_equal(exported[name], value, err_msg=name)
