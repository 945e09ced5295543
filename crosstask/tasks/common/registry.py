"""The benchmark package contract: what each `crosstask/tasks/<name>/` package exposes.

A benchmark is a package `crosstask/tasks/<name>/` whose `__init__` exposes

  SCHEMA           its fields: a `Schema`, or {layout: Schema} when tasks differ in fields
  register()       registers its tasks and mixtures (idempotent, reads no data) and
                   returns their names
  TASKS, MIXTURES  the names importing the package registered, by kind
  report           optional: a submodule that sets a run beside the paper's tables

`crosstask.tasks.BENCHMARKS` lists the packages found beside `common`, and
`crosstask.tasks.all` imports each: a new benchmark is its package, its configs
folder (`crosstask/t5x_configs/<name>/`) and its sample files, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

import seqio

CONTRACT = ("SCHEMA", "register", "TASKS", "MIXTURES")


def by_kind(names: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
  """(tasks, mixtures) among registered `names`, in their order; an unknown name is an error."""
  names = list(names)
  tasks, mixtures = set(seqio.TaskRegistry.names()), set(seqio.MixtureRegistry.names())
  unknown = [n for n in names if n not in tasks and n not in mixtures]
  if unknown:
    raise ValueError(f"register() returned names nothing registered: {unknown[:5]}")
  return tuple(n for n in names if n in tasks), tuple(n for n in names if n in mixtures)


def contract_problems(module: ModuleType) -> list[str]:
  """What `module` lacks of the benchmark package contract (empty when it holds)."""
  problems = [f"{module.__name__} has no {name}" for name in CONTRACT
              if not hasattr(module, name)]
  if not problems:
    if not callable(module.register):
      problems.append(f"{module.__name__}.register is not callable")
    elif sorted(module.register()) != sorted([*module.TASKS, *module.MIXTURES]):
      problems.append(f"{module.__name__}.register() does not return TASKS + MIXTURES")
  return problems
