"""EncoderDecoderModel: T5X loss semantics, training signal, scoring, embeddings, decoding."""

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import numpy_params
from crosstask.models import decoding
from crosstask.models import losses
from crosstask.models.config import ConfigError
from crosstask.models.config import TransformerConfig
from crosstask.models.model import EncoderDecoderModel
from crosstask.models.network import Transformer

CFG = TransformerConfig(vocab_size=48, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=2, num_decoder_layers=2, dropout_rate=0.0,
                        dtype="float32", relative_attention_num_buckets=8,
                        relative_attention_max_distance=16)
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=48)


def _model(**kw):
  return EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB, **kw)


def _batch(seed=0, b=3, enc_len=10, dec_len=6):
  rng = np.random.default_rng(seed)
  enc = rng.integers(2, 48, (b, enc_len)).astype(np.int32)
  enc[1, 6:] = 0
  tgt = rng.integers(2, 48, (b, dec_len)).astype(np.int32)
  tgt[0, 4:] = 0
  tgt[0, 3] = 1
  dec = np.concatenate([np.zeros((b, 1), np.int32), tgt[:, :-1]], 1)
  return {"encoder_input_tokens": enc, "decoder_input_tokens": dec, "decoder_target_tokens": tgt,
          "decoder_loss_weights": (tgt > 0).astype(np.float32)}


@pytest.fixture(scope="module")
def params():
  # Drawn with numpy: a jitted init compiles for seconds, an eager one every operation.
  return numpy_params.random_params(Transformer(CFG), np.ones((1, 10), np.int32),
                                    np.ones((1, 6), np.int32))


def _manual(params, batch, ls=0.0, z=0.0):
  logits = Transformer(CFG).apply({"params": params}, batch["encoder_input_tokens"],
                                  batch["decoder_input_tokens"], batch["decoder_target_tokens"])
  logp = np.asarray(jax.nn.log_softmax(logits, -1), np.float64)
  v = logits.shape[-1]
  soft = np.full(logp.shape, ls / (v - 1))
  np.put_along_axis(soft, batch["decoder_target_tokens"][..., None], 1 - ls, -1)
  entropy = -np.sum(soft * np.log(soft + 1e-20), -1)
  log_z = np.asarray(jax.nn.logsumexp(logits, -1), np.float64)
  tok = -np.sum(soft * logp, -1) - entropy + z * log_z ** 2
  w = batch["decoder_loss_weights"]
  return np.sum(tok * w), np.sum(z * log_z ** 2 * w), logits


@pytest.mark.parametrize("factor", [None, 4.0, "NUM_REAL_TARGET_TOKENS", "NUM_TOTAL_TARGET_TOKENS"])
def test_loss_normalisation_like_t5x(params, factor):
  batch = _batch()
  loss, m = _model(label_smoothing=0.1, z_loss=1e-3, loss_normalizing_factor=factor).loss_fn(
      params, batch, None)
  total, z_total, logits = _manual(params, batch, ls=0.1, z=1e-3)
  n_real = batch["decoder_loss_weights"].sum()
  div = {None: 1.0, 4.0: 4.0, "NUM_REAL_TARGET_TOKENS": n_real,
         "NUM_TOTAL_TARGET_TOKENS": batch["decoder_target_tokens"].size}[factor]
  np.testing.assert_allclose(loss, total / div, rtol=1e-5)
  np.testing.assert_allclose(m["z_loss"], z_total / div, rtol=1e-5)
  np.testing.assert_allclose(m["cross_ent_loss"], (total - z_total) / div, rtol=1e-5)
  assert m["nonpadding_tokens"] == n_real
  acc = ((np.argmax(logits, -1) == batch["decoder_target_tokens"]) * batch["decoder_loss_weights"])
  np.testing.assert_allclose(m["accuracy"], acc.sum() / n_real, rtol=1e-6)


def test_average_per_sequence(params):
  batch = _batch()
  loss, _ = _model(z_loss=0.0, loss_normalizing_factor="AVERAGE_PER_SEQUENCE").loss_fn(
      params, batch, None)
  scores = _model().score_batch(params, batch)
  per_seq = -np.asarray(scores) / batch["decoder_loss_weights"].sum(1)
  np.testing.assert_allclose(loss, per_seq.mean(), rtol=1e-5)


def test_average_per_sequence_weights_with_segment_ids_beyond_the_length():
  # A packed row may number more examples than it has target slots (examples
  # without targets still take a number): ids 2 and 9 in 4 slots.
  segments = np.array([[2, 2, 9, 0], [1, 1, 1, 1]], np.int32)
  batch = {"decoder_target_tokens": np.array([[5, 1, 7, 0], [4, 4, 4, 1]], np.int32),
           "decoder_segment_ids": segments,
           "decoder_loss_weights": np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.float32)}
  factor, weights = losses.get_loss_normalizing_factor_and_weights("AVERAGE_PER_SEQUENCE", batch)
  assert float(factor) == 3.0  # three sequences
  np.testing.assert_allclose(weights, [[0.5, 0.5, 1.0, 0.0], [0.25] * 4])


def test_score_batch_is_summed_loglik(params):
  batch = _batch(1)
  total, _, _ = _manual(params, batch)
  scores = _model().score_batch(params, batch)
  assert scores.shape == (3,)
  np.testing.assert_allclose(-np.sum(scores), total, rtol=1e-5)
  half = dict(batch, decoder_loss_weights=batch["decoder_loss_weights"] * 0.5)
  np.testing.assert_allclose(_model().score_batch(params, half), scores * 0.5, rtol=1e-5)


def test_training_steps_reduce_loss_with_dropout(params):
  model = EncoderDecoderModel(Transformer(TransformerConfig(**{**CFG.__dict__, "dropout_rate": 0.1})),
                              VOCAB, VOCAB, loss_normalizing_factor="NUM_REAL_TARGET_TOKENS")
  batch = _batch(2)
  opt = optax.adam(3e-3)
  state = opt.init(params)

  @jax.jit
  def step(p, s, rng):
    (loss, _), grads = jax.value_and_grad(model.loss_fn, has_aux=True)(p, batch, rng)
    updates, s = opt.update(grads, s, p)
    return optax.apply_updates(p, updates), s, loss

  p, first = params, None
  for i in range(20):
    p, state, loss = step(p, state, jax.random.PRNGKey(i))
    first = loss if first is None else first
  assert np.isfinite(loss) and loss < 0.5 * first


def test_embed_mean_over_real_tokens(params):
  batch = _batch(3)
  model = _model()
  emb = model.embed(params, batch)
  assert emb.shape == (3, CFG.d_model) and emb.dtype == jnp.float32
  enc = Transformer(CFG).apply({"params": params}, batch["encoder_input_tokens"],
                               method=Transformer.encode)
  np.testing.assert_allclose(emb[1], np.mean(enc[1, :6], 0), atol=1e-5)
  np.testing.assert_allclose(model.embed(params, batch, pooling="first"), enc[:, 0], atol=1e-6)
  with pytest.raises(ValueError, match="pooling"):
    model.embed(params, batch, pooling="max")


def test_greedy_is_argmax_of_teacher_forced_logits(params):
  batch = _batch(4, dec_len=8)
  tokens, aux = _model().predict_batch_with_aux(params, batch)
  assert tokens.shape == (3, 8) and tokens.dtype == jnp.int32 and aux["scores"].shape == (3,)
  dec_in = jnp.concatenate([jnp.zeros((3, 1), jnp.int32), tokens[:, :-1]], 1)
  logits = Transformer(CFG).apply({"params": params}, batch["encoder_input_tokens"], dec_in)
  alive = jnp.cumsum(tokens == 1, 1) - (tokens == 1) == 0  # up to and including EOS
  np.testing.assert_array_equal(jnp.where(alive, jnp.argmax(logits, -1), 0), tokens)
  logp = jnp.take_along_axis(jax.nn.log_softmax(logits), tokens[..., None], -1)[..., 0]
  np.testing.assert_allclose(aux["scores"], jnp.sum(jnp.where(alive, logp, 0), 1), atol=1e-4)


def test_decoder_prefix_for_every_method(params):
  batch = _batch(5, dec_len=8)
  prefix = batch["decoder_target_tokens"][:, :2]
  with_prompt = dict(batch, decoder_prompt_tokens=prefix)
  beam = functools.partial(decoding.beam_search, alpha=0.6)
  for model, kw in ((_model(), {}),
                    (_model(default_decoder_params={"temperature": 0.7, "topk": 40}), {}),
                    (EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB, decode_fn=beam),
                     {"num_decodes": 4})):
    out = model.predict_batch(params, with_prompt, jax.random.PRNGKey(1), **kw)
    np.testing.assert_array_equal(out[:, :2], prefix)
  # prompt_with_targets: leading nonzero tokens of decoder_input_tokens[:, 1:].
  shifted = dict(batch, decoder_input_tokens=np.pad(prefix, ((0, 0), (1, 5))))
  out = _model().predict_batch(params, shifted, prompt_with_targets=True)
  np.testing.assert_array_equal(out[:, :2], prefix)
  # Targets that end in EOS prompt with what precedes it, as T5X strips it: greedy, which
  # stopped at the forced EOS, and beam search, which went on past it, both continue.
  prefix = np.where(prefix == VOCAB.eos_id, 2, prefix)
  with_eos = dict(batch, decoder_input_tokens=np.pad(
      np.concatenate([prefix, np.full((3, 1), VOCAB.eos_id)], axis=1), ((0, 0), (1, 4))))
  for model, kw in ((_model(), {}), (EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB,
                                                          decode_fn=beam), {"num_decodes": 4})):
    out = model.predict_batch(params, with_eos, prompt_with_targets=True, **kw)
    np.testing.assert_array_equal(out, model.predict_batch(
        params, dict(batch, decoder_prompt_tokens=prefix), **kw))
    assert (out[:, 2] != 0).all()


def test_sampling_and_beam_outputs(params):
  batch = _batch(6, dec_len=8)
  sampler = _model(default_decoder_params={"temperature": 0.7, "topk": 40})
  a = sampler.predict_batch(params, batch, jax.random.PRNGKey(3), num_decodes=2,
                            return_all_decodes=True)
  b = sampler.predict_batch(params, batch, jax.random.PRNGKey(3), num_decodes=2,
                            return_all_decodes=True)
  assert a.shape == (3, 2, 8)
  np.testing.assert_array_equal(a, b)
  beam = EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB, decode_fn=decoding.beam_search,
                             default_decoder_params={"alpha": 0.6})
  seqs, aux = beam.predict_batch_with_aux(params, batch, num_decodes=4, return_all_decodes=True)
  assert seqs.shape == (3, 4, 8) and aux["scores"].shape == (3, 4)
  assert np.all(np.diff(np.asarray(aux["scores"]), axis=1) <= 1e-6)  # best first


def test_bad_inputs_name_the_parameter(params):
  batch = _batch()
  with pytest.raises(ValueError, match="decoder_target_tokens"):
    _model().loss_fn(params, {k: v for k, v in batch.items() if k != "decoder_target_tokens"}, None)
  with pytest.raises(ValueError, match="loss_normalizing_factor"):
    _model(loss_normalizing_factor="PER_TOKEN")
  with pytest.raises(ValueError, match="decoder_params.*beam_width"):
    _model().predict_batch(params, batch, decoder_params={"beam_width": 3})
  for name, value in (("num_decodes", 2), ("eos_id", 5), ("max_decode_len", 3)):
    with pytest.raises(ValueError, match=f"decoder_params \\['{name}'\\] are set by the model"):
      _model().predict_batch(params, batch, decoder_params={name: value})
  with pytest.raises(ValueError, match="input_shapes.*decoder_input_tokens"):
    _model().get_initial_variables(jax.random.PRNGKey(0), {"encoder_input_tokens": (1, 4)})


def test_decoding_settings_a_job_gets_wrong_are_config_errors(params):
  # One line at the entry points (ConfigError), naming what the decoding function takes.
  batch = _batch()
  beam = EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB, decode_fn=decoding.beam_search)
  with pytest.raises(ConfigError, match=r"decoder_params \['alpa'\] are not arguments of "
                     r"beam_search; it takes \[.*'alpha'.*\] \('alpa': did you mean 'alpha'\?\)"):
    beam.predict_batch(params, batch, decoder_params={"alpa": 0.6})
  # Greedy with several decodes gave one decode's copies, scored as greedy, with no word.
  with pytest.raises(ConfigError, match="num_decodes=4 with greedy decoding .*=beam_search.gin"):
    _model().predict_batch(params, batch, num_decodes=4)
  sampled = _model(default_decoder_params={"temperature": 0.7})
  assert sampled.predict_batch(params, batch, jax.random.PRNGKey(0), num_decodes=2,
                               return_all_decodes=True).shape[1] == 2


def test_a_model_starts_from_the_decoder_params_its_decoding_function_declares(params):
  """Greedy by default (temperature_sample declares temperature 0); beam search declares
  none; a config's own defaults win."""
  assert _model().default_decoder_params == {"temperature": 0.0}
  beam = EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB, decode_fn=decoding.beam_search)
  assert beam.default_decoder_params == {}
  assert _model(default_decoder_params={}).default_decoder_params == {}
  batch = _batch(4, dec_len=8)
  greedy = _model().predict_batch(params, batch, jax.random.PRNGKey(5))
  want = _model(decode_fn=decoding.greedy).predict_batch(params, batch)
  np.testing.assert_array_equal(greedy, want)
