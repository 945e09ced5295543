"""Cross-task few-shot scenarios of the CSL paper as SeqIO mixtures.

The paper's Table 3 lists seven partitions `1-1, 1-2, 1-3, 2-1, 2-2, 3-1, 3-2`
of the arrow tasks into meta tasks and few-shot tasks. The exact task lists of
that table could not be found in the stored sources (neither the ydli-ai/CSL
README nor a stored copy of the paper holds them), so this module implements
the most faithful reading of the names we could document:

* partition `i-o` has as few-shot tasks every arrow task with `i` input fields
  and `o` output fields (e.g. `1-1`: `摘要->标题`, `标题->门类`, ... 20 tasks);
* its meta tasks are all the other registered arrow tasks (other shapes), so
  the few-shot task shapes are never seen in meta training.

Mixtures, per language: `csl_<lang>_xtask_<i>_<o>_meta` and
`csl_<lang>_xtask_<i>_<o>_few`, equal rates. Use them with the episode splits
of `sampling`: meta training on `s<seed>_meta` (100 instances per task), few-
shot training on `s<seed>_k<k>`, model selection on `s<seed>_validation` and
reporting on `s<seed>_test` (64 each), seeds 0-7, k in 0, 1, 2, 4, 8.
Episodes draw from every complete benchmark split (the official `dev`: 1000
papers); the bundled sample (130) is only big enough to exercise the code.
"""

from __future__ import annotations

from crosstask.tasks.common import factory
from crosstask.tasks.csl import tasks as csl_tasks

PARTITIONS = ("1-1", "1-2", "1-3", "2-1", "2-2", "3-1", "3-2")


def partition_tasks(partition: str, lang: str = "zh") -> tuple[list[str], list[str]]:
  """(meta task names, few-shot task names) of a partition like '2-1'."""
  if partition not in PARTITIONS:
    raise ValueError(f"unknown partition {partition!r}; choose from {PARTITIONS}")
  n_in, n_out = (int(x) for x in partition.split("-"))
  meta, few = [], []
  for ins, outs in csl_tasks.io_pairs():
    name = csl_tasks.task_name(ins, outs, lang)
    (few if (len(ins), len(outs)) == (n_in, n_out) else meta).append(name)
  return meta, few


def mixture_name(partition: str, kind: str, lang: str = "zh") -> str:
  return f"csl_{lang}_xtask_{partition.replace('-', '_')}_{kind}"


def register_mixtures() -> list[str]:
  """Registers meta and few-shot mixtures of every partition (no data read)."""
  names = []
  for lang in csl_tasks.LANGS:
    for partition in PARTITIONS:
      meta, few = partition_tasks(partition, lang)
      for kind, tasks in (("meta", meta), ("few", few)):
        names.append(factory.register_mixture(mixture_name(partition, kind, lang), tasks))
  return names
