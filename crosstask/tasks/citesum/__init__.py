"""CiteSum (Mao et al., EMNLP 2022) and its transfer sets as SeqIO tasks.

Importing this package registers them (see `tasks` for the names):

  schema     the fields (Title, Abstract, TLDR, Discipline, Document, Summary, Headline)
  readers    CiteSum, SciTLDR, XSum and Gigaword in their official layouts
  tasks      arrow tasks and mixtures, REF postprocessing, decoder-prompt tasks, TFDS sources
  ref        REF removal (the paper's and the released script's rule) and the "We" rewrite
  fewshot    HF-exact few-shot subsets (SciTLDR 32/128, XSum 10/100 x 3 seeds)
  baselines  EXT-LEAD / EXT-HEURISTIC / EXT-ORACLE; report: Tables 5-9 beside a run

Registration reads no data: sources open their files only when a dataset is built.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.citesum import tasks as _tasks
from crosstask.tasks.citesum.schema import SCHEMA
from crosstask.tasks.common import registry as _registry


def register(vocabulary=None) -> list[str]:
  """Registers this benchmark's tasks and mixtures (no data read); returns the names.

  Those are CiteSum's and the transfer sets' tasks and mixtures.

  `vocabulary` None (or bytes) gives the plain names; another vocabulary registers the
  same tasks and mixtures as `<name>.<vocabulary>` (`crosstask.vocabularies.task_name`),
  as the runtime asks when a run's model vocabulary is not bytes.
  """
  return _factory.register_for_vocabulary(_tasks.register(), vocabulary)


# The runtime's hook (`runtime.data.pipeline.register_vocabulary`): a run whose model
# reads another vocabulary reads these tasks as registered for it.
register_vocabulary = register


TASKS, MIXTURES = _registry.by_kind(register())
