"""The LOT benchmark (thu-coai/LOT-LongLM) and LongLM pretraining as SeqIO tasks.

Importing this module registers the LOT arrow-prompt tasks, the NLPCC-2021
outline-to-story task, and the LongLM pretraining tasks and mixture.
"""

from crosstask.tasks.common import registry as _registry
from crosstask.tasks.lot import pretrain_tasks as _pretrain_tasks
from crosstask.tasks.lot import tasks as _tasks
from crosstask.tasks.lot.tasks import SCHEMA


def register() -> list[str]:
  """Registers the LOT tasks, the pretraining tasks and their mixtures (idempotent)."""
  return _tasks.register() + _pretrain_tasks.register()


TASKS, MIXTURES = _registry.by_kind(register())
