"""`python -m crosstask.clue_submissions`: CLUE and FewCLUE leaderboard files from
`crosstask.infer` predictions.

The command line of `crosstask.tasks.clue.submissions`, started from here because
importing that package registers the CLUE tasks, which loads TensorFlow before any
code of the module can keep its start-up lines off the console.
"""

import sys

from crosstask import startup

if __name__ == "__main__":
  sys.exit(startup.quiet_main("crosstask.tasks.clue.submissions"))
