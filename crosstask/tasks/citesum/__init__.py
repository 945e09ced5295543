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

from crosstask.tasks.citesum import tasks as _tasks
from crosstask.tasks.citesum.schema import SCHEMA
from crosstask.tasks.common import registry as _registry

register = _tasks.register
TASKS, MIXTURES = _registry.by_kind(register())
