"""An arrow task without SeqIO: its examples' text, postprocessor and metrics.

Why: a machine without TensorFlow (the GPU image) still has to run a task's eval-only
job. `arrow` is where `factory.arrow_task` takes its layout, postprocessor and metrics
from, so a `PlainTask` and the SeqIO task of the same arguments share them; SeqIO adds
only tokenizing and tf.data (`crosstask.runtime.data.host_inputs` does that in numpy).
The SeqIO task's source function is built here too (`Source`), so both forms hold the
one function and a plain task's fingerprint can name it. Imports no TensorFlow or SeqIO.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence

from crosstask.tasks.common import layout
from crosstask.tasks.common import sources
from crosstask.tasks.common.schema import Schema


def parse_output(output, example=None, is_target=False, *, schema: Schema, outputs, lang) -> dict:
  """Generated (or target) text -> {field: value}; lenient on malformed text."""
  del example, is_target
  return layout.parse_fields(schema, output, outputs, lang)


def _score_fields(targets: Sequence[dict], predictions: Sequence[dict], *, schema: Schema,
                  outputs: Sequence[str], fns: dict[str, Callable] | None = None) -> dict:
  result = {}
  for f in outputs:
    fn = schema[f].metric_fn if fns is None else fns.get(f)
    if fn is None:
      continue
    empty = schema[f].empty()
    scores = fn([t[f] for t in targets], [p.get(f, empty) for p in predictions])
    prefix = f"{f}/" if len(outputs) > 1 else ""
    result.update({prefix + k: v for k, v in scores.items()})
  return result


def field_metrics(schema: Schema, outputs: Sequence[str]) -> Callable:
  """One metric fn over parsed {field: value} dicts, scoring each field by its metric_fn."""
  outputs = schema.check(outputs, "outputs")
  fn = functools.partial(_score_fields, schema=schema, outputs=outputs)
  fn.__name__ = f"{schema.name}_field_metrics"  # seqio logs metric fns by name
  if any(getattr(schema[f].metric_fn, "resampling", None) for f in outputs):
    fn.resampling = functools.partial(_fields_for_resampling, schema=schema, outputs=outputs)
  return fn


def _fields_for_resampling(targets: Sequence[dict], predictions: Sequence[dict], *,
                           schema: Schema, outputs: Sequence[str]
                           ) -> tuple[list[dict], list[dict], Callable]:
  """`field_metrics`' resampling (`rescoring.replicates`): each field whose metric_fn
  has a `resampling` prepared by it over the whole set, and the fields' metrics of a draw."""
  targets, predictions = [dict(t) for t in targets], [dict(p) for p in predictions]
  fns = {}
  for f in outputs:
    fn = schema[f].metric_fn
    prepare = getattr(fn, "resampling", None)
    if prepare is not None:
      empty = schema[f].empty()
      gold, mapped, fn = prepare([t[f] for t in targets], [p.get(f, empty) for p in predictions])
      for rows, values in ((targets, gold), (predictions, mapped)):
        for row, value in zip(rows, values):
          row[f] = value
    fns[f] = fn
  return targets, predictions, functools.partial(_score_fields, schema=schema, outputs=outputs,
                                                 fns=fns)


@dataclasses.dataclass(frozen=True)
class Source:
  """What seqio.FunctionDataSource holds: the SeqIO task's `dataset_fn` and its splits."""
  dataset_fn: Callable
  splits: Sequence[str]


@dataclasses.dataclass(frozen=True)
class PlainTask:
  """What a SeqIO task of `factory.arrow_task` holds, less its vocabulary and tf.data.

  `source` is that task's source function, which only SeqIO calls: `examples` reads the
  same records into the same text without tf.data.
  """
  name: str
  read_split: Callable[[str], Iterable[dict]]
  to_example: Callable[[dict], dict[str, str]]
  postprocess_fn: Callable
  metric_fns: tuple[Callable, ...]
  source: Source

  @property
  def splits(self) -> Sequence[str]:
    return self.source.splits

  def examples(self, split: str, limit: int | None = None) -> list[dict[str, str]]:
    """The split's examples as the SeqIO source lays them out: {"inputs", "targets", ...};
    the first `limit` only (None: all), as the job's `num_examples` takes them, so a
    job over a few examples does not lay out the whole split."""
    return list(itertools.islice(self.iter_examples(split), limit))

  def iter_examples(self, split: str) -> Iterator[dict[str, str]]:
    """The split's examples one at a time, laid out as `examples` lays them out."""
    return map(self.to_example, self.read_split(split))

  def score(self, examples: Sequence[dict[str, str]], predictions: Sequence[str]) -> dict:
    """The task's metrics of `predictions` (decoded text), as seqio.Evaluator computes
    them: targets and predictions postprocessed, then each metric fn."""
    targets = [self.postprocess_fn(ex["targets"], example=ex, is_target=True) for ex in examples]
    parsed = [self.postprocess_fn(p, example=ex, is_target=False)
              for p, ex in zip(predictions, examples, strict=True)]
    return {k: v for fn in self.metric_fns for k, v in fn(targets, parsed).items()}


def arrow(name: str, *, schema: Schema, inputs: Sequence[str], outputs: Sequence[str],
          lang: str, read_split: Callable[[str], Iterable[dict]], splits: Sequence[str] = (),
          metric_fns: Sequence[Callable] | None = None, postprocess_fn: Callable | None = None,
          to_example: Callable[[dict], dict] | None = None,
          extra_features: Sequence[str] = (), prompt: str | None = None) -> PlainTask:
  """The task `inputs -> outputs` over `schema` records (`factory.arrow_task`'s arguments).

  Defaults: the arrow layout (`prompt` replacing its prompt text), `parse_output`, and
  `field_metrics` where an output field has a metric.
  """
  if lang not in layout.LANGS:
    raise ValueError(f"lang must be one of {layout.LANGS}, got {lang!r}")
  inputs, outputs = schema.check(inputs, "inputs"), schema.check(outputs, "outputs")
  for f in inputs + outputs:
    schema[f].label(lang)  # a clear error for a field without a label in `lang`
  if to_example is None:
    to_example = functools.partial(layout.example, schema, inputs=inputs, outputs=outputs,
                                   lang=lang, prompt_text=prompt)
  elif prompt is not None:
    raise ValueError(f"task {name!r}: give either prompt= or to_example=, not both "
                     "(a custom to_example writes its own inputs)")
  if postprocess_fn is None:
    postprocess_fn = functools.partial(parse_output, schema=schema, outputs=outputs, lang=lang)
  if metric_fns is None:
    has_metric = any(schema[f].metric_fn is not None for f in outputs)
    metric_fns = [field_metrics(schema, outputs)] if has_metric else []
  source = sources.records_source(read_split, splits, to_example=to_example,
                                  extra_features=extra_features, make_source=Source)
  return PlainTask(name, read_split, to_example, postprocess_fn, tuple(metric_fns), source)
