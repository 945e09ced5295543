"""`python -m crosstask.results RUN_DIR...`: one table across runs and benchmarks.

  python -m crosstask.results /runs/t5_small_seed0 /runs/t5_small_seed1 /runs/t5_base
  python -m crosstask.results /runs/* --format csv > results.csv
  python -m crosstask.results /runs/t5_small_seed* --plot curves.png

Rows are models (runs that differ only by seed pooled: mean ± std), columns the
tasks' headline metrics and the benchmark aggregates, each headed by its split,
checkpoint step and task fingerprint; published numbers are added as rows. Each
cell carries its 95% interval [low, high]: over seeds where a row pools several,
else a bootstrap over the examples whose predictions the run saved (for a benchmark
aggregate, over each member task's examples jointly); a cell without one says why
under the table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from crosstask import startup
from crosstask.results import bootstrap
from crosstask.results import table


def _parser() -> argparse.ArgumentParser:
  head, _, rest = __doc__.partition("\n\n")
  p = argparse.ArgumentParser(prog="python -m crosstask.results",
                              description=head.split(": ", 1)[1], epilog=rest,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("runs", nargs="+", metavar="RUN_DIR",
                 help="folders searched for metrics.jsonl (or metrics.jsonl files)")
  p.add_argument("--format", default="markdown", choices=("markdown", "csv", "json"))
  p.add_argument("--step", type=int, help="take every run's records at this step "
                 "(default: each task's latest)")
  p.add_argument("--metric", action="append", default=[],
                 help="show this metric where a task reports it (repeatable; default: "
                      "the task's headline metric, e.g. accuracy, em, rougeL)")
  p.add_argument("--all_metrics", action="store_true", help="a column per metric")
  p.add_argument("--tasks", help="regular expression: only columns whose name matches")
  p.add_argument("--merge", action="store_true",
                 help="the RUN_DIRs are parts of one model's results (e.g. FewCLUE's k = 0..4 "
                      "runs): one row")
  p.add_argument("--paper", default="default", choices=("default", "all", "none"),
                 help="published rows beside ours")
  p.add_argument("--bootstrap", type=int, default=bootstrap.RESAMPLES, metavar="N",
                 help="resamples of each run's examples for its 95%% intervals (0: none)")
  p.add_argument("--plot", metavar="FILE.png", help="also draw the runs' training loss and "
                 "metrics against step, and the table as bars with their intervals")
  startup.add_verbose_flag(p)
  return p


def main(argv: Sequence[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  startup.quiet_startup(args.verbose)  # Before the task modules load TensorFlow.
  try:
    result = table.build(args.runs, step=args.step, prefer=args.metric,
                         all_metrics=args.all_metrics, paper=args.paper, tasks=args.tasks,
                         merge=args.merge, resamples=args.bootstrap)
    if args.plot:
      from crosstask.results import plots  # pylint: disable=g-import-not-at-top
      drawn = plots.plot(plots.series(result), args.plot)
  except (FileNotFoundError, ValueError) as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  if args.format == "markdown":
    print(result.markdown())
  elif args.format == "csv":
    sys.stdout.write(result.csv())
  else:
    print(json.dumps(result.json(), indent=1, ensure_ascii=False))
  if args.plot:  # stderr: stdout is the table, maybe piped into a file
    print(f"plot: {drawn}", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())
