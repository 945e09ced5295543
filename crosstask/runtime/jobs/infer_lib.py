"""`infer(...)`: predictions and scores for a split, one JSON line per example."""

import dataclasses
import json
import os

import gin
import numpy as np

from crosstask.runtime.config import gin_utils
from crosstask.runtime.data import pipeline as data
from crosstask.runtime.jobs import restoring
from crosstask.runtime.predict import fingerprint
from crosstask.runtime.report import console
from crosstask.runtime.state import checkpoints


def _text(ex: dict, key: str, vocab) -> str:
  raw = ex.get(f'{key}_pretokenized')
  if raw is not None:
    return raw.decode('utf-8') if isinstance(raw, bytes) else str(raw)
  return vocab.decode([int(t) for t in np.asarray(ex[key]).tolist()])


@gin.configurable(module='infer_script')
@restoring.checkpoint_job
def infer(job: restoring.CheckpointJob) -> list[str]:
  """Writes `<output_dir>/<task>-<split>.jsonl` (inputs, targets, prediction, score).

  `score` is the model's log-likelihood of its prediction; `target_score` that of
  the reference target (what rank classification is scored by); `step` and
  `fingerprint` (the task definition's) let `crosstask.score` write the eval
  job's record from the file alone. Returns the files written. Parameters:
  `restoring.CheckpointJob`'s, as eval_script.evaluate takes them; of
  `restore_checkpoint_cfg` mode 'all', the newest checkpoint.
  """
  dataset_cfg, output_dir = job.dataset_cfg, job.output_dir
  mixture = data.get_mixture_or_task(dataset_cfg.mixture_or_task_name)
  data.check_split(mixture, dataset_cfg.split)
  abstract_params, runner = job.inference_runner()
  restore_checkpoint_cfg = job.restore_checkpoint_cfg
  if restore_checkpoint_cfg.mode == 'all':  # One checkpoint is inferred from: the newest.
    restore_checkpoint_cfg = dataclasses.replace(restore_checkpoint_cfg, mode='latest')
  (step, state_dir), = restoring.checkpoint_dirs(restore_checkpoint_cfg)
  params = checkpoints.load_params(state_dir, abstract_params)
  converter = data.feature_converter(pack=False)
  os.makedirs(output_dir, exist_ok=True)
  gin_utils.summarize_gin_config(output_dir)
  gin_utils.write_operative_config(output_dir)
  written = []
  tasks = getattr(mixture, 'tasks', None) or [mixture]
  for task in tasks:
    if dataset_cfg.split not in task.splits:
      continue
    task_ds = task.get_dataset(dict(dataset_cfg.task_feature_lengths), split=dataset_cfg.split,
                               shuffle=False, num_epochs=1, use_cached=dataset_cfg.use_cached)
    if job.num_examples:
      task_ds = task_ds.take(job.num_examples)
    # Read and preprocessed once: predicting, scoring and writing the texts each pass over it.
    task_ds = task_ds.cache()
    model_ds = converter(task_ds, dict(dataset_cfg.task_feature_lengths)).enumerate()
    preds, aux = runner.predict_with_aux(params, model_ds)
    target_scores = dict(runner.score(params, model_ds))
    out_vocab = task.output_features['targets'].vocabulary
    in_vocab = task.output_features['inputs'].vocabulary
    task_fingerprint = fingerprint.fingerprint(task)
    path = os.path.join(output_dir, f'{task.name}-{dataset_cfg.split}.jsonl')
    with open(path, 'w') as f:
      for (index, tokens), score, ex in zip(preds, aux['scores'], task_ds.as_numpy_iterator()):
        f.write(json.dumps({
            'index': index,
            'inputs': _text(ex, 'inputs', in_vocab),
            'targets': _text(ex, 'targets', out_vocab),
            'prediction': out_vocab.decode(tokens),
            'score': score,
            'target_score': target_scores[index],
            'step': int(step),
            'fingerprint': task_fingerprint,
        }, ensure_ascii=False) + '\n')
    written.append(path)
    console.say(f'Wrote {len(preds)} predictions to {path}')
  return written
