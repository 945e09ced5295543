"""Decoding and scoring over whole datasets, batched and sharded like training.

These are the `predict_fn` / `score_fn` that `seqio.Evaluator` calls with its
enumerated (index, features) datasets; `crosstask.infer` reuses them.
"""

from typing import Any, Callable, Iterator

import jax
import numpy as np

from crosstask.runtime.config import platform
from crosstask.runtime.data import batching
from crosstask.runtime.sharding import partitioning

MODEL_KEYS = ('encoder_input_tokens', 'decoder_input_tokens', 'decoder_target_tokens',
              'decoder_loss_weights', 'encoder_segment_ids', 'decoder_segment_ids',
              'encoder_positions', 'decoder_positions')


def _without_autotuning(ds):
  """`ds` without tf.data's autotuning thread, which holds up the deletion of a finished
  iterator until its next scheduled wake, a period that doubles as it sleeps, so a
  pass could end seconds after its last batch. Eval sets are read once and cached,
  so there is little to tune; AUTOTUNE maps then run with as many threads as cores.
  """
  import tensorflow as tf  # The dataset is tf.data's: TensorFlow is already loaded.
  options = tf.data.Options()
  options.autotune.enabled = False
  return ds.with_options(options)


class Inference:
  """Jitted predict/score for `model` with parameters placed by `param_shardings`."""

  def __init__(self, model: Any, partitioner: partitioning.Partitioner,
               param_shardings: Any, batch_size: int,
               decoder_params: dict | None = None, prompt_with_targets: bool = False,
               num_decodes: int = 1, profile: platform.Profile | None = None):
    self.model = model
    self.partitioner = partitioner
    self.batch_size = batching.global_batch_size(batch_size, partitioner.data_size)
    data_sharding = partitioner.data_sharding
    # None: the profile of the mesh's devices (or the one gin names).
    self.profile = platform.for_mesh(partitioner.mesh) if profile is None else profile

    # A decode is two programs: the encoder, then the decoding loop, each compiled
    # with the platform profile's XLA options for it; scoring with XLA's.
    encode, loop = model.decoding_programs(decoder_params=decoder_params,
                                           num_decodes=num_decodes,
                                           prompt_with_targets=prompt_with_targets)

    def decode(params, batch, encoded, cache, batch_number):
      # prompt_with_targets forces each example's target tokens (e.g. "This paper",
      # written without EOS by a prompting task) as the start of its decode.
      # num_decodes is the beam size for decoding.beam_search (the best beam is returned).
      # Each batch samples with its own key, the same in every pass over the data (as
      # T5X's inference splits one per batch): one key for all would draw the same noise
      # for row j of every batch.
      rng = jax.random.fold_in(jax.random.PRNGKey(0), batch_number)
      seqs, scores = loop(params, batch, encoded, cache, rng)
      return seqs[:, 0], {'scores': scores[:, 0]}

    self._predict_options = {program: self.profile.decoding_compiler_options(program)
                             for program in platform.DECODING_PROGRAMS}
    # The encoder's outputs keep the shardings it gave them on the way into the loop.
    self._encode = jax.jit(encode, in_shardings=(param_shardings, data_sharding),
                           compiler_options=self._predict_options['encoder'] or None)
    self._decode = jax.jit(decode, out_shardings=(data_sharding, data_sharding),
                           compiler_options=self._predict_options['loop'] or None)
    self._score = jax.jit(model.score_batch, in_shardings=(param_shardings, data_sharding),
                          out_shardings=data_sharding)

  def _host_batches(self, ds) -> Iterator[tuple[np.ndarray, dict]]:
    """(indices, features) numpy batches of an enumerated tf.data dataset."""
    yield from _without_autotuning(ds.batch(self.batch_size)).as_numpy_iterator()

  def _batches(self, host_batches) -> Iterator[tuple[np.ndarray, dict, int]]:
    """(indices, padded global batch, real rows) for (indices, features) host batches."""
    for index, feats in host_batches:
      feats, n = batching.pad_rows({k: v for k, v in feats.items() if k in MODEL_KEYS},
                                   self.batch_size)
      yield np.asarray(index), batching.to_device(feats, self.partitioner.data_sharding), n

  def predict_batches(self, params, host_batches) -> tuple[list, dict[str, list]]:
    """`predict_with_aux` of (indices, features) numpy batches of at most `batch_size`
    rows (`runtime.data.host_inputs`): the job's inputs without tf.data."""
    out, scores = [], []
    with self.partitioner.context():
      for number, (index, batch, n) in enumerate(self._batches(host_batches)):
        try:
          placed = batching.to_device({'batch_number': np.int32(number)},
                                      self.partitioner.replicated)
          tokens, aux = self._decode(params, batch, *self._encode(params, batch),
                                     placed['batch_number'])
        except jax.errors.JaxRuntimeError as e:
          for options in self._predict_options.values():
            platform.raise_if_options_refused(
                e, 'platform.profile.decode_compiler_options', options)
          raise
        tokens, s = batching.to_host(tokens)[:n], batching.to_host(aux['scores'])[:n]
        out.extend((int(i), t.tolist()) for i, t in zip(index, tokens))
        scores.extend(float(x) for x in s)
    return out, {'scores': scores}

  def predict_with_aux(self, params, ds) -> tuple[list, dict[str, list]]:
    return self.predict_batches(params, self._host_batches(ds))

  def predict(self, params, ds) -> list:
    return self.predict_with_aux(params, ds)[0]

  def score(self, params, ds) -> list:
    return self.score_batches(params, self._host_batches(ds))

  def score_batches(self, params, host_batches) -> list[tuple[int, float]]:
    """(index, log-likelihood of the targets) for (indices, features) numpy batches, as
    `predict_batches` reads them."""
    out = []
    with self.partitioner.context():
      for index, batch, n in self._batches(host_batches):
        s = batching.to_host(self._score(params, batch))[:n]
        out.extend((int(i), float(x)) for i, x in zip(index, s))
    return out

  def model_fns(self, params) -> dict[str, Callable]:
    """The keyword arguments `seqio.Evaluator.evaluate` takes, bound to `params`."""
    return {'predict_fn': lambda ds, *_: self.predict(params, ds),
            'predict_with_aux_fn': lambda ds, *_: self.predict_with_aux(params, ds),
            'score_fn': lambda ds, *_: self.score(params, ds)}
