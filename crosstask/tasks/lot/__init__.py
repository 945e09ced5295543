"""The LOT benchmark (thu-coai/LOT-LongLM) and LongLM pretraining as SeqIO tasks.

Importing this module registers the LOT arrow-prompt tasks, the NLPCC-2021
outline-to-story task, and the LongLM pretraining tasks and mixture.
"""

from crosstask.tasks.lot import pretrain_tasks as _pretrain_tasks
from crosstask.tasks.lot import tasks as _tasks

LOT_TASKS = _tasks.register()
PRETRAIN_TASKS = _pretrain_tasks.register()
