"""Scores a saved inference output again: the task's postprocessor and metrics, no model.

`crosstask.infer` writes `<task>-<split>.jsonl`, a line per example with its
position in the split (`index`), the decoded `prediction`, the model's log-
likelihood of it (`score`) and of the reference (`target_score`). Scoring reads
the split's examples again (the postprocessors need their extra fields: CMRC's
passage and references, the options of a multiple-choice question, a rank
twin's question and option ids, LOT's references) and calls each metric the way
`seqio.Evaluator` does: prediction metrics with the postprocessed predictions,
score metrics (rank classification) with `target_score`, aux metrics with
`score`. The record it appends to `metrics.jsonl` is the eval job's, with
`source` naming the file it came from. No JAX: examples come from tf.data.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import inspect
import json
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crosstask import records
from crosstask.text import feature_text
from crosstask import tracing
from crosstask import vocabularies
from crosstask.results import bootstrap
from crosstask.runtime.config import saved_run
from crosstask.runtime.data import pipeline

@dataclasses.dataclass(frozen=True)
class Inferences:
  """A saved inference output: one entry per scored example, ordered by `index`."""
  path: pathlib.Path
  task: str
  split: str
  lines: list[dict]
  step: int | None
  fingerprint: str | None


def parse_name(path: str | os.PathLike) -> tuple[str, str]:
  """(task, split) from `<task>-<split>.jsonl`, the name infer gives its files."""
  parts = records.inference_file(path)
  if parts is None:
    raise ValueError(f"{path}: not an inference output name (expected <task>-<split>.jsonl); "
                     "name the task and split with --task and --split")
  return parts


def _seqio_log_line(line: Mapping) -> dict | None:
  """A line of the inference log seqio's Evaluator keeps beside an eval's metrics
  (`<task>-<step:06d>.jsonl`: input, target, output, prediction, score) in infer's
  terms, or None for another kind of line. Its `output` is the decoded text before
  postprocessing, its `score` the target's likelihood (rank classification)."""
  if "index" in line or "input" not in line or not ("output" in line or "prediction" in line):
    return None
  out = {"prediction": line["output"] if "output" in line else line["prediction"]}
  if "score" in line:
    out["target_score"] = line["score"]
  if "aux_scores" in line:
    out["score"] = line["aux_scores"]
  return out


def _beside(path: pathlib.Path, task: str, step: int) -> records.Record | None:
  """The eval's own record of `task` at `step` in the metrics.jsonl beside its log; for
  a subset's log (in `first_<N>/`) the record of `<split>[:N]` in the folder above."""
  subset = records.subset_of_log_dir(path.parent.name)
  file = records.log_owner(path) / records.FILENAME
  found = [r for r in records.read(file) if r.task == task and r.step == step
           and r.source == "eval"] if file.is_file() else []
  if subset:
    found = [r for r in found if records.subset_count(r.split) == subset] or found
  return found[-1] if found else None


def read_inferences(path: str | os.PathLike, task: str | None = None,
                    split: str | None = None) -> Inferences:
  """The lines of an infer output or an eval's inference log, checked for what scoring needs.

  `task` may be a vocabulary copy's plain name (`--task csl_zh_title_to_category` for
  `csl_zh_title_to_category.csl_sample-validation.jsonl`): the file's own name is kept.
  """
  path = pathlib.Path(os.fspath(path))
  named_task, named_split = parse_name(path) if task is None or split is None else (None, None)
  if task is None or (named_task and vocabularies.base_task_name(named_task) == task):
    task = named_task
  lines, steps, fingerprints = [], set(), set()
  seqio_log = False
  with open(path, encoding="utf-8") as f:
    for lineno, text in enumerate(f, start=1):
      if not text.strip():
        continue
      try:
        line = json.loads(text)
      except ValueError as e:
        raise ValueError(f"{path}:{lineno}: not JSON ({e})") from None
      logged = _seqio_log_line(line) if isinstance(line, dict) else None
      if logged is not None:  # a log's lines are the split's examples in order
        seqio_log, line = True, {**logged, "index": len(lines)}
      missing = [k for k in ("index", "prediction") if k not in line]
      if missing:
        raise ValueError(f"{path}:{lineno}: missing field(s) {missing}; infer writes index, "
                         "inputs, targets, prediction, score and target_score; an eval's "
                         "inference log input, target, output and prediction")
      line["_where"] = f"{path}:{lineno}"
      lines.append(line)
      if line.get("step") is not None:
        steps.add(int(line["step"]))
      if line.get("fingerprint"):
        fingerprints.add(line["fingerprint"])
  if not lines:
    raise ValueError(f"{path}: no predictions")
  if seqio_log:  # named <task>-<step>; the split and fingerprint are in the eval's record
    if named_split is None or not named_split.isdigit():
      raise ValueError(f"{path}: an eval's inference log is named <task>-<step>.jsonl")
    steps = {int(named_split)}
    record = _beside(path, task, int(named_split))
    if record is not None:
      fingerprints = {record.fingerprint} if record.fingerprint else set()
    split = split or (record.split if record else None)
    if split is None:
      raise ValueError(f"{path}: no eval record of {task!r} at step {int(named_split)} in the "
                       f"{records.FILENAME} beside it names the split; give it with --split")
  else:
    split = split or named_split
  lines.sort(key=lambda line: int(line["index"]))
  for before, line in zip(lines, lines[1:]):
    if int(line["index"]) == int(before["index"]):
      raise ValueError(f"{line['_where']}: example index {int(line['index'])} again (first at "
                       f"line {before['_where'].rsplit(':', 1)[1]}); a file holds one line an "
                       "example")
  return Inferences(path, task, split, lines, steps.pop() if len(steps) == 1 else None,
                    fingerprints.pop() if len(fingerprints) == 1 else None)


# What registers a file's task when neither --module nor the run's config says: every
# benchmark.
DEFAULT_MODULE = "crosstask.tasks.all"


def _run_macros(path: pathlib.Path) -> dict[str, str]:
  """The saved macros of the run that wrote `path`: infer's config beside it, or the
  training run's above its inference_eval/ folder (a subset's log is a folder deeper, in
  `first_<N>/`); empty where neither holds one."""
  owner = records.log_owner(path)
  for folder in (owner, owner.parent):
    saved = saved_run.saved_macros(folder)
    if saved:
      return saved
  return {}


def import_run_modules(named: Sequence[str] | None) -> tuple[list[str], str | None]:
  """Imports the modules a run's config names (its MIXTURE_OR_TASK_MODULE, maybe the
  researcher's own), and every benchmark where it names none or one cannot be imported
  from here. Returns (the modules imported, the one that could not be, or None)."""
  imported, failed = [], None
  for name in named or []:
    try:
      pipeline.import_tasks(name)
      imported.append(name)
    except pipeline.TaskConfigError:
      failed = name
  if failed or not imported:
    pipeline.import_tasks(DEFAULT_MODULE)
    imported.append(DEFAULT_MODULE)
  return imported, failed


# What a run's task module that `import_run_modules` could not import needs.
UNIMPORTABLE = ("cannot be imported from here (run from the folder that holds it, or add "
                "that folder to PYTHONPATH)")


def resolve_task(name: str, path: pathlib.Path, module: str | Sequence[str] | None = None,
                 vocabulary: str | None = None):
  """The registered task `name`; a vocabulary's copy (`<task>.<vocabulary>`, the name every
  non-byte run writes) is registered first with the run's vocabulary, as the runtime does."""
  import seqio  # pylint: disable=g-import-not-at-top
  if module:
    try:
      pipeline.import_tasks(module)
    except pipeline.TaskConfigError as e:
      raise ValueError(f"{path}: --module: {e}") from None
    modules, failed = pipeline.module_names(module), None
  else:
    modules, failed = import_run_modules(saved_run.task_modules(_run_macros(path)))
  base = vocabularies.base_task_name(name)
  if name not in seqio.TaskRegistry.names() and base != name:
    vocabulary = vocabulary or saved_run.bound(_run_macros(path), "VOCABULARY_PATH")
    if vocabulary is None:
      raise ValueError(f"{path}: task {name!r} is {base!r} tokenized with vocabulary "
                       f"{name[len(base) + 1:]!r}, and no VOCABULARY_PATH is in the config "
                       "beside the file or above it; give the .model file with --vocabulary")
    vocab = vocabularies.get(vocabulary)
    if vocabularies.task_name(base, vocab) != name:
      raise ValueError(f"{path}: {vocabulary} registers {base!r} as "
                       f"{vocabularies.task_name(base, vocab)!r}, not {name!r}")
    pipeline.register_vocabulary(modules, vocab)
  try:
    task = seqio.get_mixture_or_task(name)
  except ValueError:
    close = difflib.get_close_matches(name, seqio.TaskRegistry.names(), n=3, cutoff=0.6)
    raise ValueError(
        f"{path}: task {name!r} is registered by none of {', '.join(modules)}; "
        + (f"did you mean {' or '.join(map(repr, close))}? " if close else "")
        + (f"the run's config names {failed!r}, which {UNIMPORTABLE}" if failed else
           "give the module that registers it with --module (the run's "
           "MIXTURE_OR_TASK_MODULE)")) from None
  if not isinstance(task, seqio.Task):
    raise ValueError(f"{path}: {name!r} is a mixture; infer writes one file per task")
  return task


def _kind(metric_fn) -> str:
  """'predictions', 'scores' or 'aux': which model output a metric function takes."""
  params = tuple(inspect.signature(metric_fn).parameters)[:3]
  if params[:2] == ("targets", "scores"):
    return "scores"
  if params == ("targets", "predictions", "aux_values"):
    return "aux"
  return "predictions"


def examples(task, split: str, indices: Sequence[int], where: Sequence[str] = ()
             ) -> tuple[list[dict], bool]:
  """The split's examples at `indices`, as numpy dicts (the Evaluator's view of them), and
  whether the split holds an example past the last of them. `where`: the file and line of
  each index, for the error that names one past the split's end."""
  ds = tracing.without_autograph(task.get_dataset, None, split=split, shuffle=False,
                                 num_epochs=1, use_cached=False)
  wanted = set(indices)
  last = max(indices)
  found, size = {}, 0
  for i, ex in enumerate(ds.as_numpy_iterator()):
    size = i + 1
    if i > last:
      break
    if i in wanted:
      found[i] = ex
  missing = sorted(wanted - set(found))
  if missing:
    first = dict(zip(indices, where)).get(missing[0])
    raise ValueError(f"{first + ': ' if first else ''}example index {missing[0]} is past the "
                     f"end of task {task.name!r} split {split!r}, which holds {size} examples"
                     f"{f' ({len(missing)} indices are)' if len(missing) > 1 else ''}: is this "
                     "the split the predictions were made on?")
  return [found[i] for i in indices], size > last + 1


def covered_split(inferences: Inferences, holds_more: bool) -> str:
  """The split label the file's lines earn, as infer labels its files: the split where
  they are all of it, else 'validation[:n]' for its first n. A file named for the whole
  split that holds its first n only (an infer cut short, lines deleted at the end) is
  scored as the first n, with a note; an index skipped (lines lost within) is an error.
  `holds_more`: whether the split holds an example past the file's last."""
  indices = [int(line["index"]) for line in inferences.lines]
  skipped = sorted(set(range(indices[-1] + 1)) - set(indices))
  if skipped:
    raise ValueError(f"{inferences.path}: no line for example(s) {skipped[:5]} of the first "
                     f"{indices[-1] + 1} it indexes: lines were lost (infer writes a line an "
                     "example, from the first)")
  named = inferences.split
  got = records.subset_split(records.base_split(named), len(indices), whole=not holds_more)
  if got != named:
    print(f"note: {inferences.path} holds the first {len(indices)} examples of "
          f"{records.base_split(named)!r}: scored as {got!r}, not {named!r}")
  return got


@dataclasses.dataclass(frozen=True)
class ModelOutputs:
  """What a task's metric functions take, per example: postprocessed targets and
  predictions, the likelihood of each target (rank classification) and of each prediction."""
  targets: list
  predictions: list | None
  target_scores: np.ndarray | None
  scores: np.ndarray | None

  def __len__(self) -> int:
    return len(self.targets)

  def take(self, indices: Sequence[int]) -> "ModelOutputs":
    """The outputs of the examples at `indices` (repeats allowed: a bootstrap resample)."""
    pick = lambda xs: None if xs is None else (  # noqa: E731
        xs[np.asarray(indices)] if isinstance(xs, np.ndarray) else [xs[i] for i in indices])
    return ModelOutputs(pick(self.targets), pick(self.predictions), pick(self.target_scores),
                        pick(self.scores))


def outputs(task, lines: Sequence[Mapping], exs: Sequence[Mapping]) -> ModelOutputs:
  """A saved infer output's lines as the Evaluator hands them to the metric functions."""
  targets = [task.postprocess_fn(feature_text(ex["targets_pretokenized"]), example=ex,
                                 is_target=True)
             if "targets_pretokenized" in ex else
             task.postprocess_fn(task.output_features["targets"].vocabulary.decode(
                 [int(t) for t in ex["targets"]]), example=ex, is_target=True)
             for ex in exs]
  kinds = {_kind(fn) for fn in task.metric_fns}
  target_scores = None
  if "scores" in kinds:
    missing = [line["_where"] for line in lines if "target_score" not in line]
    if missing:
      raise ValueError(f"{missing[0]}: no 'target_score'; task {task.name!r} is scored by "
                       "the model's likelihood of each target (rank classification), "
                       "which only an infer run of this version writes")
    target_scores = np.array([float(line["target_score"]) for line in lines])
  predictions = None
  if kinds - {"scores"}:
    predictions = [task.postprocess_fn(line["prediction"], example=ex, is_target=False)
                   for line, ex in zip(lines, exs)]
  scores = np.array([float(line.get("score", np.nan)) for line in lines])
  return ModelOutputs(targets, predictions, target_scores, scores)


def require_same_examples(task, split: str, lines: Sequence[Mapping],
                          exs: Sequence[Mapping]) -> None:
  """Refuses infer lines whose inputs or targets are not the examples read again: a file
  inferred on other data (another CROSSTASK_DATA_DIR) or another task's file would be
  scored against references its predictions never saw."""
  for line, ex in zip(lines, exs):
    for key in ("inputs", "targets"):
      raw = ex.get(f"{key}_pretokenized")
      if key in line and raw is not None and feature_text(raw) != line[key]:
        raise ValueError(
            f"{line['_where']}: its {key} {line[key][:40]!r} are not those of example "
            f"{line['index']} of {task.name!r} split {split!r} as read now "
            f"({feature_text(raw)[:40]!r}): the file was inferred on other data "
            "(CROSSTASK_DATA_DIR) or is another task's or split's")


def require_labels(task, split: str, exs: Sequence[Mapping], path: str | os.PathLike) -> None:
  """Refuses a split without labels (`evaluation.has_labels`: CLUE's and FewCLUE's `test`,
  NLPCC's test), which would score 0 where nothing was measured."""
  from crosstask.runtime.predict import evaluation  # pylint: disable=g-import-not-at-top
  if not evaluation.has_labels(exs):
    raise ValueError(
        f"{path}: task {task.name!r} split {split!r} carries no labels (no target, and "
        "for rank classification no option marked right): there is nothing to score. A "
        "test split's predictions go to its leaderboard (CLUE, FewCLUE: "
        "python -m crosstask.clue_submissions)")


def _call(fn, out: ModelOutputs) -> Mapping[str, Any]:
  """`fn`'s metrics over `out`, called as the Evaluator calls a metric function of its kind."""
  kind = _kind(fn)
  if kind == "scores":
    return fn(out.targets, out.target_scores)
  if kind == "aux":
    return fn(out.targets, out.predictions, {"scores": out.scores})
  return fn(out.targets, out.predictions)


def metrics(task, out: ModelOutputs) -> dict[str, float]:
  """The task's scalar metrics over `out`, each metric function called as the Evaluator does."""
  return _scalars(task, [(fn, out) for fn in task.metric_fns])


def _scalars(task, calls: Sequence[tuple[Any, ModelOutputs]]) -> dict[str, float]:
  found: dict[str, Any] = {}
  for fn, out in calls:
    for key, value in _call(fn, out).items():
      if key in found:
        raise ValueError(f"duplicate metric key {key!r} in task {task.name!r}")
      found[key] = value
  scalars = {}
  for key, value in found.items():
    value = getattr(value, "value", value)
    try:
      arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
      continue
    if arr.ndim == 0:
      scalars[key] = float(arr)
  return scalars


def compute(task, lines: Sequence[Mapping], exs: Sequence[Mapping]) -> dict[str, float]:
  """The task's metrics over saved predictions and scores, as seqio.Evaluator computes them."""
  return metrics(task, outputs(task, lines, exs))


def example_seed(out: ModelOutputs) -> list[int]:
  """The bootstrap seed of a set of examples: SEED mixed with a hash of its targets.

  One set of predictions gets one interval, whoever resamples it (`crosstask.score`'s
  record or the results table from the inference log). Outputs on the same examples (a
  task's prompt variants, FewCLUE's k runs scored on one test set) draw alike, so an
  aggregate over them resamples them paired; other tasks' examples are drawn
  independently of each other.
  """
  text = json.dumps(out.targets, sort_keys=True, ensure_ascii=False, default=str)
  return [bootstrap.SEED, int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)]


def replicates(task, out: ModelOutputs, resamples: int = bootstrap.RESAMPLES,
               scores: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
  """Each of the task's metrics on `resamples` bootstrap resamples of the examples of `out`,
  drawn with the examples' own seed (`example_seed`); `scores`: `metrics(task, out)`,
  where the caller has them."""
  import warnings  # pylint: disable=g-import-not-at-top
  with warnings.catch_warnings():  # one-example resamples make sklearn warn about empty classes
    warnings.simplefilter("ignore")
    calls = [_for_resampling(fn, out) for fn in task.metric_fns]
    return bootstrap.replicates(
        lambda idx: _scalars(task, [(fn, o.take(idx)) for fn, o in calls]), len(out),
        resamples, example_seed(out), scores)


def _for_resampling(fn, out: ModelOutputs) -> tuple[Any, ModelOutputs]:
  """The metric function a bootstrap draw calls, and the outputs it draws from: `fn` and
  `out`, or where `fn` reads a property of the whole set (CSL's gold label set, which its
  official accuracy maps predictions onto), what its `resampling(targets, predictions)`
  gives: the outputs prepared once over the whole set and the metric of a draw of them."""
  prepare = getattr(fn, "resampling", None)
  if prepare is None or out.predictions is None:
    return fn, out
  targets, predictions, draw_fn = prepare(out.targets, out.predictions)
  return draw_fn, dataclasses.replace(out, targets=list(targets), predictions=list(predictions))


def intervals(task, out: ModelOutputs, resamples: int = bootstrap.RESAMPLES,
              scores: Mapping[str, float] | None = None) -> dict[str, bootstrap.Interval]:
  """The 95% bootstrap interval of each of the task's metrics over the examples of `out`
  (`scores`: their values over all of it, where the caller has them)."""
  return {k: bootstrap.percentiles(v)
          for k, v in replicates(task, out, resamples, scores).items()}


def score_file(path: str | os.PathLike, *, task_name: str | None = None,
               split: str | None = None, step: int | None = None,
               output_dir: str | os.PathLike | None = None,
               module: str | Sequence[str] | None = None, vocabulary: str | None = None,
               resamples: int = bootstrap.RESAMPLES) -> records.Record:
  """Scores one infer output and appends the record to `<output_dir>/metrics.jsonl`
  (by default beside the file, or the subset log's eval records above `first_<N>/`),
  unless its last record of the task, step and split says the same already
  (`records.recorded`): a rerun adds no duplicate line.

  The task is looked up in `module` where given, else in the modules the config of the run
  that wrote the file names (`import_run_modules`).

  The record carries each metric's 95% interval from `resamples` bootstrap draws.
  """
  from crosstask.runtime.predict import fingerprint  # pylint: disable=g-import-not-at-top
  inferences = read_inferences(path, task_name, split)
  task = resolve_task(inferences.task, pathlib.Path(os.fspath(path)), module, vocabulary)
  if step is None:
    step = inferences.step
  if step is None:
    raise ValueError(f"{path}: the lines carry no checkpoint step; give it with --step")
  indices = [int(line["index"]) for line in inferences.lines]
  exs, holds_more = examples(task, records.base_split(inferences.split), indices,
                             [line["_where"] for line in inferences.lines])
  inferences = dataclasses.replace(inferences, split=covered_split(inferences, holds_more))
  require_same_examples(task, inferences.split, inferences.lines, exs)
  out = outputs(task, inferences.lines, exs)
  require_labels(task, inferences.split, exs, path)
  scores = metrics(task, out)
  ci95 = intervals(task, out, resamples, scores) if resamples > 0 else None
  print_fingerprint = fingerprint.fingerprint(task)
  if inferences.fingerprint and inferences.fingerprint != print_fingerprint:
    print(f"note: {path} was inferred under task fingerprint {inferences.fingerprint}; "
          f"scored under {print_fingerprint} (the task's definition changed since)")
  record = records.Record(int(step), task.name, scores, print_fingerprint,
                          source=f"score:{pathlib.Path(path).name}", split=inferences.split,
                          ci95=ci95, data=fingerprint.data_digest(
                              exs[i] for i in np.argsort(indices, kind="stable")))
  destination = pathlib.Path(output_dir) if output_dir else records.log_owner(path)
  if (same := records.recorded(destination, record)) is not None:
    print(f"note: {same.where} already records these numbers; nothing appended")
  else:
    records.append(destination, [record])
  return record


# --------------------------------------------------------------- SciRepEval embeddings


def flatten(result: Any, prefix: str = "") -> dict[str, float]:
  """An official SciRepEval result ({"complete": {...}, "few_shot": [...]}) as flat keys."""
  if isinstance(result, Mapping):
    items = result.items()
  elif isinstance(result, (list, tuple)):
    items = enumerate(result)
  else:
    return {prefix: float(result)} if isinstance(result, (int, float)) and not isinstance(
        result, bool) else {}
  out = {}
  for key, value in items:
    out.update(flatten(value, f"{prefix}/{key}" if prefix else str(key)))
  return out


def unflatten(metrics: Mapping[str, float]) -> Any:
  """The inverse of `flatten` (numeric path parts become list positions)."""
  root: dict = {}
  for key, value in metrics.items():
    node = root
    parts = key.split("/")
    for part in parts[:-1]:
      node = node.setdefault(part, {})
    node[parts[-1]] = value

  def lists(node):
    if not isinstance(node, dict):
      return node
    if node and all(k.isdigit() for k in node):
      return [lists(node[k]) for k in sorted(node, key=int)]
    return {k: lists(v) for k, v in node.items()}
  return lists(root)


SCIREPEVAL_PREFIX = "scirepeval:"


def score_embeddings(task: str, embeddings: str | os.PathLike, data_dir: str | os.PathLike,
                     *, step: int, output_dir: str | os.PathLike, backend: str = "sklearn",
                     few_shot_runs: bool = True, n_jobs: int = 1) -> records.Record:
  """A SciRepEval task scored from saved embeddings (the official scorer), as a record."""
  from crosstask.tasks.scirepeval import benchmark, score  # pylint: disable=g-import-not-at-top
  spec = benchmark.get(task)
  result = score.score_task(spec, embeddings, data_dir, backend=backend, n_jobs=n_jobs,
                            float16=spec.cached, few_shot_runs=few_shot_runs)
  if isinstance(result, Mapping) and result.get("not_run"):
    raise ValueError(f"SciRepEval task {spec.name!r} is not scored here: {result['reason']}")
  record = records.Record(int(step), SCIREPEVAL_PREFIX + spec.name, flatten(result),
                          source=f"score:{pathlib.Path(embeddings).name}:{backend}",
                          split="test")
  records.append(output_dir, [record])
  return record
