"""CLUE and FewCLUE as crosstask text-to-text tasks; importing this package registers them.

  readers      the official files of the 11 CLUE and 9 FewCLUE tasks, with their quirks
  labels       label ids -> the Chinese words models generate (TNEWS 15, IFLYTEK 119, ...)
  examples     record -> prompt field values (WSC marking, ChID windows, options) and back
  tasks        arrow-prompt tasks, rank-classification twins, mixtures
  leakage      guards: CLUE train/dev vs FewCLUE test_public, the CSL corpus vs CSLDCP
  submissions  leaderboard files from `crosstask.infer` predictions
  paper, report  published rows, and a FewCLUE run beside them

Registration reads no data: sources open their files only when a dataset is built.
Where SeqIO is not installed (the GPU image) importing registers nothing (TASKS and
MIXTURES are empty), so the entry points' leakage guard (`leakage`) still runs there.
"""

import importlib.util as _importlib_util

from crosstask.tasks.clue import tasks as _tasks

# Each task kind has its own fields: {kind: Schema}.
SCHEMA = {kind: schema for kind, (schema, _, _) in _tasks.LAYOUTS.items()}


def register(vocabulary=None) -> list[str]:
  """Registers this benchmark's tasks and mixtures (no data read); returns the names.

  Those are the CLUE and FewCLUE tasks and mixtures.

  `vocabulary` None (or bytes) gives the plain names; another vocabulary registers the
  same tasks and mixtures as `<name>.<vocabulary>` (`crosstask.vocabularies.task_name`),
  as the runtime asks when a run's model vocabulary is not bytes.
  """
  from crosstask.tasks.common import factory  # pylint: disable=g-import-not-at-top
  return factory.register_for_vocabulary(_tasks.register(), vocabulary)


# The runtime's hook (`runtime.data.pipeline.register_vocabulary`): a run whose model
# reads another vocabulary reads these tasks as registered for it.
register_vocabulary = register


def _register_by_kind() -> tuple[tuple[str, ...], tuple[str, ...]]:
  from crosstask.tasks.common import registry  # pylint: disable=g-import-not-at-top
  return registry.by_kind(register())


TASKS, MIXTURES = ((), ()) if _importlib_util.find_spec("seqio") is None else _register_by_kind()
