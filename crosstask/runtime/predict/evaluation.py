"""SeqIO evaluation: the task's postprocessors and metrics over the model's outputs.

Metrics go to TensorBoard (through clu) and to `<output_dir>/metrics.jsonl`, one
line per (step, task) with the task's fingerprint (`crosstask.records`);
seqio's JSONLogger also keeps the inferences per task.
"""

import os
from collections.abc import Iterable, Mapping
from typing import Any

import jax
import numpy as np

from crosstask import records
from crosstask.plain_vocabularies import EOS_ID
from crosstask.text import feature_text
from crosstask import tracing
from crosstask.runtime.data import pipeline as data
from crosstask.runtime.data import truncation
from crosstask.runtime.predict import fingerprint
from crosstask.runtime.predict import inference
from crosstask.runtime.report import console


def has_labels(examples: Iterable[Mapping]) -> bool:
  """Whether a split's examples carry labels: a non-blank target, or, for rank
  classification (`rank_correct`), an option marked right. Stops at the first that does,
  so a labelled split costs one example. CLUE's, FewCLUE's and NLPCC's test splits do not
  (empty targets): scored, they would read as 0 where nothing was measured. A task whose
  preprocessors build the targets from tokens keeps no target text (LongLM's pretraining
  objectives): a token past pad and EOS (ids 0 and 1 in T5's layout) is its label."""
  for ex in examples:
    if 'rank_correct' in ex:
      if feature_text(ex['rank_correct']) == '1':
        return True
    elif 'targets_pretokenized' in ex:
      if feature_text(ex['targets_pretokenized']).strip():
        return True
    elif 'targets' in ex and np.any(np.asarray(ex['targets']) > EOS_ID):
      return True
  return False


def _scalar(v: Any) -> float | None:
  v = getattr(v, 'value', v)
  try:
    arr = np.asarray(v, dtype=np.float64)
  except (TypeError, ValueError):
    return None
  return float(arr) if arr.ndim == 0 else None


def _holds_more(task: Any, cfg: data.DatasetConfig, count: int) -> bool:
  """Whether `task`'s split holds an example past its first `count` (preprocessed as the
  evaluator reads them): a split of exactly NUM_EXAMPLES is the whole split."""
  return data.holds_past(tracing.without_autograph(
      task.get_dataset, dict(cfg.task_feature_lengths), split=cfg.split, shuffle=False,
      num_epochs=1, use_cached=cfg.use_cached, seed=cfg.seed), count)


class Evaluator:
  """A `seqio.Evaluator` for a DatasetConfig, writing summaries and JSON."""

  def __init__(self, cfg: data.DatasetConfig, output_dir: str, writer=None,
               num_examples: int | None = None):
    import seqio
    data.import_tasks(cfg.module)
    task = data.get_mixture_or_task(cfg.mixture_or_task_name)
    data.check_split(task, cfg.split)
    self.output_dir = output_dir
    self.writer = writer
    # A subset's inference logs (`<task>-<step>.jsonl`) go to a folder of their own, so
    # they never overwrite the whole split's; its records go to `output_dir` as others'.
    log_dir = (os.path.join(output_dir, records.subset_log_dir(num_examples)) if num_examples
               else output_dir)
    self._log_dir = log_dir  # Made at the first evaluation: a failed start leaves no folder.
    self._evaluator = tracing.without_autograph(
        seqio.Evaluator,
        mixture_or_task_name=cfg.mixture_or_task_name,
        feature_converter=data.feature_converter(pack=False),
        eval_split=cfg.split,
        use_cached=cfg.use_cached,
        seed=cfg.seed,
        sequence_length=dict(cfg.task_feature_lengths),
        num_examples=num_examples,
        logger_cls=(seqio.JSONLogger,),
        log_dir=log_dir,
        async_compute_metrics=False)
    self.splits = {}  # Each task's split label: 'validation[:N]' for a subset.
    for task in self._evaluator.eval_tasks:
      cached = self._evaluator.cached_task_datasets[task.name]
      if not has_labels(cached.as_numpy_iterator()):
        raise ValueError(f"task {task.name!r} split {cfg.split!r} carries no labels: there is "
                         "nothing to evaluate. Run crosstask.infer on it for predictions (a "
                         "test split's go to its leaderboard)")
      count = sum(1 for _ in cached) if num_examples else 0
      whole = not num_examples or count < num_examples or not _holds_more(task, cfg, count)
      self.splits[task.name] = records.subset_split(cfg.split, count, whole=whole)
      for cut in truncation.cuts(cached.as_numpy_iterator(), task.output_features,
                                 cfg.task_feature_lengths):
        console.warn(cut.describe(task.name, self.splits[task.name]))
    self.fingerprints = {t.name: fingerprint.fingerprint(t) for t in self._evaluator.eval_tasks}

  @property
  def has_tasks(self) -> bool:
    return bool(self._evaluator.eval_tasks)

  def evaluate(self, runner: inference.Inference, params: Any, step: int) -> dict[str, dict]:
    """Per-task metrics (name -> float) at `step`, also written to disk."""
    os.makedirs(self._log_dir, exist_ok=True)
    future, _ = self._evaluator.evaluate(compute_metrics=True, step=int(step),
                                         **runner.model_fns(params))
    all_metrics = future.result() or {}
    out = {}
    for task, metrics in all_metrics.items():
      out[task] = {k: s for k, v in metrics.items() if (s := _scalar(v)) is not None}
    if jax.process_index() == 0:  # Every host computes the metrics; one appends them.
      records.append(self.output_dir, [
          records.Record(int(step), task, metrics, self.fingerprints.get(task), source='eval',
                         split=self.splits[task])
          for task, metrics in out.items()])
    if self.writer is not None:
      self.writer.write_scalars(int(step), {f'eval/{task}/{k}': v
                                            for task, m in out.items() for k, v in m.items()})
      self.writer.flush()
    return out
