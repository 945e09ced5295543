"""The entry points' report guard: FewCLUE's leakage check, loaded when first called.

Train, eval and infer hand it to the runtime (which imports no task module). The
task package loads TensorFlow, so it is imported only once the job runs, after the
entry point has quieted TensorFlow's start-up lines.
"""

from collections.abc import Sequence


def check(trained: Sequence[str], task: str, split: str) -> None:
  """Raises when reporting `task`'s `split` would score data the run trained on: a
  configuration error (the task or split to report), which the command line prints as
  its one line, as it does a wrong binding, not a traceback."""
  from crosstask.runtime.config import gin_utils  # pylint: disable=import-outside-toplevel
  from crosstask.tasks.clue import leakage  # pylint: disable=import-outside-toplevel
  try:
    leakage.check_run(trained, task, split)
  except leakage.LeakageError as e:
    raise gin_utils.GinConfigError(str(e)) from None
