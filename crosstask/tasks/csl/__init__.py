"""The CSL benchmark (ydli-ai/CSL) as SeqIO tasks; importing this package registers them.

  schema     fields, labels, the 13 categories and 67 disciplines, per-field metrics
  readers    the benchmark files joined into full records, and the full-dataset form
  tasks      the 360 arrow tasks (`csl_task`, `register`), and prompt variants
             `<task>.p<k>` of three of them (`register_prompt_variants`)
  sampling   the paper's episode protocol (100 meta, k-shot, 64 + 64, 8 seeds)
  scenarios  the seven Table 3 partitions as meta / few-shot mixtures
  baselines  extractive lower bounds; report: Table 4 / Table 9 beside a run

Registration reads no data: sources open their files only when a dataset is built.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.common import registry as _registry
from crosstask.tasks.csl import scenarios as _scenarios
from crosstask.tasks.csl import tasks as _tasks
from crosstask.tasks.csl.schema import SCHEMA


def register(vocabulary=None) -> list[str]:
  """Registers this benchmark's tasks and mixtures (no data read); returns the names.

  Those are the 360 tasks, three prompt-variant sets and the partitions' mixtures.

  `vocabulary` None (or bytes) gives the plain names; another vocabulary registers the
  same tasks and mixtures as `<name>.<vocabulary>` (`crosstask.vocabularies.task_name`),
  as the runtime asks when a run's model vocabulary is not bytes.
  """
  prompt_tasks, prompt_mixtures = _tasks.register_prompt_variants()
  names = (_tasks.register() + prompt_tasks + _scenarios.register_mixtures()
           + prompt_mixtures)
  return _factory.register_for_vocabulary(names, vocabulary)


# The runtime's hook (`runtime.data.pipeline.register_vocabulary`): a run whose model
# reads another vocabulary reads these tasks as registered for it.
register_vocabulary = register


TASKS, MIXTURES = _registry.by_kind(register())
