"""Importing the modules that register a run's tasks (MIXTURE_OR_TASK_MODULE), and the
mistakes a task module makes while registering, as one line that names its file and line.

A leaf: every layer that imports task modules (the runtime's jobs, `python -m
crosstask.tasks`, rescoring) reads the same errors from here. SeqIO is imported only
when a registry error is explained.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
import traceback
from collections.abc import Sequence


def module_names(module: str | Sequence[str] | None) -> list[str]:
  """MIXTURE_OR_TASK_MODULE's value as a list of module names."""
  return [module] if isinstance(module, str) else list(module or ())


class TaskConfigError(ValueError):
  """A task, mixture, split or module the configuration names that does not exist or does
  not register (a mixture of unknown tasks), or a task the model's vocabulary or embedding
  table cannot read: a mistake in the command line, gin file or task module, which the
  entry points print as one line (exit 2)."""


def import_tasks(module: str | Sequence[str] | None = None) -> None:
  """Imports the module(s) that register the run's tasks (T5X's DatasetConfig.module).

  Nothing else is imported: registration is opt-in, e.g. 'crosstask.tasks.<benchmark>'.
  """
  for name in module_names(module):
    try:
      importlib.import_module(name)
    except ModuleNotFoundError as e:
      if e.name is None or not (name == e.name or name.startswith(e.name + '.')):
        raise  # the module exists and lacks a dependency: its traceback says where
      raise TaskConfigError(
          f"MIXTURE_OR_TASK_MODULE names {name!r}, which is not a module importable from "
          f"here ({e}); a module of your own is imported as Python imports any: run from "
          "the folder that holds it or add that folder to PYTHONPATH. crosstask's are "
          "'crosstask.tasks.<benchmark>' (csl, citesum, clue, lot, scirepeval, xbench) and "
          "'crosstask.tasks.all'") from None
    except ValueError as e:
      problem = _registry_problem(e, name)
      if problem is None:
        raise  # the module's own mistake: its traceback says where
      raise TaskConfigError(problem) from None


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_UNREGISTERED = re.compile(r'Provider name not registered: (?P<name>\S+)')
_DUPLICATE = re.compile(r'Attempting to register duplicate provider: (?P<name>\S+)')


def _registry_problem(error: ValueError, module: str) -> str | None:
  """SeqIO's registry refusal while `module` registers tasks, as one line at the module's
  own line (a mixture naming a task not registered, a name registered twice); None for
  any other error."""
  import seqio
  seqio_dir = os.path.dirname(seqio.__file__)
  frames = [f for f in traceback.extract_tb(error.__traceback__)
            if not f.filename.startswith(('<', seqio_dir)) and f.filename != __file__]
  # The researcher's line, not crosstask's helper it called (`factory.register_mixture`).
  frames = [f for f in frames if not f.filename.startswith(_PACKAGE_DIR)] or frames
  where = f'{frames[-1].filename}:{frames[-1].lineno}: ' if frames else ''
  if missing := _UNREGISTERED.fullmatch(str(error)):
    return (f"{where}MIXTURE_OR_TASK_MODULE {module!r} names {missing['name']!r} in a "
            "mixture, and no task or mixture of that name is registered."
            f"{close_names(missing['name'])} A mixture's tasks are registered before it: "
            "import their module first (crosstask's: 'crosstask.tasks.<benchmark>').")
  if twice := _DUPLICATE.fullmatch(str(error)):
    return (f"{where}MIXTURE_OR_TASK_MODULE {module!r} registers {twice['name']!r}, a name "
            "already registered: SeqIO's names are one a process. Give the new task or "
            "mixture a name of its own.")
  return None


def close_names(name: str) -> str:
  """' Did you mean: ...?' for the registered names close to `name`, else ''."""
  import seqio
  known = sorted(set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names()))
  close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
  return f' Did you mean: {", ".join(close)}?' if close else ''


