"""`--run_dir=DIR`: eval, infer, export, embed and relevance take a trained run's own
configuration, and train resumes it.

A training run writes its whole gin configuration to DIR/config.gin: the model,
its vocabulary, the task and its lengths. Eval and infer parse it first, then their
own run file (runs/eval.gin, runs/infer.gin), then the run's task macros again
(the run file marks them required), then whatever the command line gives. So only
what changes is given: `python -m crosstask.infer --run_dir=/tmp/demo`.

It is also the one reader of a saved configuration's macros, read as text (no gin
parse, which would need every configurable the run named and would replace the
caller's own gin state): the leakage guard asks what a checkpoint was trained on,
and `crosstask.results` what model, seed and task made a run's records.
"""

import ast
import dataclasses
import os
import pathlib
import re
from typing import Mapping, Sequence

from crosstask import vocabularies
from crosstask.runtime.config import gin_utils

# What a run file resets but the trained run decided: its task, where the task is
# registered, and the feature lengths it was trained at.
CARRIED_MACROS = ('MIXTURE_OR_TASK_NAME', 'MIXTURE_OR_TASK_MODULE', 'TASK_FEATURE_LENGTHS')
# The whole configuration a run was given first (it binds every macro it was given);
# the operative one (what the run used, as T5X writes it) where that is all there is.
CONFIG_FILES = ('config.gin', 'operative_config.gin')
# A top-level macro and its value: the lines up to the next one that starts at column 0
# (gin writes a long value on indented lines after `NAME = \`).
_MACRO = re.compile(r'^([A-Z][A-Z0-9_]*) = (.*?)(?=^\S|\Z)', re.M | re.S)
_REFERENCE = re.compile(r'%([A-Z][A-Z0-9_]*)')


@dataclasses.dataclass(frozen=True)
class JobFiles:
  """A job's run file and the macro naming its output folder (DIR/<subdir> by default)."""
  run_file: str
  output_macro: str
  output_subdir: str

  def arguments(self, run_dir: str, files: Sequence[str], bindings: Sequence[str]
                ) -> tuple[list[str], list[str]]:
    """(gin files, bindings) of this job on the trained run in `run_dir`, the command
    line's own files and bindings last so that they override."""
    run_dir = os.path.abspath(run_dir)
    config = saved_config(run_dir)
    defaults = [f'CHECKPOINT_PATH = {run_dir!r}',
                f'{self.output_macro} = {os.path.join(run_dir, self.output_subdir)!r}']
    return ([config, self.run_file, *files],
            [*carried_bindings(config), *defaults, *bindings])

  # The saved config's training bindings: this job never calls them.
  not_called = gin_utils.TRAINING_ONLY

  @property
  def usage(self) -> str:
    return ("a trained run (its MODEL_DIR): its saved config gives the\n"
            "                           model, vocabulary, task and lengths; the flags above\n"
            "                           change what differs. Checkpoints from DIR, output to "
            f"DIR/{self.output_subdir}")


@dataclasses.dataclass(frozen=True)
class ResumedRun:
  """`train --run_dir=DIR`: the run's whole saved configuration, then the command line's,
  so resuming for more steps takes only what changes (`--gin.TRAIN_STEPS=...`) and not
  every flag the run was started with again."""

  def arguments(self, run_dir: str, files: Sequence[str], bindings: Sequence[str]
                ) -> tuple[list[str], list[str]]:
    run_dir = os.path.abspath(run_dir)
    return [saved_config(run_dir), *files], [f'MODEL_DIR = {run_dir!r}', *bindings]

  not_called = ()  # it trains: every binding of the saved config is called

  @property
  def usage(self) -> str:
    return ("a training run (its MODEL_DIR) to resume: its saved config,\n"
            "                           then the flags above (e.g. --gin.TRAIN_STEPS=...)")


@dataclasses.dataclass(frozen=True)
class ModelFiles:
  """`embed` and `relevance --run_dir=DIR`: the trained run's model and vocabulary (its
  saved config) at its newest checkpoint, then the job's run file and the command line's.
  Their inputs are SciRepEval's files, not the run's task, and their outputs are named
  by the command line (EMBEDDINGS_FILE, RELEVANCE_OUTPUT_DIR)."""
  run_file: str

  def arguments(self, run_dir: str, files: Sequence[str], bindings: Sequence[str]
                ) -> tuple[list[str], list[str]]:
    run_dir = os.path.abspath(run_dir)
    return ([saved_config(run_dir), self.run_file, *files],
            [f'CHECKPOINT_PATH = {run_dir!r}', *bindings])

  not_called = gin_utils.TRAINING_ONLY

  @property
  def usage(self) -> str:
    return ("a trained run (its MODEL_DIR): its saved config gives the\n"
            "                           model and vocabulary, its newest checkpoint the "
            "weights")


TRAIN = ResumedRun()
EVAL = JobFiles('runs/eval.gin', 'EVAL_OUTPUT_DIR', 'eval')
INFER = JobFiles('runs/infer.gin', 'INFER_OUTPUT_DIR', 'infer')
EXPORT = JobFiles('runs/export.gin', 'EXPORT_DIR', 'hf')
EMBED = ModelFiles('scirepeval/embed.gin')
RELEVANCE = ModelFiles('scirepeval/relevance.gin')


def config_file(folder: str | os.PathLike) -> pathlib.Path | None:
  """The configuration a run saved in `folder` (the first of CONFIG_FILES there), or None."""
  for name in CONFIG_FILES:
    path = pathlib.Path(folder, name)
    if path.is_file():
      return path
  return None


def saved_config(run_dir: str) -> str:
  """The run's saved configuration file; an error names the files looked for."""
  path = config_file(run_dir)
  if path is None:
    raise gin_utils.GinConfigError(
        f'--run_dir={run_dir}: no saved configuration there (looked for '
        f'{", ".join(CONFIG_FILES)}); a training run writes it into its MODEL_DIR.')
  return str(path)


def macros(text: str) -> dict[str, str]:
  """Each top-level macro of a saved configuration -> its value as gin text, on one line;
  a value that is another macro (`%NAME`) is that macro's value."""
  values = {}
  for name, value in _MACRO.findall(text):
    lines = value.replace('\\\n', '\n').splitlines()
    values[name] = ' '.join(line.strip() for line in lines if line.strip())
  for name in values:
    seen = {name}
    while (ref := _REFERENCE.fullmatch(values[name])) and ref[1] in values.keys() - seen:
      seen.add(ref[1])
      values[name] = values[ref[1]]
  return values


def saved_macros(folder: str | os.PathLike) -> dict[str, str]:
  """`macros` of the configuration saved in `folder`; empty where it holds none."""
  path = config_file(folder)
  return {} if path is None else macros(path.read_text(encoding='utf-8', errors='replace'))


def plain(value: str) -> str:
  """A macro's gin text as the string it names: a quoted string's contents, else as written."""
  try:
    literal = ast.literal_eval(value)
  except (ValueError, SyntaxError):
    return value
  return literal if isinstance(literal, str) else value


def bound(saved: Mapping[str, str], name: str) -> str | None:
  """The string macro `name` binds in `saved` (its `macros`; see `plain`); None where it is not
  bound or bound to None."""
  text = saved.get(name, 'None')
  return None if text == 'None' else plain(text)


def task_modules(saved: Mapping[str, str]) -> list[str] | None:
  """MIXTURE_OR_TASK_MODULE as `saved` (its `macros`, or their `plain` strings) binds it:
  the module, or the list of them, that registers the run's tasks; None where it binds
  none."""
  text = saved.get('MIXTURE_OR_TASK_MODULE', 'None')
  try:
    value = ast.literal_eval(text)
  except (ValueError, SyntaxError):
    value = text if re.fullmatch(r'[\w.]+', text) else None  # a `plain` module name
  if isinstance(value, str):
    return [value]
  if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
    return list(value)
  return None


def carried_bindings(config_path: str) -> list[str]:
  """`NAME = value` for each carried macro, as the saved configuration binds it (None
  where it binds none)."""
  values = macros(pathlib.Path(config_path).read_text(encoding='utf-8', errors='replace'))
  return [f'{name} = {values.get(name, "None")}' for name in CARRIED_MACROS]


def run_dir_of(checkpoint_path: str | os.PathLike) -> pathlib.Path | None:
  """The folder of the run that saved a checkpoint, where its configuration lies: the path
  itself (a model directory), or the one a step (`checkpoint_N`) or its `state` item is
  in; None where none of them holds a saved configuration."""
  path = pathlib.Path(os.fspath(checkpoint_path))
  folders = [path, path.parent] + ([path.parent.parent] if path.name == 'state' else [])
  return next((f for f in folders if config_file(f) is not None), None)


def trained_on(checkpoint_path: str | os.PathLike | None) -> list[str]:
  """The MIXTURE_OR_TASK_NAME a checkpoint was trained on (the configuration its run saved
  beside it or in the checkpoint folder), as a list: empty when the path is None or no
  configuration names one."""
  folder = None if checkpoint_path is None else run_dir_of(checkpoint_path)
  name = None if folder is None else bound(saved_macros(folder), 'MIXTURE_OR_TASK_NAME')
  return [] if name is None else [name]


def trained_vocabulary(checkpoint_path: str | os.PathLike) -> tuple[str, pathlib.Path] | None:
  """(VOCABULARY_PATH as the checkpoint's run bound it, `vocabularies.BYTES` for None; its
  saved configuration), or None where no saved configuration binds the macro."""
  folder = run_dir_of(checkpoint_path)
  if folder is None:
    return None
  saved = saved_macros(folder)
  if 'VOCABULARY_PATH' not in saved:
    return None
  return bound(saved, 'VOCABULARY_PATH') or vocabularies.BYTES, config_file(folder)
