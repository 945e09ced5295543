"""Decoding checked against brute force on a toy trigram language model."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from crosstask.models import decoding

EOS = 1
MAX_LEN = 8


class ToyLM:
  """Position-dependent trigram LM with a per-example bias held in the cache.

  The cache mixes an int [B] leaf (previous token), a float [B, V] leaf (an
  "encoder" bias per example) and a rank-0 step index, so expansion,
  beam reordering and carrying of scalar leaves are all exercised.
  """

  def __init__(self, vocab: int, batch: int, seed: int = 0, scale: float = 1.5):
    rng = np.random.RandomState(seed)
    self.vocab = vocab
    self.tri = (rng.randn(vocab, vocab, vocab) * scale).astype(np.float32)
    self.pos = (rng.randn(MAX_LEN, vocab) * 0.5).astype(np.float32)
    self.pos[2, EOS] += 2.0  # make EOS mid-sequence common
    self.enc = (rng.randn(batch, vocab) * scale).astype(np.float32)

  def cache(self):
    batch = self.enc.shape[0]
    return {"prev": jnp.zeros((batch,), jnp.int32), "enc": jnp.asarray(self.enc),
            "index": jnp.array(0, jnp.int32)}

  def tokens_to_logits(self, cur, cache):
    cur = cur[:, 0]
    logits = (jnp.asarray(self.tri)[cache["prev"], cur]
              + jnp.asarray(self.pos)[cache["index"]] + cache["enc"])
    return logits, {"prev": cur, "enc": cache["enc"], "index": cache["index"] + 1}

  def step_logprobs(self, b: int, tokens) -> np.ndarray:
    """Log-softmax at the step after `tokens` (numpy reference)."""
    t = len(tokens)
    fed = 0 if t == 0 else tokens[-1]
    prev = 0 if t <= 1 else tokens[-2]
    logits = self.tri[prev, fed] + self.pos[t] + self.enc[b]
    logits = logits.astype(np.float64)
    return logits - np.logaddexp.reduce(logits)

  def seq_logprob(self, b: int, seq, n_forced: int) -> float:
    """Log-prob of seq (up to its first EOS) excluding the forced prefix."""
    total = 0.0
    for t, tok in enumerate(seq):
      if t >= n_forced:
        total += self.step_logprobs(b, list(seq[:t]))[tok]
      if tok == EOS:
        break
    return total


def _trim(seq) -> tuple:
  """Cuts after the first EOS (the rest must be zeros)."""
  seq = [int(x) for x in seq]
  if EOS in seq:
    end = seq.index(EOS) + 1
    assert all(x == 0 for x in seq[end:]), seq
    return tuple(seq[:end])
  return tuple(seq)


def _penalty(kind, alpha, n_total, n_forced):
  if kind == "t5x":
    return ((5.0 + n_total) / 6.0) ** alpha
  return float(max(n_total - n_forced, 1)) ** alpha


def _prefix(row) -> list:
  return [int(x) for x in row if x != 0]


def _ref_greedy(lm, prompt, length):
  seqs, lps = [], []
  for b, row in enumerate(prompt):
    forced, seq, lp = _prefix(row), [], 0.0
    for t in range(length):
      logp = lm.step_logprobs(b, seq)
      tok = forced[t] if t < len(forced) else int(np.argmax(logp))
      if t >= len(forced):
        lp += logp[tok]
      seq.append(tok)
      if tok == EOS:
        break
    seqs.append(seq + [0] * (length - len(seq)))
    lps.append(lp)
  return np.array(seqs), np.array(lps)


PROMPT = np.array([[0, 0], [3, 0], [4, 2]], np.int32)  # per-row prefix lengths


def test_repeat_batch_layout_and_scalars():
  tree = {"a": jnp.arange(6).reshape(3, 2), "i": jnp.array(7)}
  out = decoding.repeat_batch(tree, 2)
  np.testing.assert_array_equal(out["a"][:, 0], [0, 0, 2, 2, 4, 4])
  assert out["i"].shape == () and int(out["i"]) == 7


def test_greedy_matches_stepwise_argmax_with_prompts_and_eos():
  lm = ToyLM(vocab=6, batch=3)
  seqs, lps = decoding.greedy(jnp.asarray(PROMPT), lm.cache(),
                              lm.tokens_to_logits, eos_id=EOS,
                              max_decode_len=6)
  ref_seqs, ref_lps = _ref_greedy(lm, PROMPT, 6)
  assert seqs.shape == (3, 1, 6) and lps.shape == (3, 1)
  np.testing.assert_array_equal(seqs[:, 0], ref_seqs)
  np.testing.assert_allclose(lps[:, 0], ref_lps, rtol=1e-5, atol=1e-5)
  # The forced prefixes are there and some row stopped at EOS with zeros after.
  np.testing.assert_array_equal(seqs[1, 0, :1], [3])
  np.testing.assert_array_equal(seqs[2, 0, :2], [4, 2])
  assert any(EOS in s[:-1] for s in np.asarray(seqs[:, 0])), seqs
  for s in np.asarray(seqs[:, 0]):
    _trim(s)


@pytest.mark.parametrize("kw", [dict(topk=1), dict(topp=1e-6),
                                dict(topk=3, topp=1e-6)])
def test_degenerate_filters_equal_greedy(kw):
  lm = ToyLM(vocab=6, batch=3)
  ref, ref_lp = decoding.greedy(jnp.asarray(PROMPT), lm.cache(),
                                lm.tokens_to_logits, eos_id=EOS,
                                max_decode_len=6)
  seqs, lps = decoding.temperature_sample(
      jnp.asarray(PROMPT), lm.cache(), lm.tokens_to_logits, eos_id=EOS,
      decode_rng=jax.random.PRNGKey(3), max_decode_len=6, num_decodes=4,
      temperature=1.3, **kw)
  assert seqs.shape == (3, 4, 6)
  np.testing.assert_array_equal(seqs, jnp.repeat(ref, 4, axis=1))
  np.testing.assert_allclose(lps, jnp.repeat(ref_lp, 4, axis=1), rtol=1e-5)


def _chi2(counts, probs):
  expected = probs * counts.sum()
  return float(np.sum((counts - expected) ** 2 / expected))


@pytest.mark.parametrize("temperature,topk,topp", [(1.0, 0, 0.0), (0.7, 3, 0.0),
                                                   (0.7, 0, 0.8), (1.5, 4, 0.9)])
def test_sampling_first_token_distribution(temperature, topk, topp):
  lm = ToyLM(vocab=6, batch=1, seed=3, scale=1.0)
  n = 4000
  seqs, lps = decoding.temperature_sample(
      jnp.zeros((1, 1), jnp.int32), lm.cache(), lm.tokens_to_logits,
      eos_id=EOS, decode_rng=jax.random.PRNGKey(0), max_decode_len=1,
      num_decodes=n, temperature=temperature, topk=topk, topp=topp)
  first = np.asarray(seqs[0, :, 0])
  logp = lm.step_logprobs(0, [])
  # Expected: softmax(logits / T), top-k, then nucleus over the survivors.
  order = np.argsort(-logp, kind="stable")
  p = np.exp(logp[order] / temperature)
  p /= p.sum()
  keep = len(p) if not topk else topk
  p = p[:keep] / p[:keep].sum()
  if topp:
    keep = int(np.sum(np.cumsum(p) - p < topp))
    p = p[:keep] / p[:keep].sum()
  kept = order[:keep]
  assert set(first.tolist()) <= set(kept.tolist())
  counts = np.array([(first == t).sum() for t in kept], np.float64)
  # 99.9% chi-square quantiles for df = 1..5.
  crit = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52}
  if keep > 1:
    assert _chi2(counts, p) < crit[keep - 1]
    # The same draws must reject a nearby wrong law (temperature 1.5 T on
    # the same tokens), so this check has power.
    q = np.exp(logp[kept] / (1.5 * temperature))
    assert _chi2(counts, q / q.sum()) > crit[keep - 1]
  # log_probs are the model's own log-probs of the drawn token.
  np.testing.assert_allclose(lps[0], logp[first], rtol=1e-5)


def test_sampling_scores_prompts_and_eos():
  lm = ToyLM(vocab=6, batch=3)
  seqs, lps = decoding.temperature_sample(
      jnp.asarray(PROMPT), lm.cache(), lm.tokens_to_logits, eos_id=EOS,
      decode_rng=jax.random.PRNGKey(5), max_decode_len=6, num_decodes=8,
      temperature=1.0)
  saw_eos = False
  for b, row in enumerate(PROMPT):
    forced = _prefix(row)
    for d in range(8):
      seq = np.asarray(seqs[b, d])
      np.testing.assert_array_equal(seq[:len(forced)], forced)
      trimmed = _trim(seq)
      saw_eos |= trimmed[-1] == EOS
      ref = lm.seq_logprob(b, trimmed, len(forced))
      np.testing.assert_allclose(float(lps[b, d]), ref, rtol=1e-5, atol=1e-5)
  assert saw_eos


def test_samples_come_best_first_and_are_the_unsorted_draws():
  # An example's samples in order of their log-probs, as beam search returns beams:
  # the model's `[:, 0]` is the best of them (before, the first drawn).
  lm = ToyLM(vocab=6, batch=3)
  draw = dict(eos_id=EOS, decode_rng=jax.random.PRNGKey(5), max_decode_len=6, temperature=1.0)
  seqs, lps = decoding.temperature_sample(jnp.asarray(PROMPT), lm.cache(), lm.tokens_to_logits,
                                          num_decodes=8, **draw)
  lps = np.asarray(lps)
  assert (np.diff(lps, axis=1) <= 0).all() and (np.diff(lps, axis=1) < 0).any()
  # The same draws: one decode of each copy, with its key, gives the same multiset.
  unsorted = {}
  flat = decoding.repeat_batch(jnp.asarray(PROMPT), 8)
  cache = decoding.repeat_batch(lm.cache(), 8)
  one, one_lps = decoding.temperature_sample(flat, cache, lm.tokens_to_logits, num_decodes=1,
                                             **draw)
  for row in range(flat.shape[0]):
    unsorted.setdefault(row // 8, []).append((float(one_lps[row, 0]), tuple(one[row, 0].tolist())))
  for b in range(3):
    got = sorted((float(l), tuple(s.tolist())) for l, s in zip(lps[b], np.asarray(seqs[b])))
    assert got == sorted(unsorted[b])


def _brute_force(lm, b, forced, vocab, length, alpha, kind):
  """All distinct outputs with their penalised scores, best first."""
  seen = {}
  free = length - len(forced)
  for tail in itertools.product(range(vocab), repeat=free):
    if EOS in tail:
      tail = tail[:tail.index(EOS) + 1]
    seq = tuple(forced) + tail
    if seq in seen:
      continue
    score = lm.seq_logprob(b, seq, len(forced))
    seen[seq] = score / _penalty(kind, alpha, len(seq), len(forced))
  return sorted(seen.items(), key=lambda kv: -kv[1])


@pytest.mark.parametrize("kind,alpha", [("t5x", 0.6), ("t5x", 2.0),
                                        ("hf", 1.0), ("hf", 0.0)])
def test_beam_search_with_many_beams_is_exhaustive(kind, alpha):
  vocab, length = 5, 3
  prompt = np.array([[0], [3]], np.int32)
  lm = ToyLM(vocab=vocab, batch=2, seed=2)
  k = 90  # >= every distinct output, and 2K >= every candidate per step
  seqs, scores = decoding.beam_search(
      jnp.asarray(prompt), lm.cache(), lm.tokens_to_logits, eos_id=EOS,
      max_decode_len=length, num_decodes=k, alpha=alpha, length_penalty=kind,
      early_stopping="never" if kind == "hf" else None)
  assert seqs.shape == (2, k, length) and scores.shape == (2, k)
  for b in range(2):
    ref = _brute_force(lm, b, _prefix(prompt[b]), vocab, length, alpha, kind)
    n = len(ref)
    got = [_trim(s) for s in np.asarray(seqs[b, :n])]
    assert got == [s for s, _ in ref]
    np.testing.assert_allclose(scores[b, :n], [v for _, v in ref], rtol=1e-5,
                               atol=1e-5)
    assert np.all(np.asarray(scores[b, n:]) < -1e6)  # unused slots


@pytest.mark.parametrize("kind,early", [("t5x", None), ("hf", False),
                                        ("hf", True), ("hf", "never")])
def test_small_beam_scores_are_consistent(kind, early):
  lm = ToyLM(vocab=6, batch=3)
  seqs, scores = decoding.beam_search(
      jnp.asarray(PROMPT), lm.cache(), lm.tokens_to_logits, eos_id=EOS,
      max_decode_len=6, num_decodes=3, alpha=0.8, length_penalty=kind,
      early_stopping=early)
  scores = np.asarray(scores)
  assert np.all(np.diff(scores, axis=1) <= 1e-6)  # best first
  for b, row in enumerate(PROMPT):
    forced = _prefix(row)
    outs = [_trim(s) for s in np.asarray(seqs[b])]
    assert len(set(outs)) == 3
    for seq, score in zip(outs, scores[b]):
      assert list(seq[:len(forced)]) == forced
      ref = lm.seq_logprob(b, seq, len(forced))
      ref /= _penalty(kind, 0.8, len(seq), len(forced))
      np.testing.assert_allclose(score, ref, rtol=1e-5, atol=1e-5)


def test_works_under_jit():
  lm = ToyLM(vocab=6, batch=3)

  @jax.jit
  def predict(prompt, cache, rng):
    sample = decoding.temperature_sample(
        prompt, cache, lm.tokens_to_logits, eos_id=EOS, decode_rng=rng,
        max_decode_len=6, num_decodes=2, temperature=0.7, topk=4, topp=0.9)
    beams = decoding.beam_search(prompt, cache, lm.tokens_to_logits,
                                 eos_id=EOS, max_decode_len=6, num_decodes=3)
    return sample, beams

  args = (jnp.asarray(PROMPT), lm.cache(), jax.random.PRNGKey(1))
  (s_seq, s_lp), (b_seq, b_sc) = predict(*args)
  s_ref, s_lp_ref = decoding.temperature_sample(
      args[0], args[1], lm.tokens_to_logits, eos_id=EOS, decode_rng=args[2],
      max_decode_len=6, num_decodes=2, temperature=0.7, topk=4, topp=0.9)
  b_ref, b_sc_ref = decoding.beam_search(
      args[0], args[1], lm.tokens_to_logits, eos_id=EOS, max_decode_len=6,
      num_decodes=3)
  np.testing.assert_array_equal(s_seq, s_ref)
  np.testing.assert_allclose(s_lp, s_lp_ref, rtol=1e-5)
  np.testing.assert_array_equal(b_seq, b_ref)
  np.testing.assert_allclose(b_sc, b_sc_ref, rtol=1e-5)


@pytest.mark.parametrize("shape,k", [((3, 32128), 8), ((2, 4, 5000), 3), ((5, 4 * 32128), 1),
                                     ((4, 4096), 8)])
def test_top_k_equals_lax_top_k_with_ties_and_infinities(shape, k):
  # Coarse values make many exact ties, across and inside blocks; -inf entries and
  # the last, partial block exercise the padding.
  rng = np.random.default_rng(sum(shape) + k)
  x = rng.integers(-6, 7, shape).astype(np.float32)
  x[..., rng.integers(0, shape[-1], 50)] = -np.inf
  x[..., -3:] = 6.0  # maxima in the padded last block, behind earlier equal ones
  got = jax.jit(decoding.top_k, static_argnums=1)(jnp.asarray(x), k)
  want = jax.lax.top_k(jnp.asarray(x), k)
  np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
  np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
  # Distinct random values too; ties resolve to the lower index on both sides.
  y = jnp.asarray(rng.standard_normal(shape).astype(np.float32))
  for a, b in zip(decoding.top_k(y, k), jax.lax.top_k(y, k)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_top_k_lower_index_first_among_equal_maxima():
  x = jnp.zeros((1, 40000), jnp.float32).at[0, jnp.array([39999, 17, 20000, 5])].set(1.0)
  values, idx = decoding.top_k(x, 3)
  assert idx.tolist() == [[5, 17, 20000]] and values.tolist() == [[1.0, 1.0, 1.0]]
  assert decoding.top_k(x, 1)[1].tolist() == [[5]]  # greedy's argmax: the first maximum
  # Equal values in blocks of different maxima: the lower index still comes first.
  y = jnp.zeros((1, 40000), jnp.float32).at[0, jnp.array([640, 641, 0, 1])].set(
      jnp.array([9.0, 3.0, 8.0, 3.0]))
  assert decoding.top_k(y, 4)[1].tolist() == [[640, 0, 1, 641]]


def test_top_k_with_nan_gives_lax_top_k_answer():
  # A broken row (NaN logits) must look the same as with lax.top_k, never a quiet token.
  x = np.random.default_rng(3).standard_normal((2, 40000)).astype(np.float32)
  x[1, 777] = np.nan
  x[0, 123] = -np.nan
  for k in (1, 4):
    got, want = decoding.top_k(jnp.asarray(x), k), jax.lax.top_k(jnp.asarray(x), k)
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))


def _coarse_logits(rng, shape):
  """Few distinct values (many exact ties within and across blocks and beams) and -inf."""
  x = rng.integers(-4, 5, shape).astype(np.float32) * 0.5
  x[..., rng.integers(0, shape[-1], 40)] = -np.inf
  return x


@pytest.mark.parametrize("vocab", [32128, 4096])
def test_beam_continuations_equal_top_k_of_written_log_probs(vocab):
  # The per-step candidates from block maxima must be exactly lax.top_k over the
  # [B, K*V] scores the dense path writes: values, parent beams, tokens, tie order.
  rng = np.random.default_rng(vocab)
  batch, k = 5, 4
  alive = rng.integers(-3, 1, (batch, k)).astype(np.float32)
  alive[1, 1:] = decoding.NEG_INF  # dead beams, as at the first step
  forced = jnp.asarray([0, 0, 7, 0, vocab - 1], jnp.int32)

  def written_log_probs(lg):  # log_softmax with the block summary's sum (its bits)
    _, _, shift, sum_exp = decoding._block_summary(lg)
    return (lg - shift[..., None]) - jnp.log(sum_exp)[..., None]

  dense = jax.jit(lambda lg, a, f: decoding._dense_continuations(
      written_log_probs(lg), a, f, 2 * k))
  blocked = jax.jit(lambda lg, a, f: decoding._beam_continuations(lg, a, f, 2 * k))
  for logits in (_coarse_logits(rng, (batch, k, vocab)),
                 rng.standard_normal((batch, k, vocab)).astype(np.float32) * 3):
    args = (jnp.asarray(logits), jnp.asarray(alive), forced)
    for got, want in zip(blocked(*args), dense(*args)):
      np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_allclose(written_log_probs(args[0]),
                               jax.nn.log_softmax(args[0], axis=-1), rtol=1e-6)


def test_beam_continuations_fall_back_on_nan_and_infinite_logits():
  rng = np.random.default_rng(1)
  logits = rng.standard_normal((3, 2, 4096)).astype(np.float32)
  logits[0, 1, 100] = np.nan
  logits[2, 0, 5] = np.inf
  args = (jnp.asarray(logits), jnp.zeros((3, 2), jnp.float32), jnp.zeros((3,), jnp.int32))
  got = decoding._beam_continuations(*args, 4)
  want = decoding._dense_continuations(jax.nn.log_softmax(args[0], axis=-1), *args[1:], 4)
  for a, b in zip(got, want):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_greedy_choice_is_first_argmax_and_its_log_softmax():
  rng = np.random.default_rng(2)
  x = _coarse_logits(rng, (6, 32128))
  x[1] = -np.inf  # all -inf: token 0, like lax.top_k
  x[2, 40000 % 32128] = np.inf
  x[3, 999] = np.nan
  x[4, [5, 64, 31999]] = 9.0  # equal maxima in different blocks: the first wins
  tok, tok_lp = jax.jit(decoding._greedy_choice)(jnp.asarray(x))
  want = jax.lax.top_k(jnp.asarray(x), 1)[1][:, 0]
  np.testing.assert_array_equal(np.asarray(tok), np.asarray(want))
  assert int(tok[4]) == 5
  ref = np.asarray(jnp.take_along_axis(jnp.asarray(x), want[:, None], axis=-1)[:, 0]
                   - jax.nn.logsumexp(jnp.asarray(x), axis=-1))
  np.testing.assert_allclose(np.asarray(tok_lp), ref, rtol=1e-6)


def test_decoding_with_block_maxima_equals_the_dense_path(monkeypatch):
  # Whole searches on a vocabulary the block path takes (prefixes, EOS, dead beams)
  # against the same searches with the [B, K, V] log-probs written out.
  lm = ToyLM(vocab=128, batch=3, seed=4, scale=2.0)
  prompt = jnp.asarray(PROMPT)

  def run():
    beams = decoding.beam_search(prompt, lm.cache(), lm.tokens_to_logits, eos_id=EOS,
                                 max_decode_len=MAX_LEN, num_decodes=4, alpha=0.6)
    greedy = decoding.greedy(prompt, lm.cache(), lm.tokens_to_logits, eos_id=EOS,
                             max_decode_len=MAX_LEN)
    return [np.asarray(a) for a in beams + greedy]

  fast = run()
  monkeypatch.setattr(decoding, "_beam_continuations", lambda lg, a, f, n: (
      decoding._dense_continuations(jax.nn.log_softmax(lg, axis=-1), a, f, n)))
  monkeypatch.setattr(decoding, "_greedy_choice", lambda lg: (
      decoding.top_k(lg, 1)[1][:, 0].astype(jnp.int32),
      jnp.take_along_axis(lg, decoding.top_k(lg, 1)[1], axis=-1)[:, 0]
      - jax.nn.logsumexp(lg, axis=-1)))
  dense = run()
  assert (fast[0] != 0).sum() > 20  # real sequences, not all EOS at once
  for i, (a, b) in enumerate(zip(fast, dense)):
    if i % 2 == 0:  # sequences
      np.testing.assert_array_equal(a, b)
    else:  # scores: the log-sum is added up in another order (last bits)
      np.testing.assert_allclose(a, b, rtol=1e-6)
