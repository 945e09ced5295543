"""crosstask's benchmarks as SeqIO tasks; registration is opt-in per benchmark.

As in the T5 repository, importing this package registers nothing (and imports
no TensorFlow): `import crosstask.tasks.csl` registers CSL's tasks and
mixtures, `import crosstask.tasks.all` every benchmark's. Runs name the module
with `MIXTURE_OR_TASK_MODULE` (e.g. `'crosstask.tasks.csl'`). The shared
machinery every benchmark is built from is `crosstask.tasks.common`.
"""

# Every benchmark package under crosstask/tasks/, in the order `--list` shows them.
BENCHMARKS = ("csl", "citesum", "clue", "lot", "scirepeval", "xbench")
