"""SciRepEval (allenai/scirepeval) as SeqIO tasks; importing this package registers them.

  readers  every official file format as plain records (ids as strings, located errors)
  inputs   encoder inputs of the embedding path (format codes + labelled fields)
  text     the 23 text forms (all but S2AND): prompts, targets, (query, candidate) pairs,
           and the fields (SCHEMA) they are laid out with
  records  the examples of each task and split from the data root
  tasks    registration and the mixtures
The embedding evaluation itself lives in `crosstask.scirepeval_eval`; embedding
and relevance ranking in `crosstask.embed` / `crosstask.relevance`.
Registration reads no data: sources open their files only when a dataset is built.
"""

from crosstask.tasks.common import registry as _registry
from crosstask.tasks.scirepeval import tasks as _tasks
from crosstask.tasks.scirepeval.text import SCHEMA

register = _tasks.register
TASKS, MIXTURES = _registry.by_kind(register())
