"""What every command line does before its libraries load: `quiet_startup`.

TensorFlow's start-up lines (oneDNN, the CUDA stub, absl's notice, a failed CUDA start-up
where no driver is) and library warnings a user cannot act on stay off the console
unless `--verbose`, and TensorFlow, which only builds input pipelines, stays off the
GPUs that JAX computes on. A leaf every layer may import: the runtime's entry points
call it through `gin_utils.run_main`, and the task layer's command lines
(`python -m crosstask.tasks`, `crosstask.tasks.train_vocab`) call it themselves.
"""

import argparse
import contextlib
import gc
import importlib
import importlib.abc
import importlib.machinery
import logging
import os
import sys
import types
from collections.abc import Sequence


# Library log lines that name nothing a user of the command lines can change: SeqIO's
# advice on its own sequence-length and caching arguments, which the runtime sets, and
# orbax's notes on how the runtime opens a checkpoint.
UNACTIONABLE_WARNINGS = (
    'Given sequence lengths',          # seqio.Evaluator: lengths longer/shorter than needed
    'Using an uncached FunctionDataset',  # seqio: shuffling an uncached source
    "'logger_cls' is empty",           # seqio.Evaluator: the runtime writes its own records
    # orbax, reading a checkpoint for eval, infer or a restart: the runtime opens it
    # read-only, and a state saved without orbax's optional step metadata reads alike.
    'CheckpointManagerOptions.read_only=True, setting',
    'Given directory is read only=',
    'Metadata file does not exist:',
)


class _DropUnactionable(logging.Filter):
  def filter(self, record: logging.LogRecord) -> bool:
    return not (record.levelno < logging.ERROR
                and str(record.msg).startswith(UNACTIONABLE_WARNINGS))


@contextlib.contextmanager
def _stderr_silenced():
  """File descriptor 2 to /dev/null: C++ libraries write there, past Python's sys.stderr."""
  sys.stderr.flush()
  saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
  os.dup2(devnull, 2)
  try:
    yield
  finally:
    os.dup2(saved, 2)
    os.close(saved)
    os.close(devnull)


def keep_tensorflow_on_the_host(tf: types.ModuleType) -> None:
  """Hides the GPUs from TensorFlow, which builds the input pipelines on the host only
  (nothing to do where its devices exist already: too late to hide them).

  Why: with a GPU visible, TensorFlow initialises CUDA at its first operation and
  reserves most of the device's memory, which JAX's programs need (T5X hides them too).
  Where there is no GPU, this is where TensorFlow's failed CUDA start-up is logged.
  """
  try:
    tf.config.set_visible_devices([], 'GPU')
  except RuntimeError:  # "Visible devices cannot be modified after being initialized"
    pass


@contextlib.contextmanager
def _collector_paused_then_frozen():
  """Python's cyclic garbage collector off while a large library loads, and what it
  loaded frozen (`gc.freeze`) after, never to be scanned again.

  Why: TensorFlow's import makes ~700k objects that live as long as the process. With
  the collector on, its 1,200 collections during the import took 0.97 of the 4.97 CPU
  seconds `python -m crosstask.tasks --list` costs, and every later full collection
  walked them all again; paused and frozen, 0.13 (4.1 CPU s in all). The ~4k unreachable
  objects the import leaves are frozen with the rest rather than paid for with a full
  collection (0.35 s). A collector its caller turned off stays off.
  """
  enabled = gc.isenabled()
  gc.disable()
  try:
    yield
  finally:
    if enabled:
      gc.freeze()
      gc.enable()


# Optional integrations of Keras, which TensorFlow imports whole: Keras imports each if it
# can (its scikit-learn estimator wrappers, its image-gallery plot) and does without
# when it cannot. crosstask uses neither through Keras.
_KERAS_OPTIONAL = ('sklearn', 'matplotlib')


@contextlib.contextmanager
def _without_keras_optional_imports():
  """Keras's optional integrations unimportable for the length of TensorFlow's import,
  importable again after, by crosstask's own code (SciRepEval's probes, the results'
  plots) as by any other.

  Why: Keras took them at TensorFlow's import whether used or not: scikit-learn 0.61 s
  and matplotlib 0.41 s of the 4.3 s `import crosstask.train` with a task module
  spent importing, in every entry point's process. One imported already stays.
  """
  hidden = [name for name in _KERAS_OPTIONAL if name not in sys.modules]
  for name in hidden:
    sys.modules[name] = None  # `import name` raises ImportError
  try:
    yield
  finally:
    for name in hidden:
      if sys.modules.get(name, ()) is None:
        del sys.modules[name]


class _TensorFlowLoader(importlib.abc.Loader):
  """Runs TensorFlow's import, stderr silenced if asked, the garbage collector paused
  and Keras's optional integrations left out, then keeps it on the host."""

  def __init__(self, loader: importlib.abc.Loader, silent: bool):
    self._loader, self._silent = loader, silent

  def create_module(self, spec):
    return self._loader.create_module(spec)

  def exec_module(self, module) -> None:
    with (_stderr_silenced() if self._silent else contextlib.nullcontext(),
          _collector_paused_then_frozen(), _without_keras_optional_imports()):
      self._loader.exec_module(module)
      keep_tensorflow_on_the_host(module)


class _TensorFlowImport(importlib.abc.MetaPathFinder):
  """Finds `tensorflow` as Python would and imports it through `_TensorFlowLoader`,
  whenever it comes.

  Silent: TensorFlow 2.21 logs oneDNN and CUDA-stub lines from C++ before absl's
  logging is initialised, which TF_CPP_MIN_LOG_LEVEL does not reach; they go out at
  import, and its failed CUDA start-up (an error, on a machine without a GPU driver)
  where its devices are first listed, here too.
  """

  def __init__(self, silent: bool):
    self.silent = silent

  def find_spec(self, name, path, target=None):
    if name != 'tensorflow':
      return None
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is not None and spec.loader is not None:
      spec.loader = _TensorFlowLoader(spec.loader, self.silent)
    return spec


def _is_abandoned_read(e: BaseException | None,
                       traceback: types.TracebackType | None = None) -> bool:
  """A read orbax left when another failed: its read error (the one the checkpoint's one-line
  error reported) in the exception or what led to it, or TensorStore calling back into orbax's
  closed event loop from its own threads (a traceback that starts in asyncio's
  `call_soon_threadsafe`, with no Python caller)."""
  if (isinstance(e, RuntimeError) and str(e) == 'Event loop is closed' and traceback
      is not None and traceback.tb_frame.f_code.co_name == 'call_soon_threadsafe'):
    return True
  seen = set()
  while e is not None and id(e) not in seen:
    if str(e).startswith('Encountered error while reading array'):
      return True
    seen.add(id(e))
    e = e.__cause__ or e.__context__
  return False


class _DropAbandonedTasks(logging.Filter):
  def filter(self, record: logging.LogRecord) -> bool:
    return not ('exception was never retrieved' in str(record.msg).split('\n', 1)[0]
                and record.exc_info and _is_abandoned_read(record.exc_info[1]))


def _drop_abandoned_reads() -> None:
  """Keeps a damaged checkpoint's error one line: once a read has failed, orbax closes its
  event loop and leaves the other reads, which TensorStore finishes anyway. Each printed a
  traceback under the error as Python or asyncio dropped it (0 to 9 on a resume from
  damaged files: "Event loop is closed", the same read error again as an unraisable
  coroutine, or asyncio's "... exception was never retrieved"). Only those are dropped
  (`_is_abandoned_read`); every other unraisable exception and asyncio error is printed."""
  log = logging.getLogger('asyncio')
  if not any(isinstance(f, _DropAbandonedTasks) for f in log.filters):
    log.addFilter(_DropAbandonedTasks())
  previous = sys.unraisablehook
  if getattr(previous, 'drops_abandoned_reads', False):
    return

  def hook(unraisable) -> None:
    if not _is_abandoned_read(unraisable.exc_value, unraisable.exc_traceback):
      previous(unraisable)
  hook.drops_abandoned_reads = True
  sys.unraisablehook = hook


def quiet_startup(verbose: bool = False) -> None:
  """Keeps start-up noise, unactionable library warnings and the tracebacks of a damaged
  checkpoint's abandoned reads (`_drop_abandoned_reads`) off the console,
  TensorFlow off the GPUs (`keep_tensorflow_on_the_host`, verbose or not) and its
  import out of the garbage collector's way (`_collector_paused_then_frozen`).

  Call first in an entry point, before TensorFlow is imported: TensorFlow's C++
  log level is read from the environment when it loads, and its devices are fixed
  once listed. `verbose` leaves the console as the libraries have it.
  """
  if not verbose:
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')  # C++ errors only
    logging.getLogger('absl').addFilter(_DropUnactionable())
    _drop_abandoned_reads()
  if sys.modules.get('tensorflow') is not None:  # Imported already: hide what is left.
    keep_tensorflow_on_the_host(sys.modules['tensorflow'])
  elif 'tensorflow' not in sys.modules and not any(
      isinstance(f, _TensorFlowImport) for f in sys.meta_path):
    sys.meta_path.insert(0, _TensorFlowImport(silent=not verbose))


def quiet_main(module: str, argv: Sequence[str] | None = None) -> int:
  """`module.main(argv)` (argv: the process's arguments by default), started after
  `quiet_startup` with `--verbose` as given.

  Why: `python -m package.module` imports the package first, and a task package's import
  registers its tasks and loads TensorFlow before any code of the module runs, so its
  command line starts from a module outside the package that calls this."""
  argv = list(sys.argv[1:] if argv is None else argv)
  quiet_startup("--verbose" in argv)
  return importlib.import_module(module).main(argv)


def add_verbose_flag(parser: argparse.ArgumentParser) -> None:
  """`--verbose`, the flag every command line passes to `quiet_startup`."""
  parser.add_argument("--verbose", action="store_true",
                      help="keep TensorFlow's start-up lines and library warnings")
