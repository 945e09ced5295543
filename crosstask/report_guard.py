"""The entry points' report guard: FewCLUE's leakage check, loaded when first called.

Train, eval and infer hand it to the runtime (which imports no task module). The
task package loads TensorFlow, so it is imported only once the job runs, after the
entry point has quieted TensorFlow's start-up lines.
"""

from collections.abc import Sequence


def check(trained: Sequence[str], task: str, split: str) -> None:
  """Raises when reporting `task`'s `split` would score data the run trained on."""
  from crosstask.tasks.clue import leakage  # pylint: disable=import-outside-toplevel
  leakage.check_run(trained, task, split)
