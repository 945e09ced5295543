"""The CSL paper's cross-task scenarios (Table 3) as SeqIO mixtures, and their names.

Seven partitions of arrow tasks into meta tasks and one few-shot task:

| part. | meta tasks                                        | few-shot task      |
|-------|---------------------------------------------------|--------------------|
| 1-1   | abstract→keywords, keywords→title                 | abstract→title     |
| 1-2   | keywords→title, title→discipline                  | keywords→discipline|
| 1-3   | abstract→title+category, title→keywords           | abstract+discipline→keywords |
| 2-1   | abstract→keywords, keywords→title, title→category | abstract→category  |
| 2-2   | abstract→title, title→keywords, keywords→discipline | abstract→discipline |
| 3-1   | keywords→abstract, title→discipline               | keywords→discipline|
| 3-2   | abstract→keywords, title→keywords, title→category | abstract→category  |

Scenario 1 is single-leap bridging, 2 two-leap bridging, 3 a broken bridge
(3-1 is 1-2 with one meta task changed, 3-2 is 2-1 with one changed, so they
share those partitions' few-shot tasks and "few" runs).

Mixtures, per language: `csl_<lang>_xtask_<p>_meta` and `csl_<lang>_xtask_<p>_few`.
Use them with the episode splits of `sampling`: meta training on
`s<seed>_meta` (100 instances per task), few-shot training on `s<seed>_k<k>`,
model selection on `s<seed>_validation`, reporting on `s<seed>_test`.
"""

from __future__ import annotations

from crosstask.tasks.common import factory
from crosstask.tasks.csl import sampling
from crosstask.tasks.csl import tasks as csl_tasks

A, T, K, C, D = "abstract", "title", "keywords", "category", "discipline"
# partition -> (meta tasks, few-shot task); a task is (inputs, outputs).
TABLE_3 = {
    "1-1": ([((A,), (K,)), ((K,), (T,))], ((A,), (T,))),
    "1-2": ([((K,), (T,)), ((T,), (D,))], ((K,), (D,))),
    "1-3": ([((A,), (T, C)), ((T,), (K,))], ((A, D), (K,))),
    "2-1": ([((A,), (K,)), ((K,), (T,)), ((T,), (C,))], ((A,), (C,))),
    "2-2": ([((A,), (T,)), ((T,), (K,)), ((K,), (D,))], ((A,), (D,))),
    "3-1": ([((K,), (A,)), ((T,), (D,))], ((K,), (D,))),
    "3-2": ([((A,), (K,)), ((T,), (K,)), ((T,), (C,))], ((A,), (C,))),
}
PARTITIONS = tuple(TABLE_3)
SCENARIOS = {1: ("1-1", "1-2", "1-3"), 2: ("2-1", "2-2"), 3: ("3-1", "3-2")}
# Scenario 3 reuses the few-shot runs of the partitions it breaks.
SHARED_FEW = {"3-1": "1-2", "3-2": "2-1"}


def check_partition(partition: str) -> str:
  if partition not in TABLE_3:
    raise ValueError(f"PARTITION={partition!r} is not a CSL partition; choose from {PARTITIONS}")
  return partition


def partition_tasks(partition: str, lang: str = "zh") -> tuple[list[str], list[str]]:
  """(meta task names, few-shot task names) of a partition like '2-1'."""
  meta, few = TABLE_3[check_partition(partition)]
  return ([csl_tasks.task_name(i, o, lang) for i, o in meta],
          [csl_tasks.task_name(*few, lang)])


def mixture_name(partition: str, kind: str, lang: str = "zh") -> str:
  return f"csl_{lang}_xtask_{check_partition(partition).replace('-', '_')}_{kind}"


def register_mixtures() -> list[str]:
  """Registers meta and few-shot mixtures of every partition (no data read)."""
  names = []
  for lang in csl_tasks.LANGS:
    for partition in PARTITIONS:
      meta, few = partition_tasks(partition, lang)
      for kind, tasks in (("meta", meta), ("few", few)):
        names.append(factory.register_mixture(mixture_name(partition, kind, lang), tasks))
  return names


# ------------------------------------------------------------------ names for gin
# Gin cannot format strings, so `csl/xtask_*.gin` take PARTITION / EPISODE_SEED /
# SHOTS as macros and call these plain functions (gin's dynamic registration) for
# the mixture and split names. How many steps an epoch takes is counted by the
# runtime when the run starts (`utils.epoch_steps`), not here.


def xtask_mixture(partition: str, kind: str = "meta", lang: str = "zh") -> str:
  """'csl_zh_xtask_2_1_meta' for partition '2-1', kind 'meta' (or 'few')."""
  if kind not in ("meta", "few"):
    raise ValueError(f"kind must be 'meta' or 'few', got {kind!r}")
  return mixture_name(partition, kind, lang)


def episode_split(seed: int = 0, kind: str = "meta", shots: int | None = None) -> str:
  """Episode split names: s<seed>_meta, s<seed>_k<shots> (kind 'shots'), s<seed>_validation, ..."""
  if kind == "shots":
    if shots is None:
      raise ValueError("episode_split(kind='shots') needs SHOTS")
    return sampling.episode_split_name(seed, f"k{shots}")
  return sampling.episode_split_name(seed, kind)


def split_size(partition: str, kind: str, split: str) -> int:
  """Examples in `split` over the partition's meta or few-shot tasks (reads the episode pool)."""
  meta, few = TABLE_3[check_partition(partition)]
  return sum(len(csl_tasks.read_split(split, inputs=inputs, outputs=outputs))
             for inputs, outputs in (meta if kind == "meta" else [few]))
