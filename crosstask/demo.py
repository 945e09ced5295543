"""Demo: CSL arrow tasks as SeqIO datasets, scored with extractive baselines.

`python -m crosstask.demo` uses $CROSSTASK_DATA_DIR if set, else the bundled
sample. It prints two tokenized examples per task (ids and decoded text) and a
table of baseline scores computed through each task's own postprocessor and
metric functions, so the numbers are the ones a trained model would be
compared against.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Arrow tasks shown by the demo: summarization, keywords, classification, many-to-many.
DEMO_TASKS = (
    (("abstract",), ("title",)),
    (("abstract",), ("keywords",)),
    (("title",), ("category",)),
    (("abstract",), ("discipline",)),
    (("abstract",), ("title", "keywords")),
)
SEQUENCE_LENGTH = {"inputs": 1024, "targets": 256}


def _task(inputs, outputs, lang="zh"):
  from crosstask.tasks.csl import tasks as csl_tasks  # pylint: disable=g-import-not-at-top
  return csl_tasks.csl_task(inputs, outputs, lang)


def show_examples(task, split: str = "validation", num: int = 2) -> None:
  """Prints `num` tokenized examples: ids (head) and decoded text."""
  vocab = task.output_features["targets"].vocabulary
  ds = task.get_dataset(SEQUENCE_LENGTH, split=split, shuffle=False)
  print(f"== {task.name} ({split})")
  for ex in ds.take(num).as_numpy_iterator():
    for key in ("inputs", "targets"):
      ids = ex[key].tolist()
      print(f"  {key:<7} ids[:16]={ids[:16]} ... ({len(ids)} ids)")
      print(f"          text={vocab.decode(ids)[:120]}")


def baseline_rows(split: str = "validation", train_split: str = "train",
                  lang: str = "zh") -> list[dict]:
  """One row per demo task: {'task', 'baseline', 'examples', **metrics}."""
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
  rows = []
  for inputs, outputs in DEMO_TASKS:
    task = _task(inputs, outputs, lang)
    ds = task.get_dataset(SEQUENCE_LENGTH, split=split, shuffle=False)
    targets = [task.postprocess_fn(ex["targets_pretokenized"].decode("utf-8"), is_target=True)
               for ex in ds.as_numpy_iterator()]
    if len(targets) != len(eval_records):
      raise RuntimeError(f"{task.name}: {len(targets)} examples but {len(eval_records)} records")
    predictions = [task.postprocess_fn(model.predict(r, inputs, outputs, lang))
                   for r in eval_records]
    scores = {}
    for fn in task.metric_fns:
      scores.update(fn(targets, predictions))
    kinds = {"title": "lead", "keywords": "n-gram", "category": f"majority({majority_from})",
             "discipline": f"majority({majority_from})", "abstract": "copy"}
    rows.append({"task": task.name, "baseline": "+".join(kinds[f] for f in outputs),
                 "examples": len(targets), **scores})
  return rows


def format_rows(rows: list[dict]) -> str:
  lines = []
  for row in rows:
    metrics = "  ".join(f"{k}={v:.1f}" for k, v in row.items()
                        if k not in ("task", "baseline", "examples"))
    lines.append(f"{row['task']:<40} {row['baseline']:<22} n={row['examples']:<5} {metrics}")
  return "\n".join(lines)


def main() -> None:
  from crosstask.tasks.csl import readers  # pylint: disable=g-import-not-at-top
  print(f"CSL data root: {readers.data_root()}")
  for inputs, outputs in DEMO_TASKS:
    show_examples(_task(inputs, outputs))
  print("\nExtractive baselines (validation split, metrics 0-100):")
  print(format_rows(baseline_rows()))


if __name__ == "__main__":
  main()
