"""Command line: score an embeddings file for a task, or average a results JSON.

  python -m crosstask.scirepeval_eval score --task fos --embeddings E.jsonl --data DIR
      [--output results.json] [--backend sklearn|lightning] [--float16 auto|yes|no]
      [--no_few_shot]
  python -m crosstask.scirepeval_eval aggregate --results results.json

`score` prints `{"<official task name>": <results>}` (the official JSON shape) and
a `scored_by` entry naming the scorer, the backend and what was dropped for lack
of an embedding; `--output` merges the task into an existing results file, so
several tasks build up one file (`scored_by` then describes the last one).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from crosstask import startup
from crosstask.metrics.scirepeval import probes


def _parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog="python -m crosstask.scirepeval_eval",
                              description=__doc__.split("\n\n")[0])
  sub = p.add_subparsers(dest="command", required=True)
  s = sub.add_parser("score", help="score an embeddings JSONL file for one task")
  s.add_argument("--task", required=True, help="official name or test config, e.g. fos")
  s.add_argument("--embeddings", required=True, help='JSONL of {"doc_id", "embedding"}')
  s.add_argument("--data", required=True, help="the task's test directory (or a root of them)")
  s.add_argument("--output", help="results JSON to create or update")
  s.add_argument("--backend", default="sklearn", choices=probes.BACKENDS)
  s.add_argument("--float16", default="auto", choices=("auto", "yes", "no"),
                 help="round embeddings to float16; auto: for the 5 tasks the official run "
                      "scores from a reloaded float16 cache (Max hIndex, SciDocs MeSH, "
                      "CoView, CoCite, CoRead)")
  s.add_argument("--no_few_shot", action="store_true", help="skip the few-shot runs")
  s.add_argument("--n_jobs", type=int, default=1, help="grid-search processes")
  a = sub.add_parser("aggregate", help="the paper's averages of a results JSON")
  a.add_argument("--results", required=True)
  for command in (s, a):
    startup.add_verbose_flag(command)
  return p


def main(argv: list[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  startup.quiet_startup(args.verbose)  # Before the task package loads TensorFlow.
  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.scirepeval import averages as agg
  from crosstask.tasks.scirepeval import benchmark, readers, score
  try:
    if args.command == "aggregate":
      with open(args.results, encoding="utf-8") as f:
        print(json.dumps(agg.aggregate(json.load(f)), indent=2))
      return 0
    spec = benchmark.get(args.task)
    info: dict = {}
    float16 = spec.cached if args.float16 == "auto" else args.float16 == "yes"
    result = score.score_task(spec, args.embeddings, args.data, backend=args.backend,
                              n_jobs=args.n_jobs, float16=float16,
                              few_shot_runs=not args.no_few_shot, info=info)
  except (KeyError, FileNotFoundError, readers.DataError, ValueError) as e:
    print(f"ERROR: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
    return 2
  out = {spec.name: result, "scored_by": {**score.scored_by(args.backend),
                                          "task": spec.name, "float16": float16, **info}}
  if args.output:
    merged = {}
    if os.path.isfile(args.output):
      with open(args.output, encoding="utf-8") as f:
        merged = json.load(f)
    merged.update(out)
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
      json.dump(merged, f, indent=4)
    os.replace(tmp, args.output)
  print(json.dumps(out, indent=4))
  return 0


if __name__ == "__main__":
  sys.exit(main())
