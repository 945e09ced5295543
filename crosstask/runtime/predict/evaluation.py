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


def _subsets(cfg: data.DatasetConfig, num_examples: int) -> dict[str, tuple[int, bool]]:
  """{task: (how many of its examples to read, whether that is its whole split)} for
  NUM_EXAMPLES, per task of the mixture as `data.first_examples` takes them (preprocessed
  as the evaluator reads them): a rank task's count ends on a whole question."""
  import seqio
  subsets = {}
  for task in seqio.evaluation.get_valid_eval_tasks(
      seqio.get_subtasks(data.get_mixture_or_task(cfg.mixture_or_task_name)), cfg.split):
    ds = tracing.without_autograph(
        task.get_dataset, dict(cfg.task_feature_lengths), split=cfg.split, shuffle=False,
        num_epochs=1, use_cached=cfg.use_cached, seed=cfg.seed)
    taken, more = data.first_examples(ds.as_numpy_iterator(), num_examples)
    subsets[task.name] = (len(taken), not more)
  return subsets


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
    # The whole split: one seqio.Evaluator for the mixture. NUM_EXAMPLES: one per task, as
    # each task's count differs where it ends on a whole rank question (`_subsets`).
    # A subset's inference logs (`<task>-<step>.jsonl`) go to a folder of their own,
    # `first_<count>/`, so they never overwrite the whole split's; its records go to
    # `output_dir` as others'. A count that takes the whole split is the whole split's eval:
    # its label, its logs' folder.
    parts = (_subsets(cfg, num_examples) if num_examples
             else {cfg.mixture_or_task_name: (None, True)})
    self._log_dirs = []  # Made at the first evaluation: a failed start leaves no folder.
    self._evaluators = []
    self.splits = {}  # Each task's split label: 'validation[:N]' for a subset.
    for name, (count, whole) in parts.items():
      if whole:
        count = None
      log_dir = os.path.join(output_dir, records.subset_log_dir(count)) if count else output_dir
      self._log_dirs.append(log_dir)
      self._evaluators.append(tracing.without_autograph(
          seqio.Evaluator,
          mixture_or_task_name=name,
          feature_converter=data.feature_converter(pack=False),
          eval_split=cfg.split,
          use_cached=cfg.use_cached,
          seed=cfg.seed,
          sequence_length=dict(cfg.task_feature_lengths),
          num_examples=count,
          logger_cls=(seqio.JSONLogger,),
          log_dir=log_dir,
          async_compute_metrics=False))
      for task in self._evaluators[-1].eval_tasks:
        cached = self._evaluators[-1].cached_task_datasets[task.name]
        if not has_labels(cached.as_numpy_iterator()):
          raise ValueError(f"task {task.name!r} split {cfg.split!r} carries no labels: there "
                           "is nothing to evaluate. Run crosstask.infer on it for predictions "
                           "(a test split's go to its leaderboard)")
        self.splits[task.name] = records.subset_split(cfg.split, count or 0, whole=whole)
        for cut in truncation.cuts(cached.as_numpy_iterator(), task.output_features,
                                   cfg.task_feature_lengths):
          console.warn(cut.describe(task.name, self.splits[task.name]))
    self.fingerprints = {t.name: fingerprint.fingerprint(t)
                         for e in self._evaluators for t in e.eval_tasks}
    self.data = {t.name: fingerprint.data_digest(
                     e.cached_task_datasets[t.name].as_numpy_iterator())
                 for e in self._evaluators for t in e.eval_tasks}

  @property
  def has_tasks(self) -> bool:
    return any(e.eval_tasks for e in self._evaluators)

  def evaluate(self, runner: inference.Inference, params: Any, step: int) -> dict[str, dict]:
    """Per-task metrics (name -> float) at `step`, also written to disk."""
    all_metrics = {}
    for evaluator, log_dir in zip(self._evaluators, self._log_dirs):
      os.makedirs(log_dir, exist_ok=True)
      future, _ = evaluator.evaluate(compute_metrics=True, step=int(step),
                                     **runner.model_fns(params))
      all_metrics.update(future.result() or {})
    out = {}
    for task, metrics in all_metrics.items():
      out[task] = {k: s for k, v in metrics.items() if (s := _scalar(v)) is not None}
    if jax.process_index() == 0:  # Every host computes the metrics; one appends them.
      records.append(self.output_dir, [
          records.Record(int(step), task, metrics, self.fingerprints.get(task), source='eval',
                         split=self.splits[task], data=self.data.get(task))
          for task, metrics in out.items()])
    if self.writer is not None:
      self.writer.write_scalars(int(step), {f'eval/{task}/{k}': v
                                            for task, m in out.items() for k, v in m.items()})
      self.writer.flush()
    return out
