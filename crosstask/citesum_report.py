"""`python -m crosstask.citesum_report`: the CiteSum paper's Tables 5-9 beside a run.

The command line of `crosstask.tasks.citesum.report`, started from here because
importing that package registers the CiteSum tasks, which loads TensorFlow before
any code of the module can keep its start-up lines off the console.
"""

import sys

from crosstask import startup

if __name__ == "__main__":
  sys.exit(startup.quiet_main("crosstask.tasks.citesum.report"))
