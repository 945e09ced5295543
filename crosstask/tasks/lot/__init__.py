"""The LOT benchmark (thu-coai/LOT-LongLM) and LongLM pretraining as SeqIO tasks.

Importing this module registers the LOT arrow-prompt tasks, the NLPCC-2021
outline-to-story task, and the LongLM pretraining tasks and mixture.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.common import registry as _registry
from crosstask.tasks.lot import pretrain_tasks as _pretrain_tasks
from crosstask.tasks.lot import tasks as _tasks
from crosstask.tasks.lot.tasks import SCHEMA


def register(vocabulary=None) -> list[str]:
  """Registers this benchmark's tasks and mixtures (no data read); returns the names.

  Those are the LOT tasks, the pretraining tasks and their mixtures.

  `vocabulary` None (or bytes) gives the plain names; another vocabulary registers the
  same tasks and mixtures as `<name>.<vocabulary>` (`crosstask.vocabularies.task_name`),
  as the runtime asks when a run's model vocabulary is not bytes.
  """
  return _factory.register_for_vocabulary(_tasks.register() + _pretrain_tasks.register(),
                                          vocabulary)


# The runtime's hook (`runtime.data.pipeline.register_vocabulary`): a run whose model
# reads another vocabulary reads these tasks as registered for it.
register_vocabulary = register


TASKS, MIXTURES = _registry.by_kind(register())
