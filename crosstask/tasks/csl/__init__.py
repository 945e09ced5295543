"""The CSL benchmark (ydli-ai/CSL) as SeqIO tasks; importing this package registers them.

  schema     fields, labels, the 13 categories and 67 disciplines, per-field metrics
  readers    the benchmark files joined into full records, and the full-dataset form
  tasks      the 360 arrow tasks (`csl_task`, `register_all`)
  sampling   the paper's episode protocol (100 meta, k-shot, 64 + 64, 8 seeds)
  scenarios  the seven Table 3 partitions as meta / few-shot mixtures
  baselines  extractive lower bounds; report: Table 4 / Table 9 beside a run

Registration reads no data: sources open their files only when a dataset is built.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.csl import scenarios as _scenarios
from crosstask.tasks.csl import tasks as _tasks

TASKS = _tasks.register_all()
MIXTURES = _scenarios.register_mixtures()


def register(vocabulary=None) -> list[str]:
  """This benchmark's tasks and mixtures for `vocabulary` (a seqio.Vocabulary).

  None (or bytes) gives the plain names, registered at import; another vocabulary
  registers the same tasks under `crosstask.vocabularies.task_name(name, vocabulary)`.
  The runtime calls this when a run's model vocabulary is not bytes.
  """
  return _factory.register_for_vocabulary(list(TASKS) + list(MIXTURES), vocabulary)
