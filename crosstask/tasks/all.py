"""Registers every benchmark's tasks and mixtures (T5X's `MIXTURE_OR_TASK_MODULE` for all).

A benchmark listed in `crosstask.tasks.BENCHMARKS` whose package is not written
yet is skipped and named in `MISSING`.
"""

import importlib

from crosstask.tasks import BENCHMARKS


def import_benchmarks() -> tuple[list[str], list[str]]:
  """(imported, missing) benchmark names; a missing package is skipped, any other error raised."""
  imported, missing = [], []
  for name in BENCHMARKS:
    module = f"crosstask.tasks.{name}"
    try:
      importlib.import_module(module)
    except ModuleNotFoundError as e:
      if e.name != module:
        raise  # the package exists but something it imports is missing
      missing.append(name)
      continue
    imported.append(name)
  return imported, missing


IMPORTED, MISSING = import_benchmarks()


def register(vocabulary=None) -> list[str]:
  """Every imported benchmark's tasks and mixtures for `vocabulary` (None: the plain names)."""
  return [name for bench in IMPORTED
          for name in importlib.import_module(f"crosstask.tasks.{bench}").register(vocabulary)]
