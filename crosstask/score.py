"""`python -m crosstask.score`: a saved inference output scored again, without a model.

  python -m crosstask.score /runs/infer/clue_afqmc-validation.jsonl [--output_dir DIR]
  python -m crosstask.score /runs/model/inference_eval/clue_afqmc-000300.jsonl
  python -m crosstask.score --scirepeval_task fos --embeddings E.jsonl --data DIR --step 1000

The first forms apply the task's postprocessor and metric functions to the
predictions and scores `crosstask.infer` wrote, or to those an eval (a training
run's included) logged, and append the eval job's record (step, task, metrics
with their 95% intervals, task fingerprint) to `metrics.jsonl` (beside the file,
or a subset's log in `first_<N>/` beside its eval's records above it, unless
--output_dir says otherwise), so a metric fix or a new metric reaches
old runs without a model or an accelerator. A task tokenized with a SentencePiece
vocabulary (`<task>.<vocabulary>-...`) is registered with the one the run's config
names. The second scores SciRepEval
embeddings with the official scorer into the same kind of record.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
from collections.abc import Sequence

from crosstask import records
from crosstask import startup


def _parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog="python -m crosstask.score",
                              description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                              epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("predictions", nargs="*", help="<task>-<split>.jsonl files crosstask.infer wrote")
  p.add_argument("--task", help="task name (default: from the file name)")
  p.add_argument("--split", help="split name (default: from the file name)")
  p.add_argument("--step", type=int, help="checkpoint step (default: the one infer recorded)")
  p.add_argument("--output_dir", help="where metrics.jsonl goes (default: beside each file; "
                 "a log in first_<N>/: the folder above)")
  p.add_argument("--module", help="module registering the task (default: the "
                 "MIXTURE_OR_TASK_MODULE of the run's config beside the file or above it, "
                 "else every benchmark's)")
  p.add_argument("--vocabulary", help="SentencePiece .model of a `<task>.<vocabulary>` file "
                 "(default: VOCABULARY_PATH of the run's config)")
  p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                 help="resamples of the examples for each metric's 95%% interval (0: none)")
  p.add_argument("--scirepeval_task", help="SciRepEval task (official name or config)")
  p.add_argument("--embeddings", help='SciRepEval: JSONL of {"doc_id", "embedding"}')
  p.add_argument("--data", help="SciRepEval: the task's test directory (or a root of them)")
  p.add_argument("--backend", default="sklearn", help="SciRepEval probe backend")
  p.add_argument("--no_few_shot", action="store_true", help="SciRepEval: skip few-shot runs")
  startup.add_verbose_flag(p)
  return p


def _is_metrics_file(path: str) -> bool:
  """Whether `path` is a metrics log, crosstask's (`metrics.jsonl`) or SeqIO's
  (`<task>-metrics.jsonl`), which sits beside the predictions an eval logged."""
  name = pathlib.Path(path).name
  return name == records.FILENAME or name.endswith("-metrics.jsonl")


def _check_output_dir(output_dir: str | None) -> None:
  """Refuses an --output_dir that is a file: records would be appended to it, whatever
  it holds, after all the scoring work."""
  if output_dir and os.path.exists(output_dir) and not os.path.isdir(output_dir):
    raise ValueError(f"--output_dir {output_dir} is a file, not a folder (metrics.jsonl "
                     "goes into it)")


def main(argv: Sequence[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  startup.quiet_startup(args.verbose)  # Before the task modules load TensorFlow.
  try:
    _check_output_dir(args.output_dir)
    from crosstask.results import rescoring  # pylint: disable=g-import-not-at-top
    if args.scirepeval_task:
      if not (args.embeddings and args.data and args.output_dir and args.step is not None):
        raise ValueError("--scirepeval_task needs --embeddings, --data, --output_dir and --step")
      rec = rescoring.score_embeddings(args.scirepeval_task, args.embeddings, args.data,
                                       step=args.step, output_dir=args.output_dir,
                                       backend=args.backend,
                                       few_shot_runs=not args.no_few_shot)
      print(f"{rec.task} step {rec.step}: {dict(rec.metrics)}")
      return 0
    if not args.predictions:
      raise ValueError("give inference files, or --scirepeval_task with --embeddings")
    files, skipped = [], []
    for path in args.predictions:
      (skipped if _is_metrics_file(path) else files).append(path)
    if len(files) > 1 and (args.task or args.split):
      raise ValueError("--task/--split name one file's task; give one file with them")
    if not files:
      raise ValueError(f"{skipped[0]}: a metrics file (what a score or an eval wrote), not "
                       "predictions; give the <task>-<split>.jsonl file infer wrote or the "
                       "<task>-<step>.jsonl log of an eval; crosstask.results reads metrics")
    for path in skipped:  # DIR/*.jsonl: the predictions and the metrics beside them
      print(f"skipped {path}: metrics, not predictions (crosstask.results reads it)")
    for path in files:
      rec = rescoring.score_file(path, task_name=args.task, split=args.split, step=args.step,
                                 output_dir=args.output_dir, module=args.module,
                                 vocabulary=args.vocabulary, resamples=args.bootstrap)
      print(f"{rec.task} step {rec.step} [{rec.fingerprint}]: "
            + ", ".join(f"{k}={v:.4g}" for k, v in rec.metrics.items()))
  except (FileNotFoundError, ValueError, KeyError) as e:
    print(f"error: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
    return 2
  return 0


if __name__ == "__main__":
  sys.exit(main())
