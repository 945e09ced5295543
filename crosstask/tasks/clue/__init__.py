"""CLUE and FewCLUE as crosstask text-to-text tasks; importing this package registers them.

  readers      the official files of the 11 CLUE and 9 FewCLUE tasks, with their quirks
  labels       label ids -> the Chinese words models generate (TNEWS 15, IFLYTEK 119, ...)
  examples     record -> prompt field values (WSC marking, ChID windows, options) and back
  tasks        arrow-prompt tasks, rank-classification twins, mixtures
  leakage      guards: CLUE train/dev vs FewCLUE test_public, the CSL corpus vs CSLDCP
  submissions  leaderboard files from `crosstask.infer` predictions
  paper, report  published rows, and a FewCLUE run beside them

Registration reads no data: sources open their files only when a dataset is built.
"""

from crosstask.tasks.clue import tasks as _tasks
from crosstask.tasks.common import registry as _registry

# Each task kind has its own fields: {kind: Schema}.
SCHEMA = {kind: schema for kind, (schema, _, _) in _tasks.LAYOUTS.items()}
register = _tasks.register
TASKS, MIXTURES = _registry.by_kind(register())
