"""HF transformers T5 / mT5 <-> crosstask: import, logits, greedy, beam, export parity."""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.torch
import torch
import transformers

from crosstask.models import decoding
from crosstask.models import hf_import
from crosstask.models import model as model_lib
from crosstask.models import network

_BASE = dict(d_model=32, d_ff=64, num_heads=4, d_kv=8, num_layers=2, dropout_rate=0.0,
             relative_attention_num_buckets=8, relative_attention_max_distance=16,
             decoder_start_token_id=0, eos_token_id=1, pad_token_id=0)
KINDS = {
    # T5 1.0: relu, tied and rescaled output layer.
    "t5_1_0": (transformers.T5Config, transformers.T5ForConditionalGeneration,
               dict(vocab_size=96, feed_forward_proj="relu")),
    # T5 1.1: gated-gelu, separate lm_head, no rescale.
    "t5_1_1": (transformers.T5Config, transformers.T5ForConditionalGeneration,
               dict(vocab_size=96, feed_forward_proj="gated-gelu", tie_word_embeddings=False)),
    # mT5-shaped: gated-gelu, untied, deeper decoder, bigger vocabulary.
    "mt5": (transformers.MT5Config, transformers.MT5ForConditionalGeneration,
            dict(vocab_size=160, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                 num_decoder_layers=3)),
}


def _hf_model(kind, seed=0):
  config_cls, model_cls, extra = KINDS[kind]
  torch.manual_seed(seed)
  hf = model_cls(config_cls(**_BASE, **extra)).eval()
  if not getattr(hf.config, "scale_decoder_outputs", False):
    # transformers 5 always ties lm_head; give the model its own, as T5 1.1 checkpoints have.
    hf.lm_head = torch.nn.Linear(hf.config.d_model, hf.config.vocab_size, bias=False)
    torch.nn.init.normal_(hf.lm_head.weight, std=hf.config.d_model ** -0.5)
  return hf


def _save(hf, folder, fmt="safetensors"):
  folder.mkdir(parents=True, exist_ok=True)
  hf.config.save_pretrained(folder)
  state = {k: v.detach().clone().contiguous() for k, v in hf.state_dict().items()}
  if fmt == "bin":
    torch.save(state, folder / "pytorch_model.bin")
  else:
    safetensors.torch.save_file(state, str(folder / "model.safetensors"))
  return folder


def _inputs(vocab, batch=3, enc_len=12, dec_len=7, seed=1):
  rng = np.random.default_rng(seed)
  enc = rng.integers(2, vocab, size=(batch, enc_len))
  enc[1, 8:] = 0  # padding
  enc[2, 5:] = 0
  dec = rng.integers(2, vocab, size=(batch, dec_len))
  dec[:, 0] = 0
  return enc.astype(np.int32), dec.astype(np.int32)


def _hf_logits(hf, enc, dec):
  with torch.no_grad():
    out = hf(input_ids=torch.tensor(enc, dtype=torch.long),
             attention_mask=torch.tensor(enc != 0, dtype=torch.long),
             decoder_input_ids=torch.tensor(dec, dtype=torch.long))
  return out.logits.numpy()


@pytest.mark.parametrize("kind,fmt", [("t5_1_0", "safetensors"), ("t5_1_1", "bin"),
                                      pytest.param("mt5", "safetensors", marks=pytest.mark.slow)])
def test_logits_match_pytorch(tmp_path, kind, fmt):
  hf = _hf_model(kind)
  config, params = hf_import.load_hf_checkpoint(_save(hf, tmp_path / kind, fmt))
  assert config.logits_via_embedding == (kind == "t5_1_0")
  assert config.activations == (("relu",) if kind == "t5_1_0" else ("gelu", "linear"))
  enc, dec = _inputs(config.vocab_size)
  ours = network.Transformer(config).apply({"params": params}, enc, dec)
  np.testing.assert_allclose(np.asarray(ours), _hf_logits(hf, enc, dec), atol=1e-4, rtol=0)


def test_save_pretrained_folder_imports(tmp_path):
  hf = _hf_model("t5_1_0", seed=3)
  hf.save_pretrained(tmp_path / "hf")
  config, params = hf_import.load_hf_checkpoint(tmp_path / "hf")
  enc, dec = _inputs(config.vocab_size, seed=4)
  ours = network.Transformer(config).apply({"params": params}, enc, dec)
  np.testing.assert_allclose(np.asarray(ours), _hf_logits(hf, enc, dec), atol=1e-4, rtol=0)


def _model(config, decode_fn=decoding.temperature_sample, **decoder_params):
  return model_lib.EncoderDecoderModel(
      network.Transformer(config), None, None, decode_fn=decode_fn,
      default_decoder_params=decoder_params or None)


@pytest.mark.parametrize("kind", ["t5_1_0", pytest.param("mt5", marks=pytest.mark.slow)])
def test_greedy_matches_generate(tmp_path, kind):
  hf = _hf_model(kind, seed=5)
  config, params = hf_import.load_hf_checkpoint(_save(hf, tmp_path / kind))
  enc, _ = _inputs(config.vocab_size, seed=6)
  length = 10
  with torch.no_grad():
    want = hf.generate(input_ids=torch.tensor(enc, dtype=torch.long),
                       attention_mask=torch.tensor(enc != 0, dtype=torch.long),
                       do_sample=False, num_beams=1, max_new_tokens=length, min_length=0,
                       # HF's cache assumes num_decoder_layers == num_layers.
                       use_cache=False).numpy()[:, 1:]
  want = np.pad(want, ((0, 0), (0, length - want.shape[1])))
  batch = {"encoder_input_tokens": enc, "decoder_input_tokens": np.zeros((3, length), np.int32)}
  got = _model(config).predict_batch(params, batch)
  np.testing.assert_array_equal(np.asarray(got), want)


def test_beam_search_matches_generate(tmp_path):
  """HF-style length normalisation (n ** alpha over generated tokens) on both sides, at
  alpha 0.6 and at each side's default (transformers' length_penalty 1.0)."""
  hf = _hf_model("t5_1_1", seed=7)
  config, params = hf_import.load_hf_checkpoint(_save(hf, tmp_path / "beam"))
  enc, _ = _inputs(config.vocab_size, seed=8)
  length = 8
  for alpha in (0.6, None):
    with torch.no_grad():
      out = hf.generate(input_ids=torch.tensor(enc, dtype=torch.long),
                        attention_mask=torch.tensor(enc != 0, dtype=torch.long),
                        do_sample=False, num_beams=4, early_stopping=False,
                        max_new_tokens=length, min_length=0, return_dict_in_generate=True,
                        output_scores=True, **({} if alpha is None else {"length_penalty": alpha}))
    want = out.sequences.numpy()[:, 1:]
    want = np.pad(want, ((0, 0), (0, length - want.shape[1])))
    beam = functools.partial(decoding.beam_search, length_penalty="hf")
    tokens, aux = _model(config, beam, **({} if alpha is None else {"alpha": alpha})
                         ).predict_batch_with_aux(
        params, {"encoder_input_tokens": enc,
                 "decoder_input_tokens": np.zeros((3, length), np.int32)}, num_decodes=4)
    np.testing.assert_array_equal(np.asarray(tokens), want)
    np.testing.assert_allclose(np.asarray(aux["scores"]), out.sequences_scores.numpy(),
                               atol=1e-4)


@pytest.mark.parametrize("kind", ["t5_1_0", "t5_1_1"])
def test_export_round_trip(tmp_path, kind):
  hf = _hf_model(kind, seed=9)
  config, params = hf_import.load_hf_checkpoint(_save(hf, tmp_path / "in"))
  hf_import.save_hf_checkpoint(tmp_path / "out", config, params)
  config2, params2 = hf_import.load_hf_checkpoint(tmp_path / "out")
  assert config2 == config
  jax.tree_util.tree_map(np.testing.assert_array_equal, params2, params)
  if kind == "t5_1_0":  # transformers itself reads the export back
    hf2 = transformers.T5ForConditionalGeneration.from_pretrained(tmp_path / "out").eval()
    enc, dec = _inputs(config.vocab_size, seed=10)
    np.testing.assert_allclose(_hf_logits(hf2, enc, dec), _hf_logits(hf, enc, dec), atol=1e-5)


def test_bad_checkpoints_name_the_tensor(tmp_path):
  hf = _hf_model("t5_1_0", seed=11)
  folder = _save(hf, tmp_path / "ok")
  tensors = hf_import.read_tensors(folder)
  config = hf_import.config_from_hf(json.loads((folder / "config.json").read_text()))
  name = "encoder.block.1.layer.1.DenseReluDense.wo.weight"
  bad = dict(tensors, **{name: np.zeros((3, 3), np.float32)})
  with pytest.raises(ValueError, match=r"encoder\.block\.1\.layer\.1\.DenseReluDense\.wo.*\(3, 3\)"):
    hf_import.params_from_hf_tensors(config, bad)
  missing = {k: v for k, v in tensors.items() if k != name}
  with pytest.raises(ValueError, match="missing.*DenseReluDense.wo"):
    hf_import.params_from_hf_tensors(config, missing)
  with pytest.raises(ValueError, match="unexpected.*extra.weight"):
    hf_import.params_from_hf_tensors(config, dict(tensors, **{"extra.weight": np.zeros(2)}))
  with pytest.raises(FileNotFoundError, match="config.json"):
    hf_import.load_hf_checkpoint(tmp_path)


def test_bfloat16_safetensors_and_config_errors(tmp_path):
  hf = _hf_model("t5_1_0", seed=12)
  folder = tmp_path / "bf16"
  folder.mkdir()
  hf.config.save_pretrained(folder)
  state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in hf.state_dict().items()}
  safetensors.torch.save_file(state, str(folder / "model.safetensors"))
  _, params = hf_import.load_hf_checkpoint(folder)
  want = state["shared.weight"].float().numpy()
  np.testing.assert_array_equal(params["token_embedder"]["embedding"], want)
  with pytest.raises(ValueError, match="d_model"):
    hf_import.config_from_hf({"vocab_size": 8, "d_ff": 4, "num_heads": 1, "d_kv": 2, "num_layers": 1})
  with pytest.raises(ValueError, match="feed_forward_proj"):
    hf_import.config_from_hf({**hf.config.to_dict(), "feed_forward_proj": "a-b-c"})


@pytest.mark.parametrize("activations", [("relu",), ("gelu",), ("gelu_exact",), ("silu",),
                                         ("relu", "linear"), ("gelu", "linear"),
                                         ("gelu_exact", "linear"), ("silu", "linear")], ids=str)
def test_activation_survives_export_and_means_the_same_to_hf(activations):
  from transformers.activations import ACT2FN  # pylint: disable=g-import-not-at-top
  from crosstask.models import config as config_lib  # pylint: disable=g-import-not-at-top
  from crosstask.models import layers  # pylint: disable=g-import-not-at-top
  cfg = config_lib.TransformerConfig(vocab_size=32, d_model=8, d_ff=16, num_heads=2, d_kv=4,
                                     num_encoder_layers=1, num_decoder_layers=1,
                                     activations=activations)
  hf = hf_import.hf_config_from(cfg)
  assert hf_import.config_from_hf(hf).activations == activations
  parsed = transformers.T5Config(**hf)
  assert parsed.is_gated_act == (len(activations) == 2)
  x = np.linspace(-3, 3, 13, dtype=np.float32)
  theirs = ACT2FN[parsed.dense_act_fn](torch.from_numpy(x)).numpy()
  np.testing.assert_allclose(np.asarray(layers.activation(activations[0])(jnp.asarray(x))),
                             theirs, atol=1e-6)
