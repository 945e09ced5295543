"""Registers every benchmark's tasks and mixtures (T5X's `MIXTURE_OR_TASK_MODULE` for all)."""

import importlib

from crosstask.tasks import BENCHMARKS

IMPORTED = tuple(importlib.import_module(f"crosstask.tasks.{name}") for name in BENCHMARKS)


def register(vocabulary=None) -> list[str]:
  """Every benchmark's tasks and mixtures for `vocabulary` (None: the plain names)."""
  return [name for module in IMPORTED for name in module.register(vocabulary)]


# The runtime's hook (`runtime.data.pipeline.register_vocabulary`): a run whose model
# reads another vocabulary reads these tasks as registered for it.
register_vocabulary = register
