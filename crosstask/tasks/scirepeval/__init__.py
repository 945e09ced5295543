"""SciRepEval (allenai/scirepeval) as SeqIO tasks; importing this package registers them.

  readers  every official file format as plain records (ids as strings, located errors)
  inputs   encoder inputs of the embedding path (format codes + labelled fields)
  text     the 23 text forms (all but S2AND): prompts, targets, (query, candidate) pairs
  records  the examples of each task and split from the data root
  schema   the fields for the shared layout; tasks: registration and the mixtures
The embedding evaluation itself lives in `crosstask.scirepeval_eval`; embedding
and relevance ranking in `crosstask.embed` / `crosstask.relevance`.
Registration reads no data: sources open their files only when a dataset is built.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.scirepeval import tasks as _tasks

TASKS = _tasks.register_all()
MIXTURES = (_tasks.IN_TRAIN_MIXTURE, _tasks.SAMPLE_MIXTURE)


def register(vocabulary=None) -> list[str]:
  """This benchmark's tasks and mixtures for `vocabulary` (a seqio.Vocabulary).

  None (or bytes) gives the plain names, registered at import; another vocabulary
  registers the same tasks under `crosstask.vocabularies.task_name(name, vocabulary)`.
  The runtime calls this when a run's model vocabulary is not bytes.
  """
  return _factory.register_for_vocabulary(list(TASKS) + list(MIXTURES), vocabulary)
