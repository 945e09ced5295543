"""`infer(...)`: predictions and scores for a split, one JSON line per example.

Where SeqIO is not installed (the GPU image has no TensorFlow) the job reads the task's
plain form (`pipeline.plain_task`) through `data.host_inputs` and writes the same lines:
the same batches reach the same programs, and the fingerprint is the SeqIO task's.
"""

import json
import os
from typing import Any, Mapping, NamedTuple

import gin
import numpy as np

from crosstask import records
from crosstask import tracing
from crosstask.text import feature_text
from crosstask import vocabularies
from crosstask.runtime.config import gin_utils
from crosstask.runtime.data import host_inputs
from crosstask.runtime.data import pipeline as data
from crosstask.runtime.data import truncation
from crosstask.runtime.jobs import restoring
from crosstask.runtime.predict import fingerprint
from crosstask.runtime.predict import inference
from crosstask.runtime.report import console
from crosstask.runtime.state import checkpoints


def _text(ex: dict, key: str, vocab) -> str:
  raw = ex.get(f'{key}_pretokenized')
  if raw is not None:
    return feature_text(raw)
  return vocab.decode([int(t) for t in np.asarray(ex[key]).tolist()])


def _line(index: int, inputs: str, targets: str, prediction: str, score: float,
          target_score: float, step: int, task_fingerprint: str) -> str:
  return json.dumps({'index': index, 'inputs': inputs, 'targets': targets,
                     'prediction': prediction, 'score': score, 'target_score': target_score,
                     'step': int(step), 'fingerprint': task_fingerprint},
                    ensure_ascii=False) + '\n'


def _replacing(path: str) -> str:
  """What writing `path` replaces, for the 'Wrote' line: an earlier run's predictions
  (say, another checkpoint's) are not overwritten without a word."""
  if not os.path.exists(path):
    return ''
  try:
    with open(path, encoding='utf-8') as f:
      step = json.loads(f.readline())['step']
    return f', replacing that file\'s predictions of step {step}'
  except (ValueError, KeyError, TypeError, OSError):
    return ', replacing the file there'


class Predictions(NamedTuple):
  """A split's examples ({"inputs", "targets"} text), their features as the model reads
  them, and its predictions: (index, tokens), their log-likelihoods, their text;
  `whole`: whether the examples are all the split holds."""
  examples: list[dict[str, str]]
  features: dict[str, np.ndarray]
  tokens: list[tuple[int, list[int]]]
  scores: list[float]
  texts: list[str]
  whole: bool


def plain_predictions(runner: inference.Inference, params: Any, task: Any, vocabulary: Any,
                      split: str, lengths: Mapping[str, int],
                      num_examples: int | None = None) -> Predictions:
  """The job without SeqIO up to its output: the first `num_examples` (None or 0: all;
  never part of a rank question, `data.first_examples`) examples of `task`'s `split` (a
  `PlainTask`), tokenized with `vocabulary` at `lengths`, decoded by `runner` with
  `params` and detokenized."""
  if num_examples:
    examples, more = data.first_examples(task.iter_examples(split), num_examples)
  else:
    examples, more = task.examples(split), False
  whole = not more
  features = host_inputs.features(examples, vocabulary, lengths)
  tokens, aux = runner.predict_batches(params, host_inputs.batches(features, runner.batch_size))
  return Predictions(examples, features, tokens, aux['scores'],
                     [vocabulary.decode(t) for _, t in tokens], whole)


def _plain_task(job: restoring.CheckpointJob) -> tuple[Any, Any]:
  """(the run's task in its plain form, the one vocabulary it is read with)."""
  cfg, model = job.dataset_cfg, job.run.model
  try:
    task = data.plain_task(cfg.module, cfg.mixture_or_task_name)
  except ValueError as e:  # No plain form: the configured task name is the thing to change.
    raise gin_utils.GinConfigError(str(e)) from None
  data.check_split(task, cfg.split)
  vocab = getattr(model, 'output_vocabulary', None)
  if vocab is None or getattr(model, 'input_vocabulary', None) is not vocab:
    raise gin_utils.GinConfigError(
        'Without SeqIO, crosstask.infer reads inputs and targets with one vocabulary: the '
        "model's (VOCABULARY); this model has none, or two.")
  return task, vocab


@gin.configurable(module='infer_script')
@restoring.checkpoint_job
def infer(job: restoring.CheckpointJob) -> list[str]:
  """Writes `<output_dir>/<task>-<split>.jsonl` (inputs, targets, prediction, score);
  the first N examples (NUM_EXAMPLES) of a split that holds more go to
  `<task>-<split>_first<N>.jsonl` (`records.inference_filename`).

  `score` is the model's log-likelihood of its prediction; `target_score` that of
  the reference target (what rank classification is scored by); `step` and
  `fingerprint` (the task definition's) let `crosstask.score` write the eval
  job's record from the file alone. Returns the files written. Parameters:
  `restoring.CheckpointJob`'s, as eval_script.evaluate takes them; of
  `restore_checkpoint_cfg` mode 'all', the newest checkpoint.
  """
  dataset_cfg, output_dir = job.dataset_cfg, job.output_dir
  restoring.check_output_dir(output_dir, 'INFER_OUTPUT_DIR')
  if vocabularies.seqio_installed():
    mixture = data.get_mixture_or_task(dataset_cfg.mixture_or_task_name)
    data.check_split(mixture, dataset_cfg.split)
    plain = None
  else:
    plain = _plain_task(job)  # Before the checkpoint is read: a task without one fails now.
  abstract_params, runner = job.inference_runner()
  step, state_dir = restoring.newest_checkpoint(job.restore_checkpoint_cfg)
  params = checkpoints.load_params(state_dir, abstract_params, job.run.vocabularies,
                                   job.run.model_config)
  os.makedirs(output_dir, exist_ok=True)
  gin_utils.summarize_gin_config(output_dir)
  gin_utils.write_operative_config(output_dir)
  if plain is not None:
    return [_write_plain(job, runner, params, step, *plain)]
  written = []
  converter = data.feature_converter(pack=False)
  tasks = getattr(mixture, 'tasks', None) or [mixture]
  for task in tasks:
    if dataset_cfg.split not in task.splits:
      continue
    task_ds = tracing.without_autograph(
        task.get_dataset, dict(dataset_cfg.task_feature_lengths), split=dataset_cfg.split,
        shuffle=False, num_epochs=1, use_cached=dataset_cfg.use_cached)
    whole = True
    if job.num_examples:
      taken, more = data.first_examples(task_ds.as_numpy_iterator(), job.num_examples)
      task_ds, whole = task_ds.take(len(taken)), not more
    # Read and preprocessed once: predicting, scoring and writing the texts each pass over it.
    task_ds = task_ds.cache()
    model_ds = tracing.without_autograph(
        converter, task_ds, dict(dataset_cfg.task_feature_lengths)).enumerate()
    preds, aux = runner.predict_with_aux(params, model_ds)
    target_scores = dict(runner.score(params, model_ds))
    out_vocab = task.output_features['targets'].vocabulary
    in_vocab = task.output_features['inputs'].vocabulary
    task_fingerprint = fingerprint.fingerprint(task)
    split = records.subset_split(dataset_cfg.split, len(preds), whole=whole)
    for cut in truncation.cuts(task_ds.as_numpy_iterator(), task.output_features,
                               dataset_cfg.task_feature_lengths):
      console.warn(cut.describe(task.name, split))
    path = os.path.join(output_dir, records.inference_filename(task.name, split))
    replacing = _replacing(path)
    with open(path, 'w') as f:
      for (index, tokens), score, ex in zip(preds, aux['scores'], task_ds.as_numpy_iterator()):
        f.write(_line(index, _text(ex, 'inputs', in_vocab), _text(ex, 'targets', out_vocab),
                      out_vocab.decode(tokens), score, target_scores[index], step,
                      task_fingerprint))
    written.append(path)
    console.say(f'Wrote {len(preds)} predictions to {path}{replacing}')
  return written


def _write_plain(job: restoring.CheckpointJob, runner: inference.Inference, params: Any,
                 step: int, task: Any, vocab: Any) -> str:
  """The SeqIO branch's file for one task's plain form, read through `host_inputs`."""
  cfg = job.dataset_cfg
  out = plain_predictions(runner, params, task, vocab, cfg.split, cfg.task_feature_lengths,
                          job.num_examples)
  target_scores = dict(runner.score_batches(
      params, host_inputs.batches(out.features, runner.batch_size)))
  task_fingerprint = fingerprint.plain_fingerprint(task, vocab)
  # Named as the SeqIO task is registered: the plain name, or its copy for the vocabulary.
  split = records.subset_split(cfg.split, len(out.tokens), whole=out.whole)
  path = os.path.join(job.output_dir,
                      records.inference_filename(cfg.mixture_or_task_name, split))
  replacing = _replacing(path)
  with open(path, 'w') as f:
    for (index, _), ex, text, score in zip(out.tokens, out.examples, out.texts, out.scores):
      f.write(_line(index, ex['inputs'], ex['targets'], text, score, target_scores[index], step,
                    task_fingerprint))
  console.say(f'Wrote {len(out.tokens)} predictions to {path}{replacing}')
  return path
