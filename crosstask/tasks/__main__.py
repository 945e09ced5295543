"""Lists every benchmark's tasks and mixtures: `python -m crosstask.tasks --list [FILTER ...]`.

Imports each benchmark of `crosstask.tasks.BENCHMARKS` (every package found there), or
the modules `--module` names (a run's MIXTURE_OR_TASK_MODULE: yours, importable from
here).

A filter is a substring (`csl_zh`) or a shell pattern (`csl_*_to_title`); a name
is shown when it matches any filter. Counts come last.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys

from crosstask import startup
from crosstask import task_modules


def _matches(name: str, filters: list[str]) -> bool:
  return not filters or any(f in name or fnmatch.fnmatchcase(name, f) for f in filters)


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(prog="python -m crosstask.tasks", description=__doc__)
  parser.add_argument("--list", nargs="*", metavar="FILTER", default=None,
                      help="list tasks and mixtures whose names match any FILTER")
  parser.add_argument("--module", action="append", default=[],
                      help="import this module for its tasks (repeatable; default: "
                           "crosstask.tasks.all)")
  startup.add_verbose_flag(parser)
  args = parser.parse_args(argv)
  if args.list is None:
    parser.print_help()
    return 2
  startup.quiet_startup(args.verbose)  # Before the task modules load TensorFlow.
  import seqio  # pylint: disable=g-import-not-at-top
  try:  # As a run imports its MIXTURE_OR_TASK_MODULE, with the same one-line mistakes.
    task_modules.import_tasks(args.module or ["crosstask.tasks.all"])
  except task_modules.TaskConfigError as e:
    print(f"ERROR: --module: {e}", file=sys.stderr)
    return 2
  tasks = sorted(n for n in seqio.TaskRegistry.names() if _matches(n, args.list))
  mixtures = sorted(n for n in seqio.MixtureRegistry.names() if _matches(n, args.list))
  for name in tasks:
    print(f"task     {name}")
  for name in mixtures:
    print(f"mixture  {name}  ({len(seqio.get_mixture_or_task(name).tasks)} tasks)")
  print(f"{len(tasks)} tasks, {len(mixtures)} mixtures")
  if not tasks and not mixtures and not args.module:
    print("(only crosstask's benchmarks were imported: name a module of your own with "
          "--module NAME)")
  return 0


if __name__ == "__main__":
  sys.exit(main())
