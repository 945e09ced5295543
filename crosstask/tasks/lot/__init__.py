"""The LOT benchmark (thu-coai/LOT-LongLM) and LongLM pretraining as SeqIO tasks.

Importing this module registers the LOT arrow-prompt tasks, the NLPCC-2021
outline-to-story task, and the LongLM pretraining tasks and mixture.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.lot import pretrain_tasks as _pretrain_tasks
from crosstask.tasks.lot import tasks as _tasks

LOT_TASKS = _tasks.register()
PRETRAIN_TASKS = _pretrain_tasks.register()


def register(vocabulary=None) -> list[str]:
  """This benchmark's tasks and mixtures for `vocabulary` (a seqio.Vocabulary).

  None (or bytes) gives the plain names, registered at import; another vocabulary
  registers the same tasks under `crosstask.vocabularies.task_name(name, vocabulary)`.
  The runtime calls this when a run's model vocabulary is not bytes.
  """
  return _factory.register_for_vocabulary(LOT_TASKS + PRETRAIN_TASKS, vocabulary)
