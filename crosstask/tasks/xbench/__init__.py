"""Cross-benchmark cross-task few-shot: meta tasks from some benchmarks, k-shot on another.

  scenarios  the scenarios (`xbench_csl_citesum_to_fewclue`, `xbench_clue_csl_to_lot`),
             episode sizes, gin helpers for mixture and split names
  episodes   episode datasets over the source benchmarks' tasks; the leakage check
  report     Δ_m (+meta − few) per task and scenario, generalised from CSL's report

Importing registers the source benchmarks' tasks (they are the members) and the
`xbench_*` tasks and mixtures; registration reads no data.
"""

from crosstask.tasks.common import factory as _factory
from crosstask.tasks.common import registry as _registry
from crosstask.tasks.xbench import tasks as _tasks

# No fields of its own: every member task belongs to a source benchmark's schema.
SCHEMA: dict = {}


def register(vocabulary=None) -> list[str]:
  """Registers every scenario's tasks and mixtures (idempotent); returns their names.

  For another vocabulary than bytes, the same as `<name>.<vocabulary>` (see
  `crosstask.tasks.common.factory.register_for_vocabulary`).
  """
  tasks, mixtures = _tasks.register_all()
  return _factory.register_for_vocabulary(list(tasks) + list(mixtures), vocabulary)


# The runtime's hook (`runtime.data.pipeline.register_vocabulary`): a run whose model
# reads another vocabulary reads these tasks as registered for it.
register_vocabulary = register


TASKS, MIXTURES = _registry.by_kind(register())
