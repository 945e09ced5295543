"""min_length / no_repeat_ngram_size (HF's logits processors) in greedy and beam search:
hand cases, and exact parity with transformers' generate running the same processors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from crosstask.models import decoding
from test_models_decoding import EOS, ToyLM, _trim

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from test_models_decoding_hf import _ToyLogits  # noqa: E402  (needs transformers)


_ban = jax.jit(decoding.ban_tokens,
               static_argnames=("eos_id", "min_length", "no_repeat_ngram_size"))


def test_ban_tokens_hand_cases():
  logits = jnp.zeros((1, 8))
  history = jnp.asarray([[0, 3, 5, 7, 3, 5, 4, 4]])  # columns >= cur_len are not real yet
  banned = _ban(logits, history, 6, eos_id=EOS, no_repeat_ngram_size=3)
  assert np.flatnonzero(np.asarray(banned[0]) < 0).tolist() == [7]  # "3 5" was followed by 7
  banned = _ban(logits, history, 6, eos_id=EOS, no_repeat_ngram_size=2)
  assert np.flatnonzero(np.asarray(banned[0]) < 0).tolist() == [7]  # "5" was followed by 7
  banned = _ban(logits, history, 5, eos_id=EOS, no_repeat_ngram_size=2)
  assert np.flatnonzero(np.asarray(banned[0]) < 0).tolist() == [5]  # "3" was followed by 5
  # Too short for a complete n-gram: nothing banned.
  same = _ban(logits, history, 2, eos_id=EOS, no_repeat_ngram_size=3)
  assert np.array_equal(same, logits)
  short = _ban(logits, history, 3, eos_id=EOS, min_length=4)
  assert np.flatnonzero(np.asarray(short[0]) < 0).tolist() == [EOS]
  assert np.array_equal(_ban(logits, history, 4, eos_id=EOS, min_length=4),
                        logits)


def _hf_generate(lm, batch, prefix, length, num_beams, min_length, ngram, alpha=1.0):
  config = transformers.T5Config(
      vocab_size=lm.vocab, d_model=8, d_kv=4, d_ff=8, num_layers=1, num_heads=2,
      decoder_start_token_id=0, pad_token_id=0, eos_token_id=EOS)
  torch.manual_seed(0)
  model = transformers.T5ForConditionalGeneration(config).eval()
  # The toy LM first, then HF's own processors (generate would put them before it).
  processors = [_ToyLogits(lm, num_beams)]
  if min_length:
    processors.append(transformers.MinLengthLogitsProcessor(min_length, EOS))
  if ngram:
    processors.append(transformers.NoRepeatNGramLogitsProcessor(ngram))
  with torch.no_grad():
    out = model.generate(
        input_ids=torch.ones((batch, 2), dtype=torch.long) * 2,
        decoder_input_ids=torch.tensor([[0] + prefix] * batch),
        num_beams=num_beams, num_return_sequences=num_beams, do_sample=False,
        max_new_tokens=length - len(prefix), length_penalty=alpha, early_stopping=False,
        eos_token_id=EOS, pad_token_id=0,
        logits_processor=transformers.LogitsProcessorList(processors),
        output_scores=True, return_dict_in_generate=True)
  seqs = out.sequences[:, 1:].numpy().reshape(batch, num_beams, -1)
  scores = (out.sequences_scores.numpy().reshape(batch, num_beams) if num_beams > 1 else None)
  return seqs, scores


def _cut(seq) -> tuple:
  seq = [int(x) for x in seq]
  return tuple(seq[:seq.index(EOS) + 1]) if EOS in seq else tuple(seq)


@pytest.mark.parametrize("min_length,ngram,prefix,seed", [
    (6, 0, [], 0), (5, 2, [3], 2), (0, 3, [2, 3], 3)])
def test_greedy_parity_with_hf(min_length, ngram, prefix, seed):
  vocab, batch, length = 6, 3, 8
  lm = ToyLM(vocab=vocab, batch=batch, seed=seed, scale=0.8)
  hf_seqs, _ = _hf_generate(lm, batch, prefix, length, 1, min_length, ngram)
  prompt = jnp.asarray([prefix or [0]] * batch, jnp.int32)
  seqs, _ = decoding.greedy(prompt, lm.cache(), lm.tokens_to_logits, eos_id=EOS,
                            max_decode_len=length, min_length=min_length,
                            no_repeat_ngram_size=ngram)
  plain, _ = decoding.greedy(prompt, lm.cache(), lm.tokens_to_logits, eos_id=EOS,
                             max_decode_len=length)
  ours = [_trim(s) for s in np.asarray(seqs[:, 0])]
  assert ours == [_cut(s) for s in hf_seqs[:, 0]]
  assert ours != [_trim(s) for s in np.asarray(plain[:, 0])]  # the options changed something
  if min_length:
    assert all(len(s) >= min_length - 1 for s in ours)  # the start token counts, as in HF


@pytest.mark.parametrize("min_length,ngram,alpha,prefix,seed", [
    (0, 2, 0.8, [], 1), (5, 2, 1.0, [3], 2)])
def test_beam_search_parity_with_hf(min_length, ngram, alpha, prefix, seed):
  vocab, batch, k, length = 6, 2, 3, 8
  lm = ToyLM(vocab=vocab, batch=batch, seed=seed, scale=0.8)
  hf_seqs, hf_scores = _hf_generate(lm, batch, prefix, length, k, min_length, ngram, alpha)
  prompt = jnp.asarray([prefix or [0]] * batch, jnp.int32)
  seqs, scores = decoding.beam_search(
      prompt, lm.cache(), lm.tokens_to_logits, eos_id=EOS, max_decode_len=length,
      num_decodes=k, alpha=alpha, length_penalty="hf", early_stopping=False,
      min_length=min_length, no_repeat_ngram_size=ngram)
  for b in range(batch):
    assert [_trim(s) for s in np.asarray(seqs[b])] == [_cut(s) for s in hf_seqs[b]]
  np.testing.assert_allclose(scores, hf_scores, rtol=1e-4, atol=1e-4)
