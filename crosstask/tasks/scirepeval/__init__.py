"""SciRepEval (allenai/scirepeval) as SeqIO tasks; importing this package registers them.

  readers    every official file format as plain records (ids as strings, located errors):
             meta, training, probe splits, qrels, reviewers, embeddings
  benchmark  the 24 tasks (formats, metrics, few-shot runs, data configs)
  score      one task's official-shape results from an embeddings file and its test data
  averages   the paper's 27-number averages over the tasks' results
  inputs     encoder inputs of the embedding path (format codes + labelled fields)
  text       the 23 text forms (all but S2AND): prompts, targets, (query, candidate) pairs,
             and the fields (SCHEMA) they are laid out with
  records    the examples of each task and split from the data root
  tasks      registration and the mixtures
The scoring itself (probes, few-shot runs, trec_eval) is `crosstask.metrics.scirepeval`;
the command lines are `crosstask.scirepeval_eval` (score, aggregate), `crosstask.embed`
and `crosstask.relevance`.
Registration reads no data: sources open their files only when a dataset is built.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.common import registry as _registry
from crosstask.tasks.scirepeval import tasks as _tasks
from crosstask.tasks.scirepeval.text import SCHEMA


def register(vocabulary=None) -> list[str]:
  """Registers this benchmark's tasks and mixtures (no data read); returns the names.

  Those are the SciRepEval text-to-text tasks and mixtures.

  `vocabulary` None (or bytes) gives the plain names; another vocabulary registers the
  same tasks and mixtures as `<name>.<vocabulary>` (`crosstask.vocabularies.task_name`),
  as the runtime asks when a run's model vocabulary is not bytes.
  """
  return _factory.register_for_vocabulary(_tasks.register(), vocabulary)


# The runtime's hook (`runtime.data.pipeline.register_vocabulary`): a run whose model
# reads another vocabulary reads these tasks as registered for it.
register_vocabulary = register


TASKS, MIXTURES = _registry.by_kind(register())
