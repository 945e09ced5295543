"""T5X-style gin command lines: --gin_file, --gin.NAME=VALUE, --gin_search_paths.

Every gin error is re-raised naming the file (or flag) it came from, and the
config in force is written next to the checkpoints.
"""

import difflib
import functools
import importlib
import inspect
import logging
import os
import pathlib
import re
import sys
from typing import Any, Callable, Collection, Mapping, Sequence

import gin
import numpy as np

from crosstask.paths import DataError

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_SEARCH_PATHS = (str(PACKAGE_DIR / 'gin'), str(PACKAGE_DIR / 't5x_configs'),
                        str(PACKAGE_DIR))

# Modules whose configurables gin files may name; imported before parsing.
CONFIGURABLE_MODULES = (
    'crosstask.runtime.jobs.train_lib', 'crosstask.runtime.jobs.eval_lib',
    'crosstask.runtime.jobs.infer_lib', 'crosstask.runtime.jobs.export_lib',
    'crosstask.runtime.state.optimizers',
    'crosstask.runtime.sharding.partitioning', 'crosstask.runtime.state.checkpoints',
    'crosstask.runtime.data.pipeline', 'crosstask.runtime.state.trainer',
    'crosstask.runtime.config.platform',
    'crosstask.models.model', 'crosstask.models.network', 'crosstask.models.config',
    'crosstask.models', 'crosstask.vocabularies')


USAGE = """Runs {what} configured by gin, as T5X does:
  --gin_file=FILE          a gin file (repeatable; relative paths are also looked up
                           in crosstask/gin and crosstask/t5x_configs), e.g.
                           --gin_file=t5_1_1/tiny.gin --gin_file=runs/finetune.gin
  --gin.NAME=VALUE         a binding or macro, e.g. --gin.MODEL_DIR="'/tmp/run'"
  --gin_bindings=BINDING   the same, T5X's older spelling
  --gin_search_paths=DIRS  extra comma-separated directories for gin files
  --tfds_data_dir=DIR      where TFDS-backed tasks find their data
  --verbose                keep TensorFlow's start-up lines and library warnings
{run_dir}"""


RUN_DIR_USAGE = '  --run_dir=DIR            {}\n'


class GinConfigError(ValueError):
  """A gin file or binding that does not parse; the message names its source."""


def import_configurables() -> None:
  for name in CONFIGURABLE_MODULES:
    try:
      importlib.import_module(name)
    except ModuleNotFoundError as e:
      # A module not written (yet), or data libraries absent: not needed to parse.
      if e.name is None or not (name.startswith(e.name) or e.name in ('seqio', 'tensorflow')):
        raise  # A real missing dependency inside an existing module.


def split_args(argv: Sequence[str]) -> tuple[list[str], list[str], list[str], dict[str, str]]:
  """(gin files, bindings, search paths, other --flag=value) from a command line."""
  files, bindings, paths, other = [], [], [], {}
  args = list(argv)
  i = 0
  while i < len(args):
    arg = args[i]
    if not arg.startswith('--'):
      raise SystemExit(f'Unexpected argument {arg!r}; flags look like --gin_file=FILE.')
    if '=' in arg:
      key, value = arg[2:].split('=', 1)
    else:
      key = arg[2:]
      if i + 1 >= len(args):
        raise SystemExit(f'Flag --{key} needs a value.')
      value = args[i + 1]
      i += 1
    if key == 'gin_file':
      files.extend(v for v in value.split(',') if v)
    elif key.startswith('gin.'):
      bindings.append(f'{key[4:]}={value}')
    elif key == 'gin_bindings':
      bindings.append(value)
    elif key == 'gin_search_paths':
      paths.extend(v for v in value.split(',') if v)
    else:
      other[key] = value
    i += 1
  return files, bindings, paths, other


def resolve(path: str, search_paths: Sequence[str]) -> str:
  if os.path.isfile(path):
    return os.path.abspath(path)
  for root in search_paths:
    candidate = os.path.join(root, path)
    if os.path.isfile(candidate):
      return candidate
  raise GinConfigError(f'Gin file {path!r} not found (looked in the working directory and '
                       f'search paths {list(search_paths)}).')


class _QuietSearch(logging.Filter):
  """Drops gin's 'Path not found' lines: a miss in one search path is not an error."""

  def filter(self, record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith('Path not found')


logging.getLogger().addFilter(_QuietSearch())


def _no_error_when_absent(exists: Callable[[str], bool]) -> Callable[[str], bool]:
  def checked(path: str) -> bool:
    try:
      return exists(path)
    except (TypeError, AttributeError):
      return False
  checked.__wrapped__ = exists
  return checked


def _keep_folders_named_like_ours_from_breaking_includes() -> None:
  """Makes gin's package-resource lookup say "not here" instead of raising.

  Why: gin tries each include (`include 'runs/_partitioning.gin'`) in the working
  directory first, as an open file and then as a resource of a Python package named
  by its folder (`runs`). With a folder `runs/` (or `t5_1_1/`, `clue/`) in the working
  directory, which `python -m` puts on sys.path, that folder imports as a namespace
  package without a file, and gin's check failed with "expected str, bytes or
  os.PathLike object, not NoneType" before it reached crosstask's search paths. gin
  has no public way to replace a registered reader, so its list is edited in place.
  """
  readers = gin.config._FILE_READERS  # pylint: disable=protected-access
  for i, (reader, exists) in enumerate(readers):
    if reader is not open and not hasattr(exists, '__wrapped__'):
      readers[i] = (reader, _no_error_when_absent(exists))


_keep_folders_named_like_ours_from_breaking_includes()


def parse(files: Sequence[str], bindings: Sequence[str],
          search_paths: Sequence[str] = (), lock: bool = True,
          placeholders: Mapping[str, str] | None = None) -> list[str]:
  """Parses files then bindings in order, as T5X does; errors name the culprit.

  `lock=False` still runs gin's finalize checks but leaves the config unlocked, so a
  program that reads a config (`runtime.model_gin`) can import more configurables later.
  `placeholders` ({macro: value text}) are bound only where the files and bindings
  leave a macro unset or `%gin.REQUIRED`: a job that never reads a macro (a compile's
  MODEL_DIR) need not have it set, and one the files do set keeps their value.
  Returns the macros given placeholders.
  """
  import_configurables()
  paths = list(search_paths) + list(DEFAULT_SEARCH_PATHS)
  for p in paths:
    gin.add_config_file_search_path(p)
  for f in files:
    resolved = resolve(f, paths)
    try:
      gin.parse_config_file(resolved)
    except Exception as e:  # gin raises several types; all mean a bad config.
      raise GinConfigError(f'Error in gin file {resolved} (--gin_file={f}):\n{e}'
                           f'{_parameter_hint(str(e))}') from e
  for b in bindings:
    try:
      gin.parse_config(b)
    except Exception as e:
      raise GinConfigError(f'Error in gin binding --gin.{b}:\n{e}{_unquoted_hint(b)}'
                           f'{_parameter_hint(str(e))}') from e
  placed = [name for name in (placeholders or {}) if not macro_is_set(name)]
  for name in placed:
    gin.parse_config(f'{name} = {placeholders[name]}')
  try:
    if lock:
      gin.finalize()
    else:
      with gin.unlock_config():  # Restores the unlocked state finalize() leaves locked.
        gin.finalize()
  except ValueError as e:  # A `%gin.REQUIRED` macro nobody set, e.g. MODEL_DIR.
    unset = re.match(r'(\w+)/macro\.value set to `%gin\.REQUIRED`', str(e))
    name = unset[1] if unset else 'NAME'
    first = (f'Macro {name} must be set: the files leave it %gin.REQUIRED.' if unset
             else str(e))
    raise GinConfigError(f'{first}{_misspelt_hint(name, bindings)}\nSet it on the command line '
                         f'(--gin.{name}=VALUE) or in a gin file; files parsed: '
                         f'{list(files)}') from e
  return placed


def _misspelt_hint(required: str, bindings: Sequence[str]) -> str:
  """' --gin.TRAIN_STEP=5 sets macro TRAIN_STEP, not TRAIN_STEPS.' where a binding sets a
  macro whose name is close to the unset one (gin takes the typo as a macro of its own)."""
  for binding in bindings:
    for name in _MACRO_BINDING.findall(binding):
      if name != required and difflib.get_close_matches(required.upper(), [name.upper()],
                                                        cutoff=0.8):
        return f' --gin.{binding.strip()} sets macro {name}, not {required}.'
  return ''


_NO_PARAMETER = re.compile(r"Configurable '([\w.]+)' doesn't have a parameter named '(\w+)'")
_NO_CONFIGURABLE = re.compile(r"No configurable matching '([\w.]+)'")
# T5X's configurables a T5X user binds by habit, and what crosstask calls them.
T5X_NAMES = {
    'network.T5Config': ('config.TransformerConfig', "(T5Config's emb_dim, mlp_dim, head_dim "
                         'and mlp_activations are its d_model, d_ff, d_kv and activations; '
                         'its vocab_size is NUM_EMBEDDINGS)'),
    'models.EncoderDecoderModel': ('model.EncoderDecoderModel', ''),
    'partitioning.PjitPartitioner': ('partitioning.Partitioner', '(or the macros LAYOUT and '
                                     'NUM_PARTITIONS)'),
    'adafactor.Adafactor': ('optimizers.adafactor', ''),
}


def _parameter_hint(message: str) -> str:
  """The close names where gin says a configurable, or a configurable's parameter, does
  not exist (gin names neither what was meant nor what there is)."""
  registry = gin.config._REGISTRY  # pylint: disable=protected-access
  unknown = _NO_CONFIGURABLE.search(message)
  if unknown:
    t5x = next((T5X_NAMES[n] for n in T5X_NAMES if unknown[1] in (n, n.split('.')[-1])), None)
    if t5x:
      return (f"\n{unknown[1]} is T5X's name; crosstask's is {t5x[0]} {t5x[1]}".rstrip()
              + '; crosstask/gin/t5_1_1/base.gin shows its bindings.')
    known = sorted(selector for selector, _ in registry.items())
    close = difflib.get_close_matches(unknown[1], known, n=3, cutoff=0.6)
    return f"\nDid you mean {' or '.join(close)}?" if close else ''
  found = _NO_PARAMETER.search(message)
  if not found:
    return ''
  selector, name = found.groups()
  try:
    wrapped = registry.get_match(selector).wrapped
    parameters = [p for p in inspect.signature(wrapped).parameters
                  if p not in ('self', 'args', 'kwargs')]
  except (AttributeError, KeyError, TypeError, ValueError):
    return ''
  close = difflib.get_close_matches(name, parameters, n=3, cutoff=0.6)
  guess = f"Did you mean {' or '.join(close)}? " if close else ''
  return f"\n{guess}{selector} takes: {', '.join(parameters)}"


def _unquoted_hint(binding: str) -> str:
  """What to write where a binding's value reads as a bare word or path: gin's quotes
  inside the shell's (`--gin.MODEL_DIR=/tmp/x` is gin's "Unable to parse value")."""
  name, sep, value = binding.partition('=')
  value = value.strip()
  if (not sep or not value or value[0] in '\'"[({@%-+.0123456789'
      or value in ('True', 'False', 'None')):
    return ''
  return (f"\nA string value is written in gin's quotes, inside the shell's: "
          f"--gin.{name.strip()}=\"'{value}'\"")


_MACRO_BINDING = re.compile(r'^\s*([A-Za-z_]\w*)\s*=', re.M)
_MACRO_REFERENCE = re.compile(r'%([A-Za-z_]\w*)\b(?!\.)')
# A macro set in a gin file: at the start of a line (a block's parameters are indented).
_FILE_MACRO = re.compile(r'([A-Za-z_]\w*)\s*=')


# What a trained run's saved config binds for training alone: a job that starts from it
# (`eval --run_dir`) never calls these, so the macros they read are not read by the job.
TRAINING_ONLY = ('train_lib.train.', 'train_script.train.', 'train/', 'train_eval/',
                 'infer_eval/', 'optimizers.', 'schedules.', 'trainer.Trainer.',
                 'checkpoints.SaveCheckpointConfig.', 'utils.SaveCheckpointConfig.')


def _macros_read(not_called: Sequence[str]) -> set[str]:
  """The macros the parsed config's bindings refer to, but for the bindings of the
  configurables (selector prefixes) in `not_called`."""
  read, counted = set(), True
  for line in gin.config_str().splitlines():
    if line and not line[0].isspace() and not line.startswith('#'):
      counted = not line.startswith(tuple(not_called))  # a binding starts; the rest continue
    if counted:
      read.update(_MACRO_REFERENCE.findall(line))
  return read


def check_macros_read(bindings: Sequence[str], read_by_code: Collection[str] = (),
                      files: Sequence[str] = (), search_paths: Sequence[str] = (),
                      not_called: Sequence[str] = ()) -> None:
  """Refuses a macro set by `bindings` (the command line's) that nothing reads, and one
  set in a user's gin file among `files` that no crosstask configuration reads.

  gin takes `--gin.TRAIN_STEP=5` as a new macro and the run goes on with the files'
  TRAIN_STEPS: a typo, or a macro this job's files never use, would be silently
  ignored. A user's file may set a macro another job reads (one file for train and
  infer), so there only macros no shipped gin file reads are refused. Call after
  `parse` (with its `search_paths`); `read_by_code` names macros the job queries itself;
  `not_called` names configurables (selector prefixes) the job never calls, though its
  files bind them (a trained run's saved config: `TRAINING_ONLY`).
  """
  read = _macros_read(not_called) | set(read_by_code)

  def unread(name: str, where: str) -> GinConfigError:
    # gin's macros are case-sensitive: `initial_checkpoint_path` is not the macro.
    upper = [m for m in sorted(read) if m.upper() == name.upper()]
    close = upper or difflib.get_close_matches(name.upper(), sorted(read), n=3, cutoff=0.6)
    return GinConfigError(
        f'{where}: no configuration of this job reads macro {name}, so it would change '
        'nothing' + (f'. Did you mean {", ".join(close)}?' if close else
                     f'. The macros it reads: {", ".join(sorted(read))}' if read else
                     '; it reads no macro'))
  for binding in bindings:
    for name in _MACRO_BINDING.findall(binding):
      if name not in read:
        raise unread(name, f'--gin.{binding.strip()}')
  paths = list(search_paths) + list(DEFAULT_SEARCH_PATHS)
  for f in files:
    path = resolve(f, paths)
    if pathlib.Path(path).resolve().is_relative_to(PACKAGE_DIR):
      continue  # A shipped file: its macros are read by the jobs that include it.
    with open(path, encoding='utf-8') as lines:
      for number, line in enumerate(lines, 1):
        setting = _FILE_MACRO.match(line)
        if setting and setting[1] not in read and setting[1] not in _shipped_macros():
          raise unread(setting[1], f'{path}, line {number} ({line.strip()[:60]})')


@functools.cache
def _shipped_macros() -> frozenset[str]:
  """The macros some shipped gin file reads (for some job)."""
  return frozenset(name for root in DEFAULT_SEARCH_PATHS[:2]
                   for f in pathlib.Path(root).rglob('*.gin')
                   for name in _MACRO_REFERENCE.findall(f.read_text(encoding='utf-8')))


def macro_is_set(name: str) -> bool:
  """Whether the parsed config binds macro `name` to anything but `%gin.REQUIRED`.

  Reads the binding without evaluating it: a macro bound to a configurable's call
  (`@fn()`) counts as set and `fn` is not run.
  """
  try:
    value = gin.query_parameter(f'%{name}')
  except ValueError:
    return False
  return not (isinstance(value, gin.config.ConfigurableReference)
              and value.selector == 'gin.constant'
              and value.scoped_configurable_fn() is gin.REQUIRED)


_NO_DEFAULT = object()


def query(selector: str, default: Any = _NO_DEFAULT) -> Any:
  """What a parsed binding or macro ('%MODEL') evaluates to: a configurable reference
  is called, as gin would when passing it; `default` where nothing binds it."""
  try:
    value = gin.query_parameter(selector)
  except ValueError:
    if default is _NO_DEFAULT:
      raise
    return default
  if isinstance(value, gin.config.ConfigurableReference):
    return value.scoped_configurable_fn()
  return value


def call_configured(fn, what: str):
  """Calls a configured function; a required argument gin never got is named clearly."""
  try:
    return fn()
  except RuntimeError as e:
    if 'Required bindings' in str(e):
      raise GinConfigError(f'Gin configuration of {what} is incomplete (did you pass a model '
                           f'gin file and a runs/*.gin file?):\n{e}') from e
    raise


_REFUSED_MACRO = re.compile(r'([A-Z][A-Z0-9_]*)=')


def _where_set(message: str, bindings: Sequence[str], files: Sequence[str],
               search_paths: Sequence[str]) -> str:
  """' (set by --gin.X=...)' or ' (set in FILE, line N)' for the macro a refusal names
  (`check_count`'s 'BATCH_SIZE='four': ...'), where a flag or a file named on the command
  line sets it; '' where only an included file does, or the message names no macro."""
  refused = _REFUSED_MACRO.match(message)
  if refused is None:
    return ''
  name = refused[1]
  for binding in reversed(bindings):  # the last setting wins, as in gin
    if name in _MACRO_BINDING.findall(binding):
      return f' (set by --gin.{binding.strip()})'
  for f in reversed(files):
    try:
      path = resolve(f, list(search_paths) + list(DEFAULT_SEARCH_PATHS))
      lines = pathlib.Path(path).read_text(encoding='utf-8').splitlines()
    except (GinConfigError, OSError):
      continue
    found = [n for n, line in enumerate(lines, 1)
             if (setting := _FILE_MACRO.match(line)) and setting[1] == name]
    if found:
      return f' (set in {path}, line {found[-1]})'
  return ''


def check_count(macro: str, value: Any, least: int) -> None:
  """Refuses a count that is not a whole number of at least `least`, named by the macro
  the shipped run gins set it with, before the job starts: a quoted '4', a period of 0
  or no checkpoint kept failed late, or ran and kept nothing."""
  whole = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
  if not whole or value < least:
    raise _refused(macro, value, f'a whole number of at least {least}')


def check_number(macro: str, value: Any, least: float) -> None:
  """Refuses a setting that is not a real number of at least `least`, named by its macro,
  before the job starts: a quoted '1e-3' failed inside the first compiled step."""
  number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
  if not number or not value >= least:  # NaN too
    raise _refused(macro, value, f'a number of at least {least}')


def _refused(macro: str, value: Any, expected: str) -> GinConfigError:
  return GinConfigError(f'{macro}={value!r}: expected {expected}'
                        + (' (unquoted)' if isinstance(value, str) else '') + '.')


def summarize_gin_config(model_dir: str, summary_writer=None, step: int = 0) -> None:
  """Writes the whole parsed config to MODEL_DIR/config.gin (and to TensorBoard)."""
  text = gin.config_str()
  with open(os.path.join(model_dir, 'config.gin'), 'w') as f:
    f.write(text)
  if summary_writer is not None:
    summary_writer.write_texts(step, {'config': gin.markdown(text)})


_OUTPUT_DIRS: list[str] = []


def write_operative_config(model_dir: str) -> None:
  """The parameters actually used so far (gin's operative config), as T5X writes it.

  Gin records a configurable's own parameters only once its call returns, so the
  entry point writes the file again after the job (see `run_main`).
  """
  with open(os.path.join(model_dir, 'operative_config.gin'), 'w') as f:
    f.write(gin.operative_config_str())
  if model_dir not in _OUTPUT_DIRS:
    _OUTPUT_DIRS.append(model_dir)


def run_main(fn, argv: Sequence[str] | None = None, what: str = 'the job',
             job: str | None = None, saved_run_job=None) -> None:
  """Entry-point body: parse the command line, apply side flags, call `fn` via gin.

  `job` ('train', or 'infer' for decoding, scoring and embedding) applies the
  platform profile (`platform`): the host allocator's settings before JAX starts,
  then, once gin is parsed, the PRNG implementation and compilation cache. None
  leaves the process as it is. `saved_run_job` (a `saved_run.JobFiles`, or
  `saved_run.TRAIN`) lets the command take `--run_dir=DIR`, a trained run whose saved
  config it starts from.
  """
  from crosstask import startup  # pylint: disable=import-outside-toplevel
  from crosstask.runtime.config import platform  # pylint: disable=import-outside-toplevel
  from crosstask.runtime.report import console  # pylint: disable=import-outside-toplevel
  argv = sys.argv[1:] if argv is None else list(argv)
  verbose = '--verbose' in argv
  argv = [a for a in argv if a != '--verbose']
  startup.quiet_startup(verbose)
  if not argv or argv[0] in ('-h', '--help', 'help'):
    console.say(USAGE.format(what=what,
                             run_dir='' if saved_run_job is None else
                             RUN_DIR_USAGE.format(saved_run_job.usage)))
    if not argv:
      raise SystemExit(2)
    return
  files, bindings, paths, other = split_args(argv)
  tfds_data_dir = other.pop('tfds_data_dir', None)
  run_dir = other.pop('run_dir', None) if saved_run_job is not None else None
  if other:
    raise SystemExit(f'Unknown flags: {", ".join("--" + k for k in other)}')
  if job is not None:
    try:  # Before TF's or JAX's threads first allocate.
      logging.info('host malloc: %s', platform.prepare_host(job))
    except ValueError as e:  # A bad $CROSSTASK_MALLOC.
      raise SystemExit(f'ERROR: {e}') from e
  if tfds_data_dir is not None:
    import seqio
    seqio.set_tfds_data_dir_override(tfds_data_dir)
  try:
    given, given_files = list(bindings), list(files)
    if run_dir is not None:
      files, bindings = saved_run_job.arguments(run_dir, files, bindings)
    parse(files, bindings, paths)
    check_macros_read(given, files=given_files, search_paths=paths,
                      not_called=saved_run_job.not_called if run_dir is not None else ())
    from crosstask.runtime.sharding import partitioning
    try:
      partitioning.initialize_distributed()
    except ValueError as e:  # MULTIHOST=True and no cluster to join: it says how to launch.
      raise GinConfigError(str(e)) from e
    if job is not None:
      try:
        chosen = platform.profile()
      except ValueError as e:  # e.g. a platform.profile.name that names no platform
        raise GinConfigError(str(e)) from e
      platform.apply(chosen)
    call_configured(fn, what)
    for model_dir in _OUTPUT_DIRS:
      write_operative_config(model_dir)
  except Exception as e:  # pylint: disable=broad-except
    from crosstask.models import config as model_config  # pylint: disable=import-outside-toplevel
    from crosstask.runtime.data import pipeline  # pylint: disable=import-outside-toplevel
    from crosstask.runtime.sharding import partitioning  # pylint: disable=import-outside-toplevel
    # A mistake in the configuration: a binding, a model setting, a task, split or module
    # not there, or a layout or batch the devices cannot take.
    if isinstance(e, (GinConfigError, model_config.ConfigError, pipeline.TaskConfigError,
                      partitioning.LayoutError)):
      console.error(str(e) + _where_set(str(e), given, given_files, paths))
      raise SystemExit(2)
    from crosstask.runtime.report import faults  # What a run meets, said without a traceback.
    if isinstance(e, faults.Preempted):
      console.say(console.without_gin_call_notes(str(e)))
      raise SystemExit(faults.PREEMPTED_EXIT_CODE)
    # A missing data or checkpoint file, or a malformed data file: its message names the
    # path (--verbose: traceback).
    if isinstance(e, faults.EXPECTED_FAULTS) or (
        isinstance(e, (FileNotFoundError, DataError)) and not verbose):
      console.error(str(e))
      raise SystemExit(1)
    raise
