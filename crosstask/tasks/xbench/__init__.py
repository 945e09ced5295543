"""Cross-benchmark cross-task few-shot: meta tasks from some benchmarks, k-shot on another.

  scenarios  the scenarios (`xbench_csl_citesum_to_fewclue`, `xbench_clue_csl_to_lot`),
             episode sizes, gin helpers for mixture and split names
  episodes   episode datasets over the source benchmarks' tasks; the leakage check
  report     Δ_m (+meta − few) per task and scenario, generalised from CSL's report

Importing registers the source benchmarks' tasks (they are the members) and the
`xbench_*` tasks and mixtures; registration reads no data.
"""

from crosstask.tasks.xbench import tasks as _tasks


def register() -> tuple[list[str], list[str]]:
  """Registers every scenario's tasks and mixtures; returns (task names, mixture names)."""
  return _tasks.register_all()


TASKS, MIXTURES = register()
