"""Decoding's XLA options (`EncoderDecoderModel.predict_compiler_options`): the CPU
defaults reach XLA in every jit that decodes (the encoder and loop programs of the
model's predict_batch and of the runtime's `Inference`), change no token or score,
and a wrong option names its binding."""

import types

import flax.linen as nn
import jax
import numpy as np
import pytest
import tensorflow as tf

from crosstask.models import decoding
from crosstask.models import model as model_lib
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer
from crosstask.runtime import inference, partitioning

CFG = TransformerConfig(vocab_size=300, d_model=64, d_ff=128, num_heads=4, d_kv=16,
                        num_encoder_layers=2, num_decoder_layers=2, dropout_rate=0.0,
                        dtype="float32")
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=300)
on_cpu = pytest.mark.skipif(jax.default_backend() != "cpu", reason="an XLA:CPU option")


def _model(beam: bool = False, **kw) -> model_lib.EncoderDecoderModel:
  if beam:
    kw.update(decode_fn=decoding.beam_search, default_decoder_params={"alpha": 1.0})
  return model_lib.EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB, **kw)


@pytest.fixture(scope="module")
def params():
  shapes = _model().get_initial_variables(jax.random.key(0), {
      "encoder_input_tokens": (1, 24), "decoder_input_tokens": (1, 8)})["params"]
  rng = np.random.default_rng(0)  # Spread-out weights, so decodes differ from row to row.
  return jax.tree.map(lambda x: np.float32(0.3) * rng.standard_normal(x.shape, np.float32),
                      nn.unbox(shapes))


def _batch(b: int = 8) -> dict[str, np.ndarray]:
  rng = np.random.default_rng(0)
  return {"encoder_input_tokens": rng.integers(2, 300, (b, 24)).astype(np.int32),
          "decoder_input_tokens": np.zeros((b, 8), np.int32)}


def _ynn_fusions(compiled) -> int:
  return compiled.as_text().count("__ynn_fusion")


def _compiled_parts(model, params, batch, num_decodes=1, decoder_items=()):
  """predict_batch's two compiled programs, as it runs them for `batch`."""
  rows = batch["encoder_input_tokens"].shape[0] * num_decodes
  encoder = model._predict_jit(rows, "encoder")
  encoded, cache = encoder(params, batch)
  loop = model._predict_jit(rows, "loop").lower(
      params, batch, encoded, cache, jax.random.PRNGKey(0), decoder_items=decoder_items,
      num_decodes=num_decodes, prompt_with_targets=False).compile()
  return encoder.lower(params, batch).compile(), loop


def _if_known(options: dict) -> dict:
  return options if model_lib._xla_accepts(tuple(options.items())) else {}


# The CPU defaults: every program keeps reductions whole; the encoder (and the loop
# where YNNPACK does not win) also gets no YNNPACK fusions.
_WHOLE = _if_known(model_lib.CPU_WHOLE_REDUCTIONS)
_NO_YNN = {**_WHOLE, **_if_known(model_lib.CPU_NO_YNN_FUSIONS)}


def _reduce_windows(compiled) -> int:
  return compiled.as_text().count(" reduce-window(")


@pytest.mark.parametrize("avx512", [False, True])
def test_default_options_by_platform_part_and_cpu_and_an_explicit_choice_wins(
    monkeypatch, avx512):
  monkeypatch.setattr(model_lib, "_cpu_has_avx512", lambda: avx512)
  default = _model()
  wide = model_lib.CPU_WIDE_DECODE_ROWS
  for part in model_lib.PREDICT_PARTS:
    assert default.compiler_options_for_predict("gpu", 8, part) == {}
    assert _model(predict_compiler_options={}).compiler_options_for_predict("cpu", 8, part) == {}
    mine = {"xla_cpu_enable_fast_math": False}
    assert _model(predict_compiler_options=mine).compiler_options_for_predict(
        "gpu", 8, part) == mine
    assert _model(predict_compiler_options=mine).compiler_options_for_predict(
        "cpu", 10**4, part) == mine
  # The encoder: never YNNPACK fusions on CPU.
  assert default.compiler_options_for_predict("cpu", 1, "encoder") == _NO_YNN
  assert default.compiler_options_for_predict("cpu", 10**4, "encoder") == _NO_YNN
  # The loop: YNNPACK fusions on an AVX-512 CPU; elsewhere none below `wide` rows a
  # step and XLA's from there on. Reductions stay whole in both.
  assert default.compiler_options_for_predict("cpu", 8, "loop") == (
      _WHOLE if avx512 else _NO_YNN)
  assert default.compiler_options_for_predict("cpu", wide - 1, "loop") == (
      _WHOLE if avx512 else _NO_YNN)
  assert default.compiler_options_for_predict("cpu", wide, "loop") == _WHOLE
  assert _WHOLE and _NO_YNN != _WHOLE  # this jaxlib knows both option sets
  with pytest.raises(ValueError, match="part='decoder'"):
    default.compiler_options_for_predict("cpu", 8, "decoder")
  with pytest.raises(ValueError, match="part='whole'"):
    default.compiler_options_for_predict("cpu", 8, "whole")


def test_a_flag_this_xla_does_not_know_is_not_a_default():
  assert not model_lib._xla_accepts((("xla_cpu_no_such_flag", ""),))


@on_cpu
@pytest.mark.parametrize("avx512", [False, True])
@pytest.mark.parametrize("beam", [False, True], ids=["greedy", "beam4"])
def test_cpu_defaults_reach_both_programs_and_decode_the_same(params, monkeypatch, beam,
                                                              avx512):
  monkeypatch.setattr(model_lib, "_cpu_has_avx512", lambda: avx512)
  batch = _batch()
  num_decodes = 4 if beam else 1  # 8 or 32 rows a step: below CPU_WIDE_DECODE_ROWS
  runs = {}
  for name, options in (("default", None), ("xla", {})):
    model = _model(beam, predict_compiler_options=options)
    tokens, aux = model.predict_batch_with_aux(params, batch, num_decodes=num_decodes)
    for part in ("encoder", "loop"):  # the top-level jits with the options ran
      assert model._predict_jit(8 * num_decodes, part)._cache_size() == 1
    runs[name] = (np.asarray(tokens), np.asarray(aux["scores"]), model)
  no_ynn_only = _model(beam, predict_compiler_options=_if_known(model_lib.CPU_NO_YNN_FUSIONS))
  models = {"default": runs["default"][2], "xla": runs["xla"][2], "no_ynn_only": no_ynn_only}
  compiled = {name: _compiled_parts(model, params, batch, num_decodes,
                                    tuple(sorted(model.default_decoder_params.items())))
              for name, model in models.items()}
  # The options reach XLA: XLA's own defaults fuse some ops for YNNPACK; ours none in
  # the encoder, and none in the loop unless the CPU has AVX-512.
  fusions = {name: [_ynn_fusions(c) for c in parts] for name, parts in compiled.items()}
  assert fusions["default"][0] == 0 < fusions["xla"][0]
  assert fusions["xla"][1] > 0
  assert (fusions["default"][1] > 0) == avx512
  # XLA splits the RMS norms' reductions over d_model = 64 in two (a reduce-window,
  # then a reduce) where no YNNPACK fusion takes them: in the encoder compiled with no
  # YNNPACK fusions alone, and in the loop with XLA's defaults. Ours keep them whole.
  split = {name: [_reduce_windows(c) for c in parts] for name, parts in compiled.items()}
  assert split["default"] == [0, 0]
  assert split["no_ynn_only"][0] > 0 and split["xla"][1] > 0
  tokens = no_ynn_only.predict_batch(params, batch, num_decodes=num_decodes)
  np.testing.assert_array_equal(np.asarray(tokens), runs["default"][0])
  np.testing.assert_array_equal(runs["default"][0], runs["xla"][0])
  assert (runs["default"][0] > 1).sum() > 8 * 4  # real decodes, not EOS at once
  np.testing.assert_allclose(runs["default"][1], runs["xla"][1], rtol=1e-5, atol=1e-5)


def test_decoding_inside_another_jit_uses_that_jits_compilation(params):
  batch = _batch()
  model = _model()
  key = jax.random.PRNGKey(0)
  direct = np.asarray(model.predict_batch(params, batch, key))
  # Closed over (no tracer among the arguments) and passed in: both nest in the outer jit.
  closed = jax.jit(lambda: model.predict_batch(params, batch, key))()
  passed = jax.jit(lambda p, b: model.predict_batch(p, b, key))(params, batch)
  np.testing.assert_array_equal(np.asarray(closed), direct)
  np.testing.assert_array_equal(np.asarray(passed), direct)


def _dataset(batch):
  feats = {k: tf.constant(v) for k, v in batch.items()}
  return tf.data.Dataset.from_tensor_slices(feats).enumerate()


def _runner(model, params, batch_size: int = 8, num_decodes: int = 1, devices=None):
  partitioner = partitioning.Partitioner(devices=devices)
  shardings = jax.tree.map(lambda _: partitioner.replicated, params)
  return inference.Inference(model, partitioner, shardings, batch_size=batch_size,
                             num_decodes=num_decodes)


@on_cpu
@pytest.mark.parametrize("avx512", [False, True])
def test_inference_compiles_the_same_two_programs_and_decodes_the_same(params, monkeypatch,
                                                                       avx512):
  monkeypatch.setattr(model_lib, "_cpu_has_avx512", lambda: avx512)
  batch = _batch()
  model = _model()
  tokens = np.asarray(model.predict_batch(params, batch))
  # On one device (8 rows a step there, as in predict_batch) the options show in the
  # compiled programs; split over 8 devices, XLA fuses nothing for YNNPACK in rows of 1.
  one = _runner(model, params, devices=jax.devices()[:1])
  assert one._predict_options == {
      part: model.compiler_options_for_predict("cpu", 8, part) for part in ("encoder", "loop")}
  sharded = one.partitioner.shard_batch(batch)
  with one.partitioner.context():
    encoder = one._encode.lower(params, sharded).compile()
    loop = one._decode.lower(params, sharded, *one._encode(params, sharded)).compile()
  assert _ynn_fusions(encoder) == 0
  assert (_ynn_fusions(loop) > 0) == avx512
  for runner in (one, _runner(model, params)):
    out = dict(runner.predict(params, _dataset(batch)))
    assert [out[i] for i in range(8)] == tokens.tolist()


@pytest.mark.skipif(len(jax.devices()) < 2, reason="needs a mesh of more than one device")
def test_inference_keeps_the_batch_split_over_the_data_axis_between_its_programs(params):
  runner = _runner(_model(), params)
  sharded = runner.partitioner.shard_batch(_batch())
  with runner.partitioner.context():
    encoded, cache = runner._encode(params, sharded)
    tokens, aux = runner._decode(params, sharded, encoded, cache)
  data = runner.partitioner.data_sharding
  assert encoded.sharding.is_equivalent_to(data, encoded.ndim)
  assert tokens.sharding.is_equivalent_to(data, tokens.ndim)
  assert aux["scores"].sharding.is_equivalent_to(data, aux["scores"].ndim)


def test_wrong_option_names_the_binding_in_both_decoding_jits(params):
  bad = {"xla_cpu_no_such_flag": "1"}
  with pytest.raises(ValueError, match=r"EncoderDecoderModel\.predict_compiler_options=.*"
                                       r"xla_cpu_no_such_flag"):
    _model(predict_compiler_options=bad).predict_batch(params, _batch())
  runner = _runner(_model(predict_compiler_options=bad), params)
  with pytest.raises(ValueError, match=r"EncoderDecoderModel\.predict_compiler_options=.*"
                                       r"xla_cpu_no_such_flag"):
    runner.predict(params, _dataset(_batch()))


@on_cpu
def test_many_rows_a_step_decode_with_ynnpack_fusions_and_the_same_tokens(params):
  # 32 examples x beam 4 = 128 rows a step: the model compiles the loop with YNNPACK
  # fusions, the runtime's Inference too, and the beams equal those decoded without.
  batch = _batch(32)
  model = _model(True)
  narrow = _model(True, predict_compiler_options=_NO_YNN)
  tokens, aux = model.predict_batch_with_aux(params, batch, num_decodes=4)
  want, want_aux = narrow.predict_batch_with_aux(params, batch, num_decodes=4)
  assert list(model._predict_jits) == [("encoder",) + tuple(sorted(_NO_YNN.items())),
                                       ("loop",) + tuple(sorted(_WHOLE.items()))]
  _, loop = _compiled_parts(model, params, batch, 4, (("alpha", 1.0),))
  assert _ynn_fusions(loop) > 0
  np.testing.assert_array_equal(np.asarray(tokens), np.asarray(want))
  assert (np.asarray(tokens) > 1).sum() > 32 * 4  # real decodes, not EOS at once
  np.testing.assert_allclose(np.asarray(aux["scores"]), np.asarray(want_aux["scores"]),
                             rtol=1e-5)
  assert _runner(model, params, batch_size=32, num_decodes=4)._predict_options == {
      "encoder": _NO_YNN, "loop": _WHOLE}
