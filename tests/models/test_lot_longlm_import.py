"""A LongLM-shaped HF folder (T5 1.0, decoder start id 1) imports with its own ids."""

import dataclasses
import types

import numpy as np
import pytest
import torch
import transformers
import jax

from crosstask.models import decoding
from crosstask.models import hf_import
from crosstask.models import model as model_lib
from crosstask.models import network

# LongLM: T5 1.0 (relu, tied), 32,000 pieces + 100 sentinels; here scaled down.
LONGLM = dict(vocab_size=100, d_model=32, d_ff=64, num_heads=4, d_kv=8, num_layers=2,
              feed_forward_proj="relu", dropout_rate=0.0, relative_attention_num_buckets=8,
              relative_attention_max_distance=16, pad_token_id=0, eos_token_id=2,
              decoder_start_token_id=1)


def _longlm_folder(path, seed=0):
  torch.manual_seed(seed)
  hf = transformers.T5ForConditionalGeneration(transformers.T5Config(**LONGLM)).eval()
  hf.save_pretrained(path)
  return hf


def test_config_takes_vocab_size_and_decoder_start_id_from_config_json():
  config = hf_import.config_from_hf({**LONGLM, "vocab_size": 32100})
  assert config.vocab_size == 32100 and config.decoder_start_id == 1
  assert config.activations == ("relu",) and config.logits_via_embedding
  assert hf_import.hf_config_from(config)["decoder_start_token_id"] == 1
  assert hf_import.config_from_hf({k: v for k, v in LONGLM.items()
                                   if k != "decoder_start_token_id"}).decoder_start_id == 0


def test_logits_match_with_start_id_1(tmp_path):
  hf = _longlm_folder(tmp_path / "longlm")
  config, params = hf_import.load_hf_checkpoint(tmp_path / "longlm")
  rng = np.random.default_rng(0)
  enc = rng.integers(3, 100, size=(2, 9)).astype(np.int32)
  dec = rng.integers(3, 100, size=(2, 6)).astype(np.int32)
  dec[:, 0] = 1
  with torch.no_grad():
    want = hf(input_ids=torch.tensor(enc, dtype=torch.long),
              decoder_input_ids=torch.tensor(dec, dtype=torch.long)).logits.numpy()
  ours_dec = dec.copy()
  ours_dec[:, 0] = 0  # crosstask data keep 0 there; the decoder embeds it as id 1
  got = network.Transformer(config).apply({"params": params}, enc, ours_dec)
  np.testing.assert_allclose(np.asarray(got), want, atol=1e-4, rtol=0)
  # Without the start id the first position differs: the setting is what makes parity.
  plain = network.Transformer(dataclasses.replace(config, decoder_start_id=0))
  other = plain.apply({"params": params}, enc, ours_dec)
  assert np.abs(np.asarray(other)[:, 0] - want[:, 0]).max() > 1e-3


@pytest.mark.slow
def test_greedy_matches_generate_with_start_id_1(tmp_path):
  hf = _longlm_folder(tmp_path / "longlm", seed=2)
  config, params = hf_import.load_hf_checkpoint(tmp_path / "longlm")
  enc = np.random.default_rng(3).integers(3, 100, size=(3, 10)).astype(np.int32)
  length = 8
  with torch.no_grad():
    want = hf.generate(input_ids=torch.tensor(enc, dtype=torch.long), do_sample=False,
                       num_beams=1, max_new_tokens=length, min_length=0).numpy()
  assert (want[:, 0] == 1).all()  # HF starts from decoder_start_token_id
  want = np.pad(want[:, 1:], ((0, 0), (0, length - want.shape[1] + 1)))
  eos_2 = types.SimpleNamespace(eos_id=2)  # the vocabulary decides eos; LongLM's may be 2
  model = model_lib.EncoderDecoderModel(network.Transformer(config), None, eos_2,
                                        decode_fn=decoding.temperature_sample)
  batch = {"encoder_input_tokens": enc, "decoder_input_tokens": np.zeros((3, length), np.int32)}
  got = np.asarray(model.predict_batch(params, batch, decoder_params={"temperature": 0.0}))
  for g, w in zip(got, want):
    stop = list(w).index(2) + 1 if 2 in w else length
    np.testing.assert_array_equal(g[:stop], w[:stop])
  assert (want[:, :3] == 1).any()  # the model emits id 1 as a token: start id, not eos


def test_longlm_sampling_is_fixed_by_the_seed(tmp_path):
  _longlm_folder(tmp_path / "longlm", seed=4)
  config, params = hf_import.load_hf_checkpoint(tmp_path / "longlm")
  model = model_lib.EncoderDecoderModel(network.Transformer(config), None, None,
                                        decode_fn=decoding.temperature_sample,
                                        default_decoder_params={"temperature": 0.7, "topk": 40})
  enc = np.random.default_rng(5).integers(3, 100, size=(4, 10)).astype(np.int32)
  batch = {"encoder_input_tokens": enc, "decoder_input_tokens": np.zeros((4, 12), np.int32)}
  a = np.asarray(model.predict_batch(params, batch, jax.random.PRNGKey(7)))
  b = np.asarray(model.predict_batch(params, batch, jax.random.PRNGKey(7)))
  c = np.asarray(model.predict_batch(params, batch, jax.random.PRNGKey(8)))
  np.testing.assert_array_equal(a, b)
  assert not np.array_equal(a, c)
