"""Registers every benchmark's tasks and mixtures (T5X's `MIXTURE_OR_TASK_MODULE` for all)."""

import importlib

from crosstask.tasks import BENCHMARKS

IMPORTED = tuple(importlib.import_module(f"crosstask.tasks.{name}") for name in BENCHMARKS)
