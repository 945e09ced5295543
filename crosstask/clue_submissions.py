"""`python -m crosstask.clue_submissions`: CLUE and FewCLUE leaderboard files from
`crosstask.infer` predictions.

The command line of `crosstask.tasks.clue.submissions`, started from here because
importing that package registers the CLUE tasks, which loads TensorFlow before any
code of the module can keep its start-up lines off the console.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from crosstask import startup


def main(argv: Sequence[str] | None = None) -> int:
  argv = list(sys.argv[1:] if argv is None else argv)
  startup.quiet_startup("--verbose" in argv)  # Before the task package loads TensorFlow.
  from crosstask.tasks.clue import submissions  # pylint: disable=g-import-not-at-top
  return submissions.main(argv)


if __name__ == "__main__":
  sys.exit(main())
