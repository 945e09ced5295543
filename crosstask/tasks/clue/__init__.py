"""CLUE and FewCLUE as crosstask text-to-text tasks; importing this package registers them.

  readers      the official files of the 11 CLUE and 9 FewCLUE tasks, with their quirks
  labels       label ids -> the Chinese words models generate (TNEWS 15, IFLYTEK 119, ...)
  examples     record -> prompt field values (WSC marking, ChID windows, options) and back
  tasks        arrow-prompt tasks, rank-classification twins, mixtures
  leakage      guards: CLUE train/dev vs FewCLUE test_public, the CSL corpus vs CSLDCP
  submissions  leaderboard files from `crosstask.infer` predictions
  paper, report  published rows, and a FewCLUE run beside them

Registration reads no data: sources open their files only when a dataset is built.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.clue import tasks as _tasks

TASKS = _tasks.register_all()
MIXTURES = _tasks.register_mixtures()


def register(vocabulary=None) -> list[str]:
  """This benchmark's tasks and mixtures for `vocabulary` (a seqio.Vocabulary).

  None (or bytes) gives the plain names, registered at import; another vocabulary
  registers the same tasks under `crosstask.vocabularies.task_name(name, vocabulary)`.
  The runtime calls this when a run's model vocabulary is not bytes.
  """
  return _factory.register_for_vocabulary(list(TASKS) + list(MIXTURES), vocabulary)
