"""Model-agnostic autoregressive decoding (sampling, greedy, beam search).

Pure jax/numpy so that `crosstask.models` imports without TensorFlow or SeqIO.

Conventions shared by every method:

* `prompt` is int32 [B, P], P <= max_decode_len, right-padded with 0. The
  nonzero tokens of row b are forced as that row's first outputs (a decoder
  prefix); an all-zero row has no prefix. Forced tokens appear in the output
  but their probabilities are not part of the returned scores.
* Decoding feeds the decoder start token 0 first. Output sequences contain the
  EOS token when generated and 0 after it; a row that reaches max_decode_len
  without EOS is returned as is.
* `tokens_to_logits(cur_token int32 [B', 1], cache) -> (logits [B', V], cache)`
  with B' = B * num_decodes. Copies of example b are rows
  b * num_decodes ... b * num_decodes + num_decodes - 1 (`repeat_batch`), so
  callers must repeat encoder outputs and masks with `repeat_batch` too.
* The cache is any pytree with batch B (not expanded). Leaves of rank >= 1
  have the batch as leading axis and are expanded / reordered here; rank-0
  leaves (e.g. a step index) are carried through unchanged.
* Loops are `jax.lax.while_loop`s that stop once every row is finished. All
  arguments other than `prompt`, `cache` and `decode_rng` are Python values
  that shape the computation: jit the caller's whole predict function (with
  `tokens_to_logits` closed over) or mark them static.
"""

from typing import Any, Callable, Optional, Tuple, Union

import flax.struct
import jax
import jax.numpy as jnp

PyTree = Any
TokensToLogits = Callable[[jnp.ndarray, PyTree], Tuple[jnp.ndarray, PyTree]]

# Large finite negative: keeps sums of dead-beam scores free of inf - inf = nan.
NEG_INF = -1.0e9


def repeat_batch(x: PyTree, n: int) -> PyTree:
  """Repeats every rank >= 1 leaf n times along axis 0 (b -> b*n ... b*n+n-1)."""
  def rep(leaf):
    leaf = jnp.asarray(leaf)
    return leaf if leaf.ndim == 0 else jnp.repeat(leaf, n, axis=0)
  return jax.tree_util.tree_map(rep, x)


def _gather_batch(x: PyTree, flat_idx: jnp.ndarray) -> PyTree:
  """Reorders rank >= 1 leaves along the flattened batch; rank-0 leaves pass."""
  return jax.tree_util.tree_map(
      lambda leaf: leaf if leaf.ndim == 0 else jnp.take(leaf, flat_idx, axis=0),
      x)


def _pad_prompt(prompt: jnp.ndarray, max_decode_len: int) -> jnp.ndarray:
  """Right-pads the prompt to max_decode_len so step i can index column i."""
  prompt = jnp.asarray(prompt, jnp.int32)
  p = prompt.shape[1]
  if p > max_decode_len:
    raise ValueError(f"prompt length {p} > max_decode_len {max_decode_len}")
  return jnp.pad(prompt, ((0, 0), (0, max_decode_len - p)))


# ------------------------------------------------------------ top k, fast

# Values per block in `top_k`'s first pass.
_TOP_K_BLOCK = 128


def top_k(x: jnp.ndarray, k: int) -> Tuple[jnp.ndarray, jnp.ndarray]:
  """`jax.lax.top_k` over the last axis, same values, indices and tie order, faster on wide rows.

  XLA:CPU's TopK walks a row one element at a time, a sizeable share of each
  step for beam search's top 2K of K x vocab candidates (millions of values at
  batch 32, beam 4) and for greedy's argmax. Here the row is cut into blocks and
  only block maxima are compared first: the k blocks with the largest maxima hold
  the top k values (a value outside them is outranked by k block maxima), so
  lax.top_k runs over those k blocks alone. They are taken in index order, so
  equal values still come out lower index first, as lax.top_k orders them.
  A NaN anywhere sends the whole call to lax.top_k (whose order ranks NaN; a
  block maximum would not). One difference is left: +0 and -0 count as equal
  here, where lax.top_k puts +0 first.
  """
  n = x.shape[-1]
  if not jnp.issubdtype(x.dtype, jnp.floating) or n < 4 * k * _TOP_K_BLOCK:
    return jax.lax.top_k(x, k)
  return jax.lax.cond(jnp.isnan(x).any(), lambda v: tuple(jax.lax.top_k(v, k)),
                      lambda v: _top_k_by_blocks(v, k), x)


def _top_k_by_blocks(x: jnp.ndarray, k: int) -> Tuple[jnp.ndarray, jnp.ndarray]:
  n = x.shape[-1]
  pad = -n % _TOP_K_BLOCK  # -inf after the last value: ranks below every real value
  if pad:
    x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)], constant_values=-jnp.inf)
  blocks = x.reshape(x.shape[:-1] + (-1, _TOP_K_BLOCK))
  _, chosen = jax.lax.top_k(jnp.max(blocks, axis=-1), k)
  chosen = jnp.sort(chosen, axis=-1)
  candidates = jnp.take_along_axis(blocks, chosen[..., None], axis=-2)
  values, pos = jax.lax.top_k(candidates.reshape(x.shape[:-1] + (k * _TOP_K_BLOCK,)), k)
  block = jnp.take_along_axis(chosen, pos // _TOP_K_BLOCK, axis=-1)
  return values, block * _TOP_K_BLOCK + pos % _TOP_K_BLOCK


# ------------------------------------- per-step log-softmax, from block maxima

# Values per block in the step summaries below. XLA:CPU rewrites a wider
# reduction as a reduce-window plus a reduce, and the exp before it then no
# longer fuses: it writes the whole [rows, V] array out and reads it back.
_LOGITS_BLOCK = 32


def _block_summary(logits: jnp.ndarray):
  """Block maxima, shift and sum of exponentials of [..., V] logits, in two reads.

  Returns (blocks [..., V/32, 32], block_max [..., V/32], shift [...], sum_exp
  [...]): shift is the row maximum where that is finite and 0 elsewhere
  (jax.nn.logsumexp's shift, and log_softmax's for a finite maximum), and
  sum_exp = sum(exp(logits - shift)). The barriers keep XLA from merging the
  two levels of each reduction back into one. A NaN logit makes its row's
  sum_exp NaN, whatever the backend's max does with NaN: callers test that.
  """
  blocks = logits.reshape(logits.shape[:-1] + (-1, _LOGITS_BLOCK))
  block_max = jax.lax.optimization_barrier(jnp.max(blocks, axis=-1))
  row_max = jax.lax.stop_gradient(jnp.max(block_max, axis=-1))
  shift = jnp.where(jnp.isfinite(row_max), row_max, 0.0)
  partial = jnp.sum(jnp.exp(blocks - shift[..., None, None]), axis=-1)
  sum_exp = jnp.sum(jax.lax.optimization_barrier(partial), axis=-1)
  return blocks, block_max, shift, sum_exp


def _summarisable(logits: jnp.ndarray) -> bool:
  """Whether `_block_summary` applies: float logits, whole blocks, at least four of them."""
  return (logits.shape[-1] % _LOGITS_BLOCK == 0
          and logits.shape[-1] >= 4 * _LOGITS_BLOCK
          and jnp.issubdtype(logits.dtype, jnp.floating))


def _token_log_prob(logits: jnp.ndarray, tok: jnp.ndarray) -> jnp.ndarray:
  """log_softmax(logits)[n, tok[n]] for [N, V] logits, without writing [N, V] log-probs."""
  return (jnp.take_along_axis(logits, tok[:, None], axis=-1)[:, 0]
          - jax.nn.logsumexp(logits, axis=-1))


def _greedy_choice(logits: jnp.ndarray) -> Tuple[jnp.ndarray, jnp.ndarray]:
  """(argmax, its log-softmax) per row of [N, V] float32 logits, never writing [N, V].

  The same token as lax.top_k(logits, 1) (first of equal maxima: the first
  block whose maximum is the row's, then the first such value in it) and the
  value logits[tok] - jax.nn.logsumexp(logits). A NaN sends the row set to
  lax.top_k, as `top_k` does.
  """
  if not _summarisable(logits):
    tok = top_k(logits, 1)[1][:, 0].astype(jnp.int32)
    return tok, _token_log_prob(logits, tok)
  blocks, block_max, shift, sum_exp = _block_summary(logits)
  lse = jnp.log(sum_exp) + shift

  def by_blocks(_):
    block = jax.lax.top_k(block_max, 1)[1]  # [N, 1]
    chosen = jnp.take_along_axis(blocks, block[:, :, None], axis=1)[:, 0]
    pos = jax.lax.top_k(chosen, 1)[1][:, 0]
    return block[:, 0] * _LOGITS_BLOCK + pos

  tok = jax.lax.cond(jnp.isnan(sum_exp).any(),
                     lambda x: jax.lax.top_k(x, 1)[1][:, 0], by_blocks, logits).astype(jnp.int32)
  return tok, jnp.take_along_axis(logits, tok[:, None], axis=-1)[:, 0] - lse


def _beam_continuations(logits: jnp.ndarray, alive_lp: jnp.ndarray, forced: jnp.ndarray,
                        n: int) -> Tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
  """The n best continuations of all beams: (scores [B, n], parent beam, token).

  logits float32 [B, K, V], alive_lp [B, K], forced int32 [B] (0: none). What
  lax.top_k gives over the flattened [B, K * V] scores alive_lp +
  log_softmax(logits), a forced row scoring 0 at its token and NEG_INF
  elsewhere (`_dense_continuations`), without writing those scores: a score is
  a non-decreasing function of its logit within a beam row, so the block
  maxima of the scores are that function of the logits' block maxima, and the
  n blocks with the best maxima hold the n best scores (`top_k`'s argument, at
  32 values a block). Values, order and ties are lax.top_k's over scores whose
  log-sum is added up block by block; jax.nn.log_softmax's can differ from it
  in the last bit. Any NaN score falls back to the dense path; an infinite
  logit makes its row's scores NaN here as it does there.
  """
  if not _summarisable(logits):
    return _dense_continuations(jax.nn.log_softmax(logits, axis=-1), alive_lp, forced, n)
  batch, k, vocab = logits.shape
  blocks, block_max, shift, sum_exp = _block_summary(logits)
  log_sum = jnp.log(sum_exp)
  is_forced = (forced != 0)[:, None, None]

  def scores(lg, beam_shift, beam_log_sum, beam_lp):  # alive_lp + log_softmax, as dense
    return beam_lp[..., None] + ((lg - beam_shift[..., None]) - beam_log_sum[..., None])

  nb = vocab // _LOGITS_BLOCK
  in_forced_block = jnp.arange(nb)[None, None, :] == (forced // _LOGITS_BLOCK)[:, None, None]
  forced_block = jnp.where(in_forced_block, 0.0, NEG_INF)
  best_in_block = jnp.where(is_forced, alive_lp[..., None] + forced_block,
                            scores(block_max, shift, log_sum, alive_lp))  # [B, K, nb]

  def by_blocks(_):
    _, chosen = jax.lax.top_k(best_in_block.reshape(batch, k * nb), n)
    chosen = jnp.sort(chosen, axis=-1)  # index order keeps lax.top_k's tie order
    beam, block = chosen // nb, chosen % nb
    values = blocks[jnp.arange(batch)[:, None], beam, block]  # [B, n, 32]
    token = block[..., None] * _LOGITS_BLOCK + jnp.arange(_LOGITS_BLOCK)
    per_beam = [jnp.take_along_axis(t, beam, axis=1) for t in (shift, log_sum, alive_lp)]
    cand = jnp.where(is_forced,
                     per_beam[2][..., None] + jnp.where(token == forced[:, None, None], 0.0,
                                                        NEG_INF),
                     scores(values, *per_beam))
    top, pos = jax.lax.top_k(cand.reshape(batch, n * _LOGITS_BLOCK), n)
    return (top, jnp.take_along_axis(beam, pos // _LOGITS_BLOCK, axis=1),
            jnp.take_along_axis(token.reshape(batch, -1), pos, axis=1).astype(jnp.int32))

  def dense(lg):
    return _dense_continuations(jax.nn.log_softmax(lg, axis=-1), alive_lp, forced, n)

  return jax.lax.cond(jnp.isnan(best_in_block).any(), dense, by_blocks, logits)


def _dense_continuations(lp: jnp.ndarray, alive_lp: jnp.ndarray, forced: jnp.ndarray,
                         n: int) -> Tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
  """`_beam_continuations` from the written [B, K, V] log-probs (after any bans)."""
  batch, k, vocab = lp.shape
  one_hot = jnp.where(jnp.arange(vocab)[None, None, :] == forced[:, None, None], 0.0, NEG_INF)
  lp = jnp.where((forced != 0)[:, None, None], one_hot, lp)
  top_lp, top_idx = top_k((alive_lp[:, :, None] + lp).reshape(batch, k * vocab), n)
  return top_lp, top_idx // vocab, (top_idx % vocab).astype(jnp.int32)


# ------------------------------------------------- logits processing (HF's)


def ban_tokens(logits: jnp.ndarray, history: jnp.ndarray, cur_len, *, eos_id: int,
               min_length: int = 0, no_repeat_ngram_size: int = 0) -> jnp.ndarray:
  """HF's MinLength and NoRepeatNGram logits processors on [N, V] scores.

  `history` int32 [N, T] holds each row's decoder tokens with the start token
  0 in column 0 (HF's decoder `input_ids`); only its first `cur_len` columns
  are real. As in HF, both rules count the start token and any forced prefix:
  EOS is banned while cur_len < min_length, and a token is banned when it
  would repeat an n-gram already in the history. Banned entries become
  NEG_INF. With both options 0 the scores are returned untouched.
  """
  if min_length > 0:
    is_eos = jnp.arange(logits.shape[-1]) == eos_id
    logits = jnp.where(is_eos[None, :] & (cur_len < min_length), NEG_INF, logits)
  n = no_repeat_ngram_size
  rows, width = history.shape
  if n > 0 and width >= n:
    windows = jnp.stack([history[:, m:m + width - n + 1] for m in range(n)], axis=-1)
    prefix = jax.lax.dynamic_slice_in_dim(
        history, jnp.maximum(cur_len - (n - 1), 0), n - 1, axis=1)
    complete = jnp.arange(width - n + 1)[None, :] <= cur_len - n  # window inside the history
    match = jnp.all(windows[..., :-1] == prefix[:, None, :], axis=-1) & complete
    vocab = logits.shape[-1]
    # Non-matching windows write to a spare column past the vocabulary.
    target = jnp.where(match, jnp.minimum(windows[..., -1], vocab), vocab)
    banned = jnp.zeros((rows, vocab + 1), bool).at[
        jnp.arange(rows)[:, None], target].set(True)[:, :vocab]
    logits = jnp.where(banned, NEG_INF, logits)
  return logits


# ----------------------------------------------------------------- sampling


@flax.struct.dataclass
class SamplingState:
  """`temperature_sample`'s (and so `greedy`'s) loop carry; rows are B * num_decodes."""
  step: jnp.ndarray  # int32 scalar: the output column written next
  token: jnp.ndarray  # int32 [rows]: last token written, fed to the decoder next
  sequences: jnp.ndarray  # int32 [rows, max_decode_len]
  log_probs: jnp.ndarray  # float32 [rows]: summed over generated, non-forced tokens
  ended: jnp.ndarray  # bool [rows]: EOS written
  cache: PyTree  # decoder cache, batch rows


def _filtered_sample(key: jax.Array, logits: jnp.ndarray, temperature: float,
                     topk: int, topp: float) -> jnp.ndarray:
  """Draws one token per row from softmax(logits / T) after top-k then top-p."""
  logits = logits / temperature
  vocab = logits.shape[-1]
  topp = topp if topp < 1.0 else 0.0  # p >= 1 keeps everything
  if not topk and not topp:
    return jax.random.categorical(key, logits).astype(jnp.int32)
  k = topk if 0 < topk < vocab else vocab
  vals, idx = top_k(logits, k)  # sorted descending
  if topp:
    # Nucleus over the (renormalised) top-k distribution, as HF chains warpers:
    # keep the smallest prefix whose mass reaches topp; the best always stays.
    probs = jax.nn.softmax(vals, axis=-1)
    mass_before = jnp.cumsum(probs, axis=-1) - probs
    vals = jnp.where(mass_before < topp, vals, -jnp.inf)
  choice = jax.random.categorical(key, vals)
  return jnp.take_along_axis(idx, choice[:, None], axis=-1)[:, 0].astype(
      jnp.int32)


def temperature_sample(
    prompt: jnp.ndarray,
    cache: PyTree,
    tokens_to_logits: TokensToLogits,
    *,
    eos_id: int,
    decode_rng: Optional[jax.Array],
    max_decode_len: int,
    num_decodes: int = 1,
    temperature: float = 1.0,
    topk: int = 0,
    topp: float = 0.0,
    min_length: int = 0,
    no_repeat_ngram_size: int = 0,
) -> Tuple[jnp.ndarray, jnp.ndarray]:
  """Samples num_decodes continuations per example (temperature 0 = greedy).

  Returns (sequences int32 [B, num_decodes, max_decode_len], log_probs float32
  [B, num_decodes]), each example's samples best first. log_probs sums the model's
  own log-softmax (before temperature and filtering) over the generated, non-forced
  tokens, so it is comparable across sampling settings (T5X's, by default, is of the
  rescaled and filtered distribution: 0 for a greedy decode). Filtering applies top-k first, then
  top-p (nucleus) on the renormalised survivors. `min_length` and
  `no_repeat_ngram_size` ban tokens first, exactly as HF's processors
  (`ban_tokens`).
  """
  if temperature < 0:
    raise ValueError(f"temperature must be >= 0, got {temperature!r}")
  batch = prompt.shape[0]
  flat = batch * num_decodes
  forced_all = repeat_batch(_pad_prompt(prompt, max_decode_len), num_decodes)
  if decode_rng is None:
    decode_rng = jax.random.PRNGKey(0)

  def cond(state: SamplingState):
    return (state.step < max_decode_len) & ~jnp.all(state.ended)

  def body(state: SamplingState) -> SamplingState:
    i, seqs, lps, ended = state.step, state.sequences, state.log_probs, state.ended
    logits, c = tokens_to_logits(state.token[:, None], state.cache)
    logits = logits.astype(jnp.float32)
    allowed = logits
    if min_length or no_repeat_ngram_size:
      history = jnp.pad(seqs, ((0, 0), (1, 0)))  # the start token 0 first, as HF
      allowed = ban_tokens(logits, history, i + 1, eos_id=eos_id, min_length=min_length,
                           no_repeat_ngram_size=no_repeat_ngram_size)
    forced = forced_all[:, i]
    is_forced = forced != 0
    if temperature == 0.0 and not (min_length or no_repeat_ngram_size):
      tok, tok_lp = _greedy_choice(logits)  # tok_lp of a forced row is not counted below
      tok = jnp.where(is_forced, forced, tok)
    else:
      if temperature == 0.0:
        tok = top_k(allowed, 1)[1][:, 0].astype(jnp.int32)  # argmax: first of equal maxima
      else:
        key = jax.random.fold_in(decode_rng, i)
        tok = _filtered_sample(key, allowed, temperature, topk, topp)
      tok = jnp.where(is_forced, forced, tok)
      tok_lp = _token_log_prob(logits, tok)
    lps = lps + jnp.where(is_forced | ended, 0.0, tok_lp)
    tok = jnp.where(ended, 0, tok)
    seqs = jax.lax.dynamic_update_slice_in_dim(seqs, tok[:, None], i, axis=1)
    return SamplingState(step=i + 1, token=tok, sequences=seqs, log_probs=lps,
                         ended=ended | (tok == eos_id), cache=c)

  init = SamplingState(step=jnp.array(0, jnp.int32), token=jnp.zeros((flat,), jnp.int32),
                       sequences=jnp.zeros((flat, max_decode_len), jnp.int32),
                       log_probs=jnp.zeros((flat,), jnp.float32),
                       ended=jnp.zeros((flat,), bool), cache=repeat_batch(cache, num_decodes))
  final = jax.lax.while_loop(cond, body, init)
  seqs = final.sequences.reshape(batch, num_decodes, max_decode_len)
  lps = final.log_probs.reshape(batch, num_decodes)
  if num_decodes > 1:  # Best first, as beam search returns them (T5X sorts its samples too).
    order = jnp.argsort(-lps, axis=1, stable=True)
    seqs = jnp.take_along_axis(seqs, order[:, :, None], axis=1)
    lps = jnp.take_along_axis(lps, order, axis=1)
  return seqs, lps


# The decoder_params a model starts from when its config gives none (the decoding
# function's declaration, read by `EncoderDecoderModel`): temperature 0, so a model
# decodes greedily unless its config asks it to sample. T5X's models default to a
# one-beam `beam_search` (alpha 0.6), which can end a row on an EOS that greedy ranks
# second: `beam_search.gin` (its beam is the job's `num_decodes`, 1 unless set) decodes
# so, up to how a row that reaches the length limit is scored (`beam_search`). T5X's
# `temperature_sample` defaults to topk=1 (greedy at any temperature); topk 0 here
# samples the whole distribution.
temperature_sample.model_defaults = {"temperature": 0.0}


def greedy(prompt: jnp.ndarray, cache: PyTree,
           tokens_to_logits: TokensToLogits, *, eos_id: int,
           max_decode_len: int, min_length: int = 0,
           no_repeat_ngram_size: int = 0) -> Tuple[jnp.ndarray, jnp.ndarray]:
  """Argmax decoding; returns ([B, 1, max_decode_len], [B, 1])."""
  return temperature_sample(prompt, cache, tokens_to_logits, eos_id=eos_id,
                            decode_rng=None, max_decode_len=max_decode_len,
                            num_decodes=1, temperature=0.0, min_length=min_length,
                            no_repeat_ngram_size=no_repeat_ngram_size)


# -------------------------------------------------------------- beam search


def t5x_brevity_penalty(alpha: float, length):
  """T5X / GNMT divisor ((5 + length) / 6) ** alpha."""
  return ((5.0 + length) / 6.0) ** alpha


def hf_length_penalty(alpha: float, length):
  """Hugging Face divisor length ** alpha (length = generated tokens)."""
  return jnp.asarray(length, jnp.float32) ** alpha


@flax.struct.dataclass
class BeamState:
  """`beam_search`'s loop carry. Sequences keep the start token 0 in column 0."""
  step: jnp.ndarray  # int32 scalar: position of the token fed to the decoder
  alive_seqs: jnp.ndarray  # int32 [B, K, L + 1]
  alive_log_probs: jnp.ndarray  # float32 [B, K], NEG_INF for dead beams
  finished_seqs: jnp.ndarray  # int32 [B, K, L + 1], best first
  finished_scores: jnp.ndarray  # float32 [B, K]: length-penalised, NEG_INF when empty
  finished_flags: jnp.ndarray  # bool [B, K]: slot holds a finished hypothesis
  open: jnp.ndarray  # bool [B]: an alive beam can still beat the finished pool
  cache: PyTree  # decoder cache, B * K rows


def _take_beams(x: jnp.ndarray, idx: jnp.ndarray) -> jnp.ndarray:
  """x [B, N, ...] indexed by idx [B, M] along axis 1 -> [B, M, ...]."""
  idx = idx.reshape(idx.shape + (1,) * (x.ndim - 2))
  return jnp.take_along_axis(x, idx, axis=1)


def beam_search(
    prompt: jnp.ndarray,
    cache: PyTree,
    tokens_to_logits: TokensToLogits,
    *,
    eos_id: int,
    max_decode_len: int,
    num_decodes: int = 4,
    alpha: Optional[float] = None,
    length_penalty: str = "t5x",
    early_stopping: Union[None, bool, str] = None,
    min_length: int = 0,
    no_repeat_ngram_size: int = 0,
    reorder_cache: Optional[Callable[[PyTree, jnp.ndarray], PyTree]] = None,
) -> Tuple[jnp.ndarray, jnp.ndarray]:
  """Beam search; returns (sequences [B, K, L] best first, scores [B, K]).

  Scores are length-penalised sums of log-probs of the non-forced tokens.

  `alpha` None is each mode's reference default: 0.6 (T5X), 1.0 (transformers).

  length_penalty="t5x": score = logprob / ((5 + n) / 6) ** alpha with n the
  full output length (forced prefix and EOS included). As in T5X every EOS
  candidate among the top 2K joins a top-K finished pool, and search stops for
  an example once its best alive beam, even at its most favourable length,
  cannot beat its worst finished one (an exact bound for any alpha). Unlike
  T5X, beams still alive at max_decode_len compete with the finished pool
  (T5X only falls back to them when nothing finished), so a large enough K
  equals exhaustive search.

  length_penalty="hf": mirrors transformers' `_beam_search` with
  `length_penalty=alpha`: score = logprob / n ** alpha with n the generated
  length excluding the forced prefix (HF's decoder_prompt_len); only EOS
  candidates ranked within the top K of the 2K candidates can finish; at the
  last step the top-K candidates finish regardless of EOS; `early_stopping`
  is HF's (False: heuristic bound at the current length, the HF default;
  True: additionally stop once K hypotheses finished; "never": bound at max
  length).
  Differences from HF: HF's prefix must be the same length across the batch
  (here it can differ per row); torch.topk / lax.top_k may order exact ties
  differently; HF fills positions after EOS with `pad_token_id or eos_id`,
  i.e. with EOS for T5 (pad 0), where we write 0. Parity with transformers'
  generate is tested exactly in tests/test_models_decoding_hf.py.

  `min_length` / `no_repeat_ngram_size` ban tokens in each step's log-probs as
  HF's processors do (`ban_tokens`; BART checkpoints carry
  no_repeat_ngram_size=3, so the CiteSum paper's runs used it).

  `reorder_cache(cache, flat_parent)` gives the cache after each step's beams are
  chosen: row r continues row flat_parent[r] (int32 [B * K], within r's example).
  The default copies every rank >= 1 leaf into that order; a model can keep its
  self-attention caches in place and reorder only a table of where each beam's past
  lives (model.EncoderDecoderModel, `beam_self_cache="indirect"`).
  """
  if length_penalty not in ("t5x", "hf"):
    raise ValueError(f"unknown length_penalty {length_penalty!r}")
  hf = length_penalty == "hf"
  if alpha is None:  # Each reference's own default: T5X's 0.6, transformers' 1.0.
    alpha = 1.0 if hf else 0.6
  if early_stopping is None:
    early_stopping = False if hf else "never"
  batch, k, length = prompt.shape[0], num_decodes, max_decode_len
  forced_all = _pad_prompt(prompt, length)  # [B, L]
  n_forced = jnp.sum(forced_all != 0, axis=1)  # [B]

  def penalty(n):
    if hf:
      return hf_length_penalty(alpha, jnp.maximum(n, 1))
    return t5x_brevity_penalty(alpha, n)

  def pen_length(i):
    """Penalised length of a sequence whose last token sits at step i."""
    n = jnp.broadcast_to(i + 1, (batch,))
    return n - n_forced if hf else n

  def best_possible_divisor(i):
    """Divisor giving the best final score an alive beam at step i can reach."""
    cur, final = pen_length(i), pen_length(length - 1)
    if hf:
      if early_stopping == "never" and alpha > 0:
        return penalty(final)
      return penalty(cur)
    return penalty(final) if alpha >= 0 else penalty(cur)

  def cond(state: BeamState):
    return (state.step < length) & jnp.any(state.open)

  def body(state: BeamState) -> BeamState:
    i, alive_seqs, alive_lp = state.step, state.alive_seqs, state.alive_log_probs
    cur = jax.lax.dynamic_index_in_dim(alive_seqs, i, axis=2, keepdims=False)
    logits, c = tokens_to_logits(cur.reshape(batch * k, 1), state.cache)
    logits = logits.astype(jnp.float32)
    forced = forced_all[:, i]
    is_forced = forced != 0

    # Top 2K continuations over all beams.
    if min_length or no_repeat_ngram_size:
      lp = ban_tokens(jax.nn.log_softmax(logits, axis=-1),
                      alive_seqs.reshape(batch * k, length + 1), i + 1, eos_id=eos_id,
                      min_length=min_length, no_repeat_ngram_size=no_repeat_ngram_size)
      top_lp, parent, token = _dense_continuations(lp.reshape(batch, k, -1), alive_lp,
                                                   forced, 2 * k)
    else:
      top_lp, parent, token = _beam_continuations(logits.reshape(batch, k, -1), alive_lp,
                                                  forced, 2 * k)
    top_seqs = _take_beams(alive_seqs, parent)
    top_seqs = jax.lax.dynamic_update_slice_in_dim(
        top_seqs, token[:, :, None], i + 1, axis=2)
    finishing = (((token == eos_id) & ~is_forced[:, None])
                 | (i == length - 1))

    # Alive: best K that did not finish.
    alive_lp, sel = jax.lax.top_k(
        top_lp + jnp.where(finishing, NEG_INF, 0.0), k)
    alive_seqs = _take_beams(top_seqs, sel)
    beam_parent = jnp.take_along_axis(parent, sel, axis=1)
    flat_parent = (jnp.arange(batch)[:, None] * k + beam_parent).reshape(-1)
    # The default copies the whole allocated self-attention cache every step
    # (LongLM-large, beam 4, batch 32, 128 new tokens: 1.6 GB read and written, about
    # the step's whole HBM roofline, 3.6 GB); the model's indirect reorder does not.
    c = (reorder_cache or _gather_batch)(c, flat_parent)

    # Finished: merge newly finished candidates into the top-K pool.
    eligible = finishing & state.open[:, None]
    if hf:
      eligible = eligible & (jnp.arange(2 * k) < k)[None, :]
    scores = top_lp / penalty(pen_length(i))[:, None]
    scores = jnp.where(eligible, scores, NEG_INF)
    fin_scores, sel = jax.lax.top_k(
        jnp.concatenate([state.finished_scores, scores], axis=1), k)
    fin_seqs = _take_beams(jnp.concatenate([state.finished_seqs, top_seqs], axis=1), sel)
    fin_flags = _take_beams(jnp.concatenate([state.finished_flags, eligible], axis=1), sel)

    # Can an alive beam still beat the worst finished one?
    all_full = jnp.all(fin_flags, axis=1)
    worst = jnp.where(all_full, jnp.min(fin_scores, axis=1), NEG_INF)
    best = alive_lp[:, 0] / best_possible_divisor(i)
    open_ = state.open & (best > worst)
    if hf and early_stopping is True:
      open_ = open_ & ~all_full
    if not hf:  # Only dead (NEG_INF) beams left alive: nothing to find.
      open_ = open_ & (alive_lp[:, 0] > NEG_INF / 2)
    return BeamState(step=i + 1, alive_seqs=alive_seqs, alive_log_probs=alive_lp,
                     finished_seqs=fin_seqs, finished_scores=fin_scores,
                     finished_flags=fin_flags, open=open_, cache=c)

  init_lp = jnp.tile(jnp.array([0.0] + [NEG_INF] * (k - 1), jnp.float32),
                     (batch, 1))
  init = BeamState(step=jnp.array(0, jnp.int32),
                   alive_seqs=jnp.zeros((batch, k, length + 1), jnp.int32),
                   alive_log_probs=init_lp,
                   finished_seqs=jnp.zeros((batch, k, length + 1), jnp.int32),
                   finished_scores=jnp.full((batch, k), NEG_INF, jnp.float32),
                   finished_flags=jnp.zeros((batch, k), bool),
                   open=jnp.ones((batch,), bool), cache=repeat_batch(cache, k))
  final = jax.lax.while_loop(cond, body, init)
  return final.finished_seqs[:, :, 1:], final.finished_scores
