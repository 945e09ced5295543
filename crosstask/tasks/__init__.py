"""crosstask's benchmarks as SeqIO tasks; registration is opt-in per benchmark.

As in the T5 repository, importing this package registers nothing (and imports
no TensorFlow): `import crosstask.tasks.csl` registers CSL's tasks and
mixtures, `import crosstask.tasks.all` every benchmark's. Runs name the module
with `MIXTURE_OR_TASK_MODULE` (e.g. `'crosstask.tasks.csl'`). The shared
machinery every benchmark is built from is `crosstask.tasks.common`; `BENCHMARKS`
names every benchmark package found here.
"""

import pathlib


def benchmark_packages(folder: pathlib.Path | str) -> tuple[str, ...]:
  """The benchmark packages in `folder`: every package beside `common`, sorted.

  Found, not listed, so a new benchmark needs no edit here (see
  `crosstask.tasks.common.registry` for what a benchmark package exposes).
  """
  return tuple(sorted(p.name for p in pathlib.Path(folder).iterdir()
                      if p.name != "common" and (p / "__init__.py").is_file()))


BENCHMARKS = benchmark_packages(pathlib.Path(__file__).parent)
