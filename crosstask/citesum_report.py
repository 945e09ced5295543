"""`python -m crosstask.citesum_report`: the CiteSum paper's Tables 5-9 beside a run.

The command line of `crosstask.tasks.citesum.report`, started from here because
importing that package registers the CiteSum tasks, which loads TensorFlow before
any code of the module can keep its start-up lines off the console.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from crosstask import startup


def main(argv: Sequence[str] | None = None) -> int:
  argv = list(sys.argv[1:] if argv is None else argv)
  startup.quiet_startup("--verbose" in argv)  # Before the task package loads TensorFlow.
  from crosstask.tasks.citesum import report  # pylint: disable=g-import-not-at-top
  return report.main(argv)


if __name__ == "__main__":
  sys.exit(main())
