"""SeqIO registration of the 23 SciRepEval text tasks and the in-train mixture.

Names: `scirepeval_<test config>` (`scirepeval_fos`, `scirepeval_search`, ...);
English arrow prompts only. Metrics: classification F1 / macro F1 and Kendall τ
with the probes' sklearn / SciPy calls; pair tasks report yes/no accuracy here,
their ranking metrics come from `python -m crosstask.relevance` (log P(yes) −
log P(no), trec_eval). Extra features travel with each example (`doc_id`, or
`query_id` / `cand_id` / `grade`) so a run's outputs map back to the data.
Mixtures: `scirepeval_in_train` (the 8 in-train tasks, equal rate, as the paper
samples equal examples per task) and `scirepeval_sample` (the 5 tasks with
official training samples, split `sample`, for smoke runs).
"""

from __future__ import annotations

import functools

from crosstask.metrics.scirepeval import text_metrics
from crosstask.tasks.common import factory
from crosstask.tasks.scirepeval import records
from crosstask.tasks.scirepeval import text

IN_TRAIN_MIXTURE = "scirepeval_in_train"
SAMPLE_MIXTURE = "scirepeval_sample"


def metric_fns(task: text.TextTask) -> list:
  if task.kind == "labels":
    return [text_metrics.multi_label_f1(task.label_names)]
  if task.kind == "label":
    return [text_metrics.label_f1(task.label_names)]
  if task.kind == "binary":
    return [text_metrics.label_f1((text.YES, text.NO), average="binary")]
  if task.kind == "number":
    return [text_metrics.kendall_tau(functools.partial(records.probe_train_median, task))]
  return [text_metrics.yes_no_accuracy]


def strip_output(output, example=None, is_target=False) -> str:
  del example, is_target
  if isinstance(output, bytes):
    output = output.decode("utf-8", errors="replace")
  return str(output).strip()


def _read_split(split: str, *, key: str) -> list[dict]:
  return records.examples(text.BY_KEY[key], split)


def register_task(task: text.TextTask):
  extra = ("query_id", "cand_id", "grade") if task.kind == "pair" else ("doc_id",)
  return factory.arrow_task(
      task.name, schema=text.SCHEMA, inputs=text.input_fields(task),
      outputs=(text.output_field(task),),
      lang="en", read_split=functools.partial(_read_split, key=task.key),
      splits=records.splits(task), metric_fns=metric_fns(task), postprocess_fn=strip_output,
      to_example=lambda ex: ex, extra_features=extra)


def register() -> list[str]:
  """Registers the 23 text tasks and the two mixtures (no data read); returns their names."""
  names = [register_task(t).name for t in text.TEXT_TASKS]
  names.append(factory.register_mixture(IN_TRAIN_MIXTURE,
                                        [text.BY_KEY[k].name for k in text.IN_TRAIN]))
  names.append(factory.register_mixture(SAMPLE_MIXTURE,
                                        [text.BY_KEY[k].name for k in records.SAMPLE_FILES]))
  return names
