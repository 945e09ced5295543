"""Parity of beam_search(length_penalty="hf") with transformers' beam search.

A LogitsProcessor overwrites the (random, tiny) T5's log-probs with the toy
LM's, so HF's beam search runs on exactly the distribution ours sees.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from crosstask.models import decoding
from test_models_decoding import EOS, ToyLM, _trim

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


class _ToyLogits(transformers.LogitsProcessor):
  """Returns the toy LM's log-probs for each running decoder sequence."""

  def __init__(self, lm: ToyLM, num_beams: int):
    self.lm, self.num_beams = lm, num_beams

  def __call__(self, input_ids, scores):
    rows = [self.lm.step_logprobs(r // self.num_beams, ids[1:].tolist())
            for r, ids in enumerate(input_ids)]
    return torch.tensor(np.stack(rows), dtype=scores.dtype)


def _cut(seq) -> tuple:
  """HF's output up to its first EOS (HF may pad with something else)."""
  seq = [int(x) for x in seq]
  return tuple(seq[:seq.index(EOS) + 1]) if EOS in seq else tuple(seq)


def _tiny_t5(vocab: int):
  config = transformers.T5Config(
      vocab_size=vocab, d_model=8, d_kv=4, d_ff=8, num_layers=1, num_heads=2,
      decoder_start_token_id=0, pad_token_id=0, eos_token_id=EOS)
  torch.manual_seed(0)
  return transformers.T5ForConditionalGeneration(config).eval()


# Seeds chosen so that False / True give other results than "never" (and
# "never" other than False), so HF's stopping heuristics are exercised.
@pytest.mark.parametrize("early_stopping,alpha,prefix,seed",
                         [(False, 1.0, [], 6), (True, 0.5, [], 7),
                          ("never", 1.5, [2], 3), (True, 2.0, [3], 5),
                          (False, -0.7, [], 4)])
def test_hf_beam_search_parity(early_stopping, alpha, prefix, seed):
  vocab, batch, k, length = 6, 2, 4, 8
  lm = ToyLM(vocab=vocab, batch=batch, seed=seed, scale=0.8)
  model = _tiny_t5(vocab)
  with torch.no_grad():
    out = model.generate(
        input_ids=torch.ones((batch, 2), dtype=torch.long) * 2,
        decoder_input_ids=torch.tensor([[0] + prefix] * batch),
        num_beams=k, num_return_sequences=k, do_sample=False,
        max_new_tokens=length - len(prefix), length_penalty=alpha,
        early_stopping=early_stopping, eos_token_id=EOS, pad_token_id=0,
        logits_processor=transformers.LogitsProcessorList([_ToyLogits(lm, k)]),
        output_scores=True, return_dict_in_generate=True)
  hf_seqs = out.sequences[:, 1:].numpy().reshape(batch, k, -1)
  hf_scores = out.sequences_scores.numpy().reshape(batch, k)

  prompt = jnp.asarray([prefix or [0]] * batch, jnp.int32)
  seqs, scores = decoding.beam_search(
      prompt, lm.cache(), lm.tokens_to_logits, eos_id=EOS,
      max_decode_len=length, num_decodes=k, alpha=alpha, length_penalty="hf",
      early_stopping=early_stopping)
  for b in range(batch):
    ours = [_trim(s) for s in np.asarray(seqs[b])]
    theirs = [_cut(s) for s in hf_seqs[b]]
    assert ours == theirs
  np.testing.assert_allclose(scores, hf_scores, rtol=1e-4, atol=1e-4)
