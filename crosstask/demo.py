"""The main job on the bundled CSL sample (`make demo`), from file to metric.

`python -m crosstask.demo` runs all five steps; `train_and_evaluate` is the
training step alone (any gin file and bindings), for notebooks and tests.

1. Data: the bundled sample (`crosstask/data/sample`, laid out like the
   official root), whatever $CROSSTASK_DATA_DIR says, so the demo is the same
   on every machine.
2. Vocabulary: a SentencePiece model trained on the sample's train split by
   `python -m crosstask.tasks.train_vocab` (about one piece per Chinese
   character, a third of the byte vocabulary's length).
3. SeqIO datasets for a few arrow tasks; two tokenized examples each.
4. Extractive baselines scored through each task's own postprocessor and metric
   functions.
5. A tiny T5 1.1-style model trained by the runtime for a few hundred CPU steps
   on 学科->门类 (a paper's category from its discipline), decoded and scored with
   the same metrics, and the results table (`crosstask.results`, with 95%
   intervals) with the majority-class baseline beside it, drawn as curves and
   bars into `results.png`. The discipline decides the category, so a tiny model
   learns it from 100 papers in a minute, clearly above the majority guess even on
   30 validation papers, disciplines it never saw included (`...工程` is 工学);
   a category from a title or abstract, like titles and keywords, needs a
   pretrained model (the line under the table says what one reaches).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Sequence

import gin

from crosstask import paths
from crosstask import records
from crosstask import startup
from crosstask import tracing
from crosstask import vocabularies
from crosstask.runtime.config import platform

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Arrow tasks shown by the demo: summarization, keywords, classification, many-to-many.
DEMO_TASKS = (
    (("abstract",), ("title",)),
    (("abstract",), ("keywords",)),
    (("discipline",), ("category",)),
    (("abstract",), ("discipline",)),
    (("abstract",), ("title", "keywords")),
)
SEQUENCE_LENGTH = {"inputs": 1024, "targets": 256}


def _task(inputs, outputs, lang="zh", vocabulary=None):
  """The registered CSL task tokenized with `vocabulary` (bytes when None)."""
  import seqio  # pylint: disable=g-import-not-at-top
  from crosstask import vocabularies  # pylint: disable=g-import-not-at-top
  from crosstask.tasks import csl  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.csl import tasks as csl_tasks  # pylint: disable=g-import-not-at-top
  if vocabulary is not None:
    csl.register(vocabulary)
  name = csl_tasks.task_name(inputs, outputs, lang)
  return seqio.get_mixture_or_task(vocabularies.task_name(name, vocabulary or vocabularies.get()))


def show_examples(task, split: str = "validation", num: int = 2) -> None:
  """Prints `num` tokenized examples: ids (head) and decoded text."""
  vocab = task.output_features["targets"].vocabulary
  ds = tracing.without_autograph(task.get_dataset, SEQUENCE_LENGTH, split=split, shuffle=False)
  print(f"== {task.name} ({split})")
  for ex in ds.take(num).as_numpy_iterator():
    for key in ("inputs", "targets"):
      ids = ex[key].tolist()
      print(f"  {key:<7} ids[:16]={ids[:16]} ... ({len(ids)} ids)")
      print(f"          text={vocab.decode(ids)[:120]}")


# A baseline row's keys that are not metrics: what it is, and what it predicted (the
# results table resamples those predictions for the baseline's 95% interval).
NOT_METRICS = ("task", "baseline", "examples", "outputs")


def baseline_rows(split: str = "validation", train_split: str = "train",
                  lang: str = "zh", vocabulary=None) -> list[dict]:
  """One row per demo task: {'task', 'baseline', 'examples', 'outputs', **metrics}, where
  'outputs' holds the postprocessed targets, the raw predictions and the postprocessed ones."""
  from crosstask.tasks.csl import baselines  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.csl import readers  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.csl import tasks as csl_tasks  # pylint: disable=g-import-not-at-top
  eval_records = list(readers.read_records(csl_tasks.SPLIT_FILES[split]))
  try:
    train_records = list(readers.read_records(csl_tasks.SPLIT_FILES[train_split]))
    majority_from = train_split
  except FileNotFoundError:  # official data ships no joined train split
    train_records, majority_from = eval_records, split
  model = baselines.ExtractiveBaseline(train_records)
  kinds = {"title": "lead", "keywords": "n-gram", "category": f"majority({majority_from})",
           "discipline": f"majority({majority_from})", "abstract": "copy"}
  rows = []
  for inputs, outputs in DEMO_TASKS:
    task = _task(inputs, outputs, lang, vocabulary)
    ds = tracing.without_autograph(task.get_dataset, SEQUENCE_LENGTH, split=split, shuffle=False)
    targets = [task.postprocess_fn(ex["targets_pretokenized"].decode("utf-8"), is_target=True)
               for ex in ds.as_numpy_iterator()]
    if len(targets) != len(eval_records):
      raise RuntimeError(f"{task.name}: {len(targets)} examples but {len(eval_records)} records")
    raw = [model.predict(r, inputs, outputs, lang) for r in eval_records]
    predictions = [task.postprocess_fn(text) for text in raw]
    scores = {}
    for fn in task.metric_fns:
      scores.update(fn(targets, predictions))
    rows.append({"task": vocabularies.base_task_name(task.name),
                 "baseline": "+".join(kinds[f] for f in outputs), "examples": len(targets),
                 "outputs": (targets, raw, predictions), **scores})
  return rows


def format_rows(rows: list[dict]) -> str:
  lines = []
  for row in rows:
    metrics = "  ".join(f"{k}={v:.1f}" for k, v in row.items() if k not in NOT_METRICS)
    lines.append(f"{row['task']:<40} {row['baseline']:<22} n={row['examples']:<5} {metrics}")
  return "\n".join(lines)


# The sample's train split has ~1,600 distinct characters; SentencePiece needs
# room for all of them (with character_coverage 0.9995) plus some merges.
VOCAB_SIZE = 2400
VOCAB_TASK = "csl_zh_abstract_to_title_and_keywords_and_category_and_discipline"
TRAIN_FIELDS = (("discipline",), ("category",))
TRAIN_TASK = "csl_zh_discipline_to_category"
TRAIN_LENGTHS = {"inputs": 24, "targets": 8}  # disciplines are <= 16 pieces, categories 1-3


def train_vocabulary(output_dir: pathlib.Path) -> pathlib.Path:
  """Trains the demo's SentencePiece model with the project's own command."""
  prefix = output_dir / "vocab" / "csl_sample"
  if not prefix.with_suffix(".model").exists():
    prefix.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, paths.DATA_DIR_ENV: str(paths.SAMPLE_DIR)}
    # Its console is TensorFlow's start-up and SentencePiece's progress: shown on failure.
    done = subprocess.run([sys.executable, "-m", "crosstask.tasks.train_vocab",
                           f"--task={VOCAB_TASK}", "--split=train",
                           f"--vocab_size={VOCAB_SIZE}", f"--output={prefix}"],
                          env=env, check=False, capture_output=True, text=True)
    if done.returncode:
      raise SystemExit(f"crosstask.tasks.train_vocab failed:\n{done.stderr[-3000:]}")
  return prefix.with_suffix(".model")


DEMO_GIN = "csl/demo_tiny.gin"


def train_and_evaluate(model_dir: str | os.PathLike, *, steps: int = 300,
                       task: str = "csl_zh_abstract_to_title",
                       bindings: Sequence[str] = (), gin_file: str = DEMO_GIN,
                       data_dir: str | os.PathLike = paths.SAMPLE_DIR) -> dict:
  """Trains `steps` steps into `model_dir` with the runtime; returns losses, metrics and paths.

  A second call on the same directory resumes (or returns at once when done).
  The validation split is decoded at the last step and scored with the task's
  metric functions; these land in `<model_dir>/inference_eval/metrics.jsonl`.
  Data come from `data_dir` (the bundled sample unless told otherwise).
  """
  from crosstask.runtime.config import gin_utils  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.jobs import train_lib  # pylint: disable=g-import-not-at-top
  model_dir = os.fspath(model_dir)
  with paths.use_data_dir(data_dir):
    gin.clear_config()
    try:
      gin_utils.parse([gin_file], [f"MODEL_DIR={model_dir!r}", f"TRAIN_STEPS={int(steps)}",
                                   f"EVAL_PERIOD={int(steps)}", f"MIXTURE_OR_TASK_NAME={task!r}",
                                   *bindings])
      step, train_metrics = train_lib.train()
    finally:
      gin.clear_config()
  metrics_file = os.path.join(model_dir, "inference_eval", "metrics.jsonl")
  evals = {}
  if os.path.exists(metrics_file):
    evals = {vocabularies.base_task_name(task): dict(r.metrics)  # any vocabulary's name
             for task, r in records.at_step(records.read(metrics_file), step).items()}
  return {"model_dir": model_dir, "step": step, "train_metrics": train_metrics,
          "eval_metrics": evals, "metrics_file": metrics_file, "tensorboard_dir": model_dir}


def train_model(output_dir: pathlib.Path, steps: int, vocab_file: pathlib.Path,
                vocab_size: int) -> dict:
  """Trains and evaluates the tiny model on TRAIN_TASK; train_and_evaluate's result."""
  embeddings = -(-vocab_size // 8) * 8
  return train_and_evaluate(
      str(output_dir / "model"), steps=steps, task=TRAIN_TASK,
      bindings=[f"NUM_EMBEDDINGS={embeddings}", f"TASK_FEATURE_LENGTHS={TRAIN_LENGTHS!r}",
                f"VOCABULARY_PATH={str(vocab_file)!r}"])


def write_baseline_record(output_dir: pathlib.Path, row: dict, vocabulary) -> pathlib.Path:
  """The baseline's scores as a metrics record (step 0), so the results table reads them,
  and its predictions as an eval's inference log beside it, so its cells get intervals."""
  from crosstask.results import intervals  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.predict import fingerprint  # pylint: disable=g-import-not-at-top
  folder = output_dir / "baseline"
  metrics_file = folder / records.FILENAME
  if metrics_file.exists():
    metrics_file.unlink()  # one record per demo run
  task = _task(*TRAIN_FIELDS, vocabulary=vocabulary)
  intervals.write_log(folder, task.name, 0, *row["outputs"])
  metrics = {k: v for k, v in row.items() if k not in NOT_METRICS}
  examples = tracing.without_autograph(task.get_dataset, None, split="validation",
                                       shuffle=False, num_epochs=1, use_cached=False)
  records.append(folder, [records.Record(0, task.name, metrics, fingerprint.fingerprint(task),
                                         source=f"baseline:{row['baseline']}",
                                         split="validation",
                                         data=fingerprint.data_digest(
                                             examples.as_numpy_iterator()))])
  return folder


def expected_line() -> str:
  """What a real run reaches on the same kind of task, from the CSL paper's Table 9."""
  from crosstask.tasks.csl import paper_tables  # pylint: disable=g-import-not-at-top
  cell = paper_tables.TABLE_9[(8, "T5-base")]
  few, meta = cell["few"]["2-1"], cell["+meta"]["2-1"]
  return (f"A real run, a pretrained T5-base, reaches {few[1]:.1f} macro-F1 ({few[0]:.1f} "
          f"accuracy) on category from the abstract with only 8 training papers, {meta[1]:.1f} "
          f"({meta[0]:.1f}) after meta-training on three related tasks (CSL paper, Table 9, "
          "partition 2-1); macro-F1 is the number a majority guess cannot reach.")


def results_table(model_dir: pathlib.Path, baseline_dir: pathlib.Path, steps: int):
  """The results table (crosstask.results) of the trained model and the baseline."""
  from crosstask.results import table  # pylint: disable=g-import-not-at-top
  result = table.build([model_dir, baseline_dir], all_metrics=True, paper="none",
                       tasks=rf"^{TRAIN_TASK}$")  # its column, any vocabulary's copy
  labels = {"model": f"tiny T5 ({steps} steps)", "baseline": "majority class (train)"}
  for row in result.rows:
    row.label = labels.get(row.label, row.label)
  return result


def beats_baseline(result) -> list[str]:
  """The columns in which the trained model's 95% interval lies wholly above the baseline's
  number (a mean above it can be luck on 30 papers), each with that interval."""
  model, baseline = result.rows[0], result.rows[-1]
  out = []
  for column in result.columns:
    ours, theirs = model.cells.get(column), baseline.cells.get(column)
    if ours and theirs and ours.get("ci95") and ours["ci95"][0] > theirs["mean"]:
      low, high = ours["ci95"]
      out.append(f"{column.header(None)} (95% interval [{low:.2f}, {high:.2f}] above "
                 f"{theirs['mean']:.2f})")
  return out


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(prog='python -m crosstask.demo',
                                   description=__doc__.splitlines()[0])
  parser.add_argument("--output_dir", default="demo_output", type=pathlib.Path)
  parser.add_argument("--steps", type=int, default=300, help="training steps of the tiny model")
  parser.add_argument("--skip_training", action="store_true")
  startup.add_verbose_flag(parser)
  args = parser.parse_args(argv)
  startup.quiet_startup(args.verbose)  # Before the task modules load TensorFlow.
  malloc = platform.prepare_host('train')  # Before TF's or JAX's threads allocate.
  if args.verbose:  # Nothing a newcomer acts on (the other entry points log it).
    print(f"Host malloc: {malloc}")
  started = time.time()
  with paths.use_data_dir(paths.SAMPLE_DIR):
    vocab_file = train_vocabulary(args.output_dir)
    # The tasks shown are CSL's registered for this vocabulary; the training run's
    # model gets the same one through VOCABULARY_PATH.
    vocab = vocabularies.get(vocab_file)
    from crosstask.tasks.csl import readers  # pylint: disable=g-import-not-at-top
    print(f"CSL data root: {readers.data_root()}\nVocabulary: {vocab_file}")
    for inputs, outputs in DEMO_TASKS:
      show_examples(_task(inputs, outputs, vocabulary=vocab))
    rows = baseline_rows(vocabulary=vocab)
    print("\nExtractive baselines (validation split, metrics 0-100):")
    print(format_rows(rows))
    if args.skip_training:
      return
    # Under the trained model's task name and vocabulary, so the fingerprints agree.
    baseline_row = next(r for r in rows if r["task"] == TRAIN_TASK)
    baseline_dir = write_baseline_record(args.output_dir, baseline_row, vocab)
    trained = train_model(args.output_dir, args.steps, vocab_file, vocab.vocab_size)
  result = results_table(pathlib.Path(trained["model_dir"]), baseline_dir, args.steps)
  print(f"\n学科->门类 (category from discipline) on the sample's validation split "
        f"({baseline_row['examples']} papers), python -m crosstask.results:\n")
  print(result.markdown())
  from crosstask.results import plots  # pylint: disable=g-import-not-at-top
  figure = plots.plot(plots.series(result), args.output_dir / "results.png")
  better = beats_baseline(result)
  print("\nThe trained model beats the baseline on: " + (", ".join(better) if better else
                                                       "nothing yet (train longer: --steps)"))
  print(expected_line())
  print(f"\nLearning curves and the table as bars: {figure}")
  print(f"Model, checkpoints and TensorBoard logs: {args.output_dir / 'model'}; "
        f"demo took {time.time() - started:.0f} s.")


if __name__ == "__main__":
  main()
