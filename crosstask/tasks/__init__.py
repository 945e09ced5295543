"""SeqIO tasks and mixtures; importing this module registers them all.

Registration reads no data: sources open their files only when a dataset is
built, so `import crosstask.tasks` is cheap and works without any data root.
"""

from crosstask.tasks.csl import scenarios as _csl_scenarios
from crosstask.tasks.csl import tasks as _csl_tasks

CSL_TASKS = _csl_tasks.register_all()
CSL_MIXTURES = _csl_scenarios.register_mixtures()
