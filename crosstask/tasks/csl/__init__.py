"""The CSL benchmark (ydli-ai/CSL) as SeqIO tasks; importing this package registers them.

  schema     fields, labels, the 13 categories and 67 disciplines, per-field metrics
  readers    the benchmark files joined into full records, and the full-dataset form
  tasks      the 360 arrow tasks (`csl_task`, `register`), and prompt variants
             `<task>.p<k>` of three of them (`register_prompt_variants`)
  sampling   the paper's episode protocol (100 meta, k-shot, 64 + 64, 8 seeds)
  scenarios  the seven Table 3 partitions as meta / few-shot mixtures
  baselines  extractive lower bounds; report: Table 4 / Table 9 beside a run

Registration reads no data: sources open their files only when a dataset is built.
Where SeqIO is not installed (the GPU image) importing registers nothing (TASKS and
MIXTURES are empty), so readers, schema and `tasks.plain_task` still import there, and
`plain_tasks` gives `crosstask.infer` the arrow tasks' plain forms.
"""

import importlib.util as _importlib_util
from collections.abc import Callable as _Callable

from crosstask.tasks.csl.schema import SCHEMA


def register(vocabulary=None) -> list[str]:
  """Registers this benchmark's tasks and mixtures (no data read); returns the names.

  Those are the 360 tasks, three prompt-variant sets and the partitions' mixtures.

  `vocabulary` None (or bytes) gives the plain names; another vocabulary registers the
  same tasks and mixtures as `<name>.<vocabulary>` (`crosstask.vocabularies.task_name`),
  as the runtime asks when a run's model vocabulary is not bytes.
  """
  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.common import factory
  from crosstask.tasks.csl import scenarios
  from crosstask.tasks.csl import tasks
  # pylint: enable=g-import-not-at-top
  prompt_tasks, prompt_mixtures = tasks.register_prompt_variants()
  names = tasks.register() + prompt_tasks + scenarios.register_mixtures() + prompt_mixtures
  return factory.register_for_vocabulary(names, vocabulary)


# The runtime's hook (`runtime.data.pipeline.register_vocabulary`): a run whose model
# reads another vocabulary reads these tasks as registered for it.
register_vocabulary = register


def plain_tasks() -> dict[str, _Callable]:
  """The runtime's hook where SeqIO is absent (`runtime.data.pipeline.plain_task`): the
  arrow tasks' names -> functions building their plain forms (`tasks.plain_tasks`)."""
  from crosstask.tasks.csl import tasks  # pylint: disable=g-import-not-at-top
  return tasks.plain_tasks()


def _register_by_kind() -> tuple[tuple[str, ...], tuple[str, ...]]:
  from crosstask.tasks.common import registry  # pylint: disable=g-import-not-at-top
  return registry.by_kind(register())


TASKS, MIXTURES = ((), ()) if _importlib_util.find_spec("seqio") is None else _register_by_kind()
