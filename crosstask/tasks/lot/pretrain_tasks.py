"""LongLM pretraining tasks on the demo corpus, and their 1:1 mixture.

`longlm_infilling_demo` and `longlm_continuation_demo` read the demo corpus
(`corpus.py`), tokenize it, cut it into segments that fit the feature lengths
and apply one objective each (`pretraining.py`). `longlm_pretrain_demo` mixes
them 1:1 (the paper gives no ratio); `longlm_pretrain_demo_infill<NN>` for
NN = 10, 20, ..., 90 gives NN% to infilling, and `pretrain_mixture(rate)`
registers any other rate.

Eval metrics are those of the paper's Table 9: perplexity (a score metric: the
model's log-likelihood of the targets over their token count, EOS included) and
BLEU-3/4 of the generated text against the target, on jieba words after the
LongLM clean-up (the paper decodes infilling greedily and continuation with
top-k 40 / T 0.7: choose the decoding gin accordingly).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
import seqio
import tensorflow as tf

from crosstask.tasks.common import factory
from crosstask.tasks.lot import corpus
from crosstask.tasks.lot import pretraining

INFILL_TASK = "longlm_infilling_demo"
CONTINUATION_TASK = "longlm_continuation_demo"
MIXTURE = "longlm_pretrain_demo"
SPLITS = ("train", "validation")
DEFAULT_SEGMENT_TOKENS = 510


@functools.lru_cache(maxsize=2)
def _documents(root: str) -> tuple[str, ...]:
  docs, _ = corpus.documents(root)
  return tuple(docs)


def _dataset_fn(split: str, shuffle_files: bool = False, seed=None) -> tf.data.Dataset:
  del shuffle_files, seed
  from crosstask.tasks.common import readers  # pylint: disable=g-import-not-at-top
  docs = corpus.split_documents(list(_documents(str(readers.data_root()))), split)
  return tf.data.Dataset.from_tensor_slices({"targets": tf.constant(docs, tf.string)})


def segment(dataset, sequence_length=None, output_features=None):
  """Cuts tokenized texts so that both objectives fit (length - 2: sentinel + EOS)."""
  del output_features
  if sequence_length:
    max_tokens = min(v for k, v in sequence_length.items() if k in ("inputs", "targets")) - 2
  else:
    max_tokens = DEFAULT_SEGMENT_TOKENS
  return pretraining.split_tokens(dataset, max(max_tokens, 2))


def postprocess(output, example=None, is_target=False):
  """Text after LongLM's clean-up; targets also carry their token count (for perplexity)."""
  from crosstask.metrics import lot  # pylint: disable=g-import-not-at-top
  text = lot.clean_prediction(output)
  if not is_target:
    return text
  num_tokens = int(np.count_nonzero(example["targets"])) if example is not None else 0
  return {"text": text, "num_tokens": num_tokens}


def perplexity(targets: Sequence[dict], scores: Sequence[float]) -> dict[str, float]:
  """exp(- total log-likelihood / total target tokens)."""
  tokens = sum(t["num_tokens"] for t in targets)
  if not tokens:
    raise ValueError("perplexity: the targets hold no tokens")
  return {"perplexity": math.exp(-float(np.sum(scores)) / tokens)}


def pretrain_bleu(targets: Sequence[dict], predictions: Sequence[str]) -> dict[str, float]:
  """BLEU-3/4 (0-100) as Table 9 reports them."""
  from crosstask.metrics import lot  # pylint: disable=g-import-not-at-top
  scores = lot.bleu_scores([t["text"] for t in targets], predictions, orders=(3, 4))
  return {k: 100.0 * v for k, v in scores.items()}


def _task(name: str, objective) -> seqio.Task:
  # Bytes; other vocabularies: register(vocabulary).
  return factory.get_or_register_task(
      name,
      source=seqio.FunctionDataSource(_dataset_fn, splits=SPLITS),
      preprocessors=[seqio.preprocessors.tokenize, segment, objective,
                     seqio.preprocessors.append_eos_after_trim],
      postprocess_fn=postprocess,
      metric_fns=[perplexity, pretrain_bleu],
      shuffle_buffer_size=10_000)


def pretrain_mixture(infill_rate: float = 0.5) -> str:
  """The name of the infilling/continuation mixture with this infilling share."""
  if not 0.0 < infill_rate < 1.0:
    raise ValueError(f"infill_rate must be in (0, 1), got {infill_rate!r}")
  name = MIXTURE if infill_rate == 0.5 else f"{MIXTURE}_infill{infill_rate * 100:g}"
  if name not in seqio.MixtureRegistry.names():
    seqio.MixtureRegistry.add(name, [(INFILL_TASK, infill_rate),
                                     (CONTINUATION_TASK, 1.0 - infill_rate)])
  return name


def register() -> list[str]:
  """Registers both objectives and the mixtures (no data read)."""
  _task(INFILL_TASK, pretraining.text_infilling)
  _task(CONTINUATION_TASK, pretraining.conditional_continuation)
  mixtures = [pretrain_mixture()] + [pretrain_mixture(n / 100) for n in range(10, 100, 10)
                                     if n != 50]
  return [INFILL_TASK, CONTINUATION_TASK, *mixtures]
