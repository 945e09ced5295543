"""Bad input across the project: each case must fail with a clear error that names
where (file and line, record, field, flag or tensor), and lose nothing already written.

One table, `CASES`. A case is `BadInput(id, trigger, error, match)`: `trigger` is a
zero-argument callable that must raise `error` with `match` (a regex) in its message.
Files a case writes through `keep(path, data)` must still hold the same bytes
afterwards; an optional `intact` callable checks more (a checkpoint still restores).
Other benchmarks' reader cases append plain tuples with `add_cases(...)`.
"""

import atexit
import json
import os
import pathlib
import re
import shutil
import socket
import tempfile
from typing import Any, Callable, Iterable, NamedTuple

import numpy as np
import pytest

from crosstask.models.config import ConfigError as ModelConfigError
from crosstask.runtime.config.gin_utils import GinConfigError
from crosstask.runtime.data.pipeline import TaskConfigError
from crosstask.runtime.report.faults import CheckpointMismatchError
from crosstask.runtime.sharding.partitioning import LayoutError



class BadInput(NamedTuple):
  id: str
  trigger: Callable[[], Any]
  error: type[BaseException]
  match: str
  intact: Callable[[], None] | None = None


CASES: list[BadInput] = []
_KEPT: dict[pathlib.Path, bytes] = {}
# Every process that imports this module (each xdist worker) writes its cases' files
# here; removed when it exits, so runs leave nothing behind in the temporary directory.
_ROOT = pathlib.Path(tempfile.mkdtemp(prefix='crosstask-bad-inputs-'))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)


def add_cases(cases: Iterable[tuple]) -> None:
  """Appends cases given as (id, trigger, error, match[, intact]) tuples."""
  for case in cases:
    CASES.append(BadInput(*case))


def case(id_: str, error: type[BaseException], match: str,
         intact: Callable[[], None] | None = None):
  """Decorator form: the decorated zero-argument function is the trigger."""
  def register(fn):
    CASES.append(BadInput(id_, fn, error, match, intact))
    return fn
  return register


def scratch(name: str) -> pathlib.Path:
  path = _ROOT / name
  path.mkdir(parents=True, exist_ok=True)
  return path


def keep(path: pathlib.Path, data: bytes | str) -> pathlib.Path:
  """Writes `data` to `path` and records it: the test checks it is unchanged after."""
  path.parent.mkdir(parents=True, exist_ok=True)
  raw = data.encode() if isinstance(data, str) else data
  path.write_bytes(raw)
  _KEPT[path] = raw
  return path


# ---------------------------------------------------------------- CSL readers

def _csl_root(name: str, rows: dict[str, str] | None = None) -> pathlib.Path:
  """A data root with the four CSL benchmark dev files (two good papers each)."""
  root = scratch(name)
  good = {
      'ts': 'to title\t摘要一\t标题一\nto title\t摘要二\t标题二\n',
      'kg': 'to keywords\t摘要一 标题一\t词_语\nto keywords\t摘要二 标题二\t甲_乙\n',
      'cls_ctg': 'to category\t标题一\t工学\nto category\t标题二\t理学\n',
      'cls_dcp': 'to discipline\t摘要一\t计算机\nto discipline\t摘要二\t数学\n',
  }
  good.update(rows or {})
  for task, text in good.items():
    keep(root / 'csl' / 'benchmark' / task / 'dev.tsv', text.encode() if isinstance(text, str)
         else text)
  return root


def _read_csl(root, split='dev', **kw):
  from crosstask.tasks.csl import readers
  return list(readers.read_records(split, root, **kw))


add_cases([
    ('csl-wrong-columns', lambda: _read_csl(_csl_root('c1', {'ts': 'to title\t摘要一\n'})),
     ValueError, r'c1/csl/benchmark/ts/dev\.tsv:1: .*expected 3 .*columns, got 2'),
    ('csl-bad-utf8', lambda: _read_csl(_csl_root('c2', {'kg': b'to keywords\t\xff\xfe\tx\n'})),
     ValueError, r'c2/csl/benchmark/kg/dev\.tsv:1: .*UTF-8'),
    ('csl-empty-field', lambda: _read_csl(_csl_root(
        'c3', {'cls_ctg': 'to category\t标题一\t \nto category\t标题二\t理学\n'})),
     ValueError, r'c3/csl/benchmark/cls_ctg/dev\.tsv:1: .*empty'),
    ('csl-join-title-out-of-step', lambda: _read_csl(_csl_root(
        'c4', {'cls_ctg': 'to category\t标题二\t工学\nto category\t标题一\t理学\n'})),
     ValueError, r'join out of step: title .*cls_ctg/dev\.tsv:1'),
    ('csl-join-abstract-out-of-step', lambda: _read_csl(_csl_root(
        'c5', {'cls_dcp': 'to discipline\t摘要二\t计算机\nto discipline\t摘要一\t数学\n'})),
     ValueError, r'join out of step: abstract .*ts/dev\.tsv:1'),
    ('csl-row-counts-differ', lambda: _read_csl(_csl_root(
        'c6', {'kg': 'to keywords\t摘要一 标题一\t词_语\n'})),
     ValueError, r'different row counts: .*kg/dev\.tsv=1'),
    ('csl-missing-split', lambda: _read_csl(_csl_root('c7'), split='train'),
     FileNotFoundError, r"split 'train' needs all four .*c7/csl/benchmark/ts/train\.tsv"),
    ('csl-missing-full-file', lambda: _read_csl(_csl_root('c8'), split='full'),
     FileNotFoundError, r'c8/csl/csl_camera_readly\.tsv'),
    ('csl-bad-on-bad-row', lambda: _read_csl(_csl_root('c9'), on_bad_row='ignore'),
     ValueError, r"on_bad_row.*'ignore'"),
    ('csl-empty-data-root', lambda: _read_csl(scratch('c10')),
     FileNotFoundError, r'c10/csl/benchmark/ts/dev\.tsv'),
])


# ------------------------------------------------------- shared reader layer

def _common(fn_name: str, name: str, text: bytes, **kw):
  from crosstask.tasks.common import readers
  path = keep(scratch('common') / name, text)
  fn = getattr(readers, fn_name)
  out = fn(path, **kw)
  return out if fn_name == 'read_json' else list(out)


add_cases([
    ('jsonl-bad-json', lambda: _common('read_jsonl', 'a.jsonl', b'{"a": 1}\n{"a": \n'),
     ValueError, r'common/a\.jsonl:2'),
    ('jsonl-not-an-object', lambda: _common('read_jsonl', 'b.jsonl', b'{"a": 1}\n[1, 2]\n'),
     ValueError, r'common/b\.jsonl:2'),
    ('jsonl-bad-utf8', lambda: _common('read_jsonl', 'c.jsonl', b'{"a": "\xff"}\n'),
     ValueError, r'common/c\.jsonl:1.*UTF-8'),
    ('json-syntax-error', lambda: _common('read_json', 'd.json', b'{\n  "a": [1,\n}\n'),
     ValueError, r'common/d\.json:3'),
    ('tsv-wrong-columns', lambda: _common('read_tsv', 'e.tsv', b'a\tb\na\n', ncols=2),
     ValueError, r'common/e\.tsv:2'),
    ('squad-missing-field', lambda: _common(
        'read_squad', 'f.json', json.dumps({'data': [{'title': 't', 'paragraphs': [
            {'context': 'c', 'qas': [{'id': 'q1', 'answers': []}]}]}]}).encode()),
     ValueError, r"common/f\.json.*question"),
])


@case('record-missing-field', ValueError, r"data\.jsonl:7.*'label'")
def _missing_field():
  from crosstask.tasks.common import readers
  readers.require({'text': 'x'}, ['text', 'label'], 'data.jsonl:7')


# ---------------------------------------------------------- gin and CLI flags

def _gin_parse(files, bindings=(), given=()):
  """Parses as an entry point does; `given`: the command line's bindings, checked read."""
  import gin
  from crosstask.runtime.config import gin_utils
  gin.clear_config()
  try:
    gin_utils.parse(files, list(bindings) + list(given))
    gin_utils.check_macros_read(list(given), files=files)
  finally:
    gin.clear_config()


TINY = str(pathlib.Path(__file__).resolve().parent / 'runtime_configs' / 'tiny_model.gin')
_RUN = ["MODEL_DIR='/tmp/x'", 'TRAIN_STEPS=3', "MIXTURE_OR_TASK_NAME='x'",
        "TASK_FEATURE_LENGTHS={'inputs': 8, 'targets': 8}"]


def _gin_from_text(name: str, text: str, bindings=()):
  from crosstask.runtime.config import gin_utils
  path = keep(scratch('gin') / name, text)
  _gin_parse([TINY, str(path)], bindings)


def _run_main(argv):
  from crosstask.runtime.config import gin_utils
  gin_utils.run_main(lambda: None, argv, what='test')


add_cases([
    ('gin-unknown-configurable',
     lambda: _gin_from_text('a.gin', 'MODEL = None\nno_such.Configurable.x = 1\n'),
     Exception, r'gin/a\.gin.*no_such'),
    ('gin-unknown-parameter',
     lambda: _gin_from_text('b.gin', "train_script.train.total_step = 3\n"),
     Exception, r'gin/b\.gin.*total_step.*\nDid you mean total_steps or eval_steps\? '
     r'train_script\.train takes: model, .*, total_steps, '),
    # gin names neither what was meant nor what there is; the error adds both.
    ('gin-misspelt-configurable', lambda: _gin_parse(
        [TINY, 'runs/finetune.gin'], _RUN + ['train_script.trian.total_steps=3']),
     Exception, r"No configurable matching 'train_script\.trian'.*\nDid you mean "
     r'train_script\.train'),
    # A T5X user's habit: T5X's name, and where crosstask's parameters differ, theirs.
    ('gin-t5x-configurable', lambda: _gin_parse(
        [TINY, 'runs/finetune.gin'], _RUN + ['network.T5Config.emb_dim=64']),
     Exception, r"No configurable matching 'network\.T5Config'.*\nnetwork\.T5Config is T5X's "
     r"name; crosstask's is config\.TransformerConfig \(T5Config's emb_dim, mlp_dim, head_dim "
     r"and mlp_activations are its d_model, d_ff, d_kv and activations"),
    ('gin-bad-syntax', lambda: _gin_from_text('c.gin', 'TRAIN_STEPS = (\n'),
     Exception, r'gin/c\.gin'),
    ('gin-undefined-macro', lambda: _gin_from_text(
        'd.gin', "include 'runs/finetune.gin'\ntrain_script.train.total_steps = %NO_SUCH\n",
        _RUN), Exception, r'NO_SUCH'),
    ('gin-missing-file', lambda: _gin_parse(['runs/no_such.gin']),
     Exception, r"Gin file 'runs/no_such\.gin' not found"),
    ('gin-required-macro-unset', lambda: _gin_parse([TINY, 'runs/finetune.gin'], _RUN[1:]),
     Exception, r'Macro MODEL_DIR must be set: the files leave it %gin\.REQUIRED\.\nSet it '
     r'on the command line \(--gin\.MODEL_DIR=VALUE\)'),
    # A misspelt required macro: gin takes the typo as a macro of its own, and the real
    # one is unset; the message named only the real one.
    ('gin-required-macro-misspelt', lambda: _gin_parse(
        [TINY, 'runs/finetune.gin'], [_RUN[0], 'TRAIN_STEP=3', *_RUN[2:]]),
     Exception, r'Macro TRAIN_STEPS must be set: the files leave it %gin\.REQUIRED\. '
     r'--gin\.TRAIN_STEP=3 sets macro TRAIN_STEP, not TRAIN_STEPS\.'),
    ('gin-bad-binding', lambda: _gin_parse([TINY, 'runs/finetune.gin'],
                                           _RUN + ['train_script.train.nope=1']),
     Exception, r'--gin\.train_script\.train\.nope=1'),
    ('gin-binding-syntax', lambda: _gin_parse([TINY, 'runs/finetune.gin'], _RUN + ['TRAIN_STEPS=(']),
     Exception, r'--gin\.TRAIN_STEPS=\('),
    # gin would take a misspelt macro as a new one, and the run would go on without it.
    ('gin-macro-nothing-reads', lambda: _gin_parse([TINY, 'runs/finetune.gin'], _RUN,
                                                   ['TRAIN_STEPS=4', 'TRAIN_STEP=5']),
     Exception, r'--gin\.TRAIN_STEP=5: no configuration of this job reads macro TRAIN_STEP, '
     r'so it would change nothing\. Did you mean TRAIN_STEPS'),
    # gin's macros are case-sensitive; T5X's names are upper case.
    ('gin-macro-in-lower-case', lambda: _gin_parse([TINY, 'runs/finetune.gin'], _RUN,
                                                   ["initial_checkpoint_path='/x'"]),
     Exception, r"reads macro initial_checkpoint_path, so it would change nothing\. Did you "
     r"mean INITIAL_CHECKPOINT_PATH\?"),
    # The same typo in a user's gin file; a macro another job reads (INFER_OUTPUT_DIR, in
    # one file for train and infer) is let through, as is one the file itself reads.
    ('gin-file-macro-nothing-reads', lambda: _gin_from_text(
        'e.gin', "include 'runs/finetune.gin'\nINFER_OUTPUT_DIR = '/tmp/i'\nMY_LR = 0.1\n"
        "LEARNING_RATE = %MY_LR\n\nTRAIN_STEP = 5\n", _RUN),
     Exception, r"gin/e\.gin, line 6 \(TRAIN_STEP = 5\): no configuration of this job reads "
     r"macro TRAIN_STEP, so it would change nothing\. Did you mean TRAIN_STEPS"),
    ('flag-unknown', lambda: _run_main(['--gin_file=x.gin', '--learning_rate=3']),
     SystemExit, r'Unknown flags: --learning_rate'),
    ('flag-positional', lambda: _run_main(['train.gin']),
     SystemExit, r"Unexpected argument 'train\.gin'"),
    ('flag-missing-value', lambda: _run_main(['--gin_file']),
     SystemExit, r'Flag --gin_file needs a value'),
])


def _train_with(*bindings, run='counts'):
  """Train as the entry point calls it, with `bindings` over a valid tiny run in
  scratch folder `run`."""
  import gin
  import runtime_helpers  # noqa: F401  Registers the synthetic tasks.
  from crosstask.runtime.config import gin_utils
  from crosstask.runtime.jobs import train_lib
  model_dir = scratch(run) / 'run'
  gin.clear_config()
  try:
    gin_utils.parse([TINY, 'runs/finetune.gin'], [
        f"MODEL_DIR='{model_dir}'", 'TRAIN_STEPS=3', "MIXTURE_OR_TASK_NAME='runtime_counted'",
        "MIXTURE_OR_TASK_MODULE='runtime_helpers'", 'BATCH_SIZE=8', 'EVAL_PERIOD=0',
        "TASK_FEATURE_LENGTHS={'inputs': 16, 'targets': 16}", *bindings])
    gin_utils.call_configured(train_lib.train, 'train')
  finally:
    gin.clear_config()


# Counts and layouts a run would otherwise take late, or wrongly: trained and kept nothing
# (CHECKPOINTS_TO_KEEP=0), a ZeroDivisionError, "'<' not supported between 'int' and
# 'str'" or a traceback. Each is refused before anything is read, naming the macro.
add_cases([
    ('train-steps-quoted', lambda: _train_with("TRAIN_STEPS='4'"), GinConfigError,
     r"TRAIN_STEPS='4': expected a whole number of at least 1 \(unquoted\)"),
    ('train-keeps-no-checkpoint', lambda: _train_with('CHECKPOINTS_TO_KEEP=0'), GinConfigError,
     r'CHECKPOINTS_TO_KEEP=0: expected a whole number of at least 1'),
    ('train-checkpoint-period-zero', lambda: _train_with('CHECKPOINT_PERIOD=0'), GinConfigError,
     r'CHECKPOINT_PERIOD=0: expected a whole number of at least 1'),
    ('train-batch-size-zero', lambda: _train_with('BATCH_SIZE=0'), GinConfigError,
     r'BATCH_SIZE=0: expected a whole number of at least 1'),
    ('train-layout-misspelt', lambda: _train_with("LAYOUT='fdsp'"), LayoutError,
     r"Partitioner\.layout='fdsp' \(gin LAYOUT\): expected one of"),
    # Values of the wrong type, each of which failed inside the job with a traceback
    # naming no setting: "Only integer scalar arrays can be converted to a scalar index"
    # in Adafactor's update, "PRNG key seed must be an integer; got JitTracer", "'<=' not
    # supported between 'float' and 'str'", "'int' object is not iterable", or "no
    # positive length" for a misspelt feature. A model setting's is a `ConfigError`, which
    # the entry points print as one line, as a binding's.
    ('train-learning-rate-quoted', lambda: _train_with("LEARNING_RATE='1e-3'"), GinConfigError,
     r"LEARNING_RATE='1e-3': expected a number of at least 0 \(unquoted\)"),
    ('train-random-seed-fractional', lambda: _train_with('RANDOM_SEED=1.5'), GinConfigError,
     r'RANDOM_SEED=1\.5: expected a whole number of at least 0'),
    ('train-dropout-quoted', lambda: _train_with("DROPOUT_RATE='0.1'"), ModelConfigError,
     r"TransformerConfig\.dropout_rate must be a number in \[0, 1\), got '0\.1' \(a string: "
     r"write the number unquoted, e\.g\. --gin\.DROPOUT_RATE=0\.1\)"),
    ('train-lengths-not-a-dict', lambda: _train_with('TASK_FEATURE_LENGTHS=16'), GinConfigError,
     r"TASK_FEATURE_LENGTHS=16: expected each feature's length; an encoder-decoder run needs "
     r"both, e\.g\. \{'inputs': 512, 'targets': 64\}"),
    ('train-lengths-misspelt-feature', lambda: _train_with(
        "TASK_FEATURE_LENGTHS={'input': 16, 'targets': 16}"), GinConfigError,
     r"no length for 'inputs'; 'input' is no feature of this run \(its features: 'inputs', "
     r"'targets'\)"),
    ('train-lengths-quoted', lambda: _train_with(
        "TASK_FEATURE_LENGTHS={'inputs': '16', 'targets': 16}"), GinConfigError,
     r"'inputs' is '16', not a whole number of at least 1 \(write it unquoted\)"),
])



def _left_nothing(run: str) -> Callable[[], None]:
  def check():
    left = sorted(str(p) for p in (_ROOT / run / 'run').rglob('*'))  # in MODEL_DIR
    assert not left, f'a failed start left {left}'
  return check


# A start that fails leaves no empty TensorBoard folder or events file that reads as a
# run (before, `train/events.out.tfevents.*` was written before the checkpoint was read).
add_cases([
    ('train-initial-checkpoint-missing', lambda: _train_with(
        f"INITIAL_CHECKPOINT_PATH='{_ROOT / 'no_such_checkpoint'}'", 'EVAL_PERIOD=2',
        run='failed_start'),
     FileNotFoundError, r'Checkpoint path .*no_such_checkpoint does not exist',
     _left_nothing('failed_start')),
])


# ---------------------------------------------------- tasks, splits, vocabulary

def _runtime_tasks():
  import runtime_helpers  # noqa: F401  Registers the synthetic tasks.
  from crosstask.runtime.data import pipeline as data
  return data


def _tiny_model(vocab_size: int, vocabulary=None):
  """A one-layer model over `vocabulary` (default: bytes) with `vocab_size` embedding rows."""
  from crosstask.models import config as config_lib, model as model_lib, network
  import seqio
  cfg = config_lib.TransformerConfig(vocab_size=vocab_size, d_model=8, d_ff=8, num_heads=1,
                                     d_kv=8, num_encoder_layers=1, num_decoder_layers=1)
  vocabulary = vocabulary or seqio.ByteVocabulary()
  return model_lib.EncoderDecoderModel(network.Transformer(cfg), vocabulary, vocabulary)


def _vocab_too_big():
  _runtime_tasks().check_vocabulary_fits(_tiny_model(128))


def _vocab_differs():
  import seqio
  model = _tiny_model(384, seqio.ByteVocabulary(extra_ids=4))
  data = _runtime_tasks()
  data.check_run_dataset(model, data.DatasetConfig(
      'runtime_copy', {'inputs': 8, 'targets': 8}, 'train', 8, False, 0,
      module='runtime_helpers'))


def _run_on_a_missing_split():
  """A run's datasets are checked when the Run is resolved: before a checkpoint is
  restored or a step compiled (the split was found missing only as data was read)."""
  from crosstask.runtime.config import run as run_lib
  from crosstask.runtime.sharding import partitioning
  model = _tiny_model(264)
  data = _runtime_tasks()
  run_lib.resolve(model, partitioning.Partitioner(), datasets={'train': data.DatasetConfig(
      'runtime_copy', {'inputs': 8, 'targets': 8}, 'tran', 8, False, 0,
      module='runtime_helpers')})


def _task_module_missing_a_dependency():
  """A module of the user's that exists but imports something absent: its own error and
  traceback, not 'not a module'."""
  import sys
  folder = scratch('task_modules')
  keep(folder / 'crosstask_test_user_tasks.py', 'import no_such_dependency_xyz\n')
  sys.path.insert(0, str(folder))
  try:
    _runtime_tasks().import_tasks('crosstask_test_user_tasks')
  finally:
    sys.path.remove(str(folder))


def _user_module(module: str, text: str):
  """Imports the user's task module `module` (its `text`) as MIXTURE_OR_TASK_MODULE."""
  import sys
  folder = scratch('task_modules')
  keep(folder / f'{module}.py', text)
  sys.path.insert(0, str(folder))
  try:
    _runtime_tasks().import_tasks(module)
  finally:
    sys.path.remove(str(folder))


_MIXTURE_OF_A_TYPO = ('import seqio\nimport runtime_helpers\n\n'
                      'seqio.MixtureRegistry.add(\n'
                      '    "crosstask_test_mix", ["runtime_copy", "runtime_cpoy"], default_rate=1.0)\n')
_TASK_TWICE = ('import seqio\nimport runtime_helpers\n\n'
               'seqio.MixtureRegistry.add("crosstask_test_twice", ["runtime_copy"], default_rate=1)\n'
               'seqio.MixtureRegistry.add("crosstask_test_twice", ["runtime_copy"], default_rate=1)\n')


def _lengths_without_targets():
  from crosstask.runtime.config import run as run_lib
  from crosstask.runtime.sharding import partitioning
  model = _tiny_model(264)
  # TASK_FEATURE_LENGTHS={'inputs': 64} on the command line: a KeyError deep in the job.
  run_lib.resolve(model, partitioning.Partitioner(), batch_size=8, lengths={'inputs': 8})


# A TaskConfigError (a ValueError) is what the entry points print as one line, exit 2.
add_cases([
    ('unknown-task', lambda: _runtime_tasks().get_mixture_or_task('runtime_cpy'),
     TaskConfigError, r"No SeqIO task or mixture named 'runtime_cpy'.*Did you mean: runtime_copy"),
    ('unknown-split', lambda: _runtime_tasks().check_split(
        _runtime_tasks().get_mixture_or_task('runtime_copy_reverse'), 'test'),
     TaskConfigError, r"Task 'runtime_copy' has no split 'test'"),
    ('task-module-missing-a-dependency', _task_module_missing_a_dependency,
     ModuleNotFoundError, r"No module named 'no_such_dependency_xyz'"),
    ('mixture-of-an-unregistered-task',
     lambda: _user_module('crosstask_test_user_mixture', _MIXTURE_OF_A_TYPO), TaskConfigError,
     r"crosstask_test_user_mixture\.py:4: MIXTURE_OR_TASK_MODULE 'crosstask_test_user_mixture' "
     r"names 'runtime_cpoy' in a mixture, and no task or mixture of that name is registered\. "
     r"Did you mean: runtime_copy"),
    ('a-name-registered-twice',
     lambda: _user_module('crosstask_test_user_twice', _TASK_TWICE), TaskConfigError,
     r"crosstask_test_user_twice\.py:5: .* registers 'crosstask_test_twice', a name already "
     r"registered"),
    ('unknown-task-module', lambda: _runtime_tasks().import_tasks('crosstask.tasks.nope'),
     TaskConfigError, r"MIXTURE_OR_TASK_MODULE names 'crosstask\.tasks\.nope', which is not a "
     r"module importable from here \(No module named 'crosstask\.tasks\.nope'\); a module of "
     r"your own .* add that folder to PYTHONPATH"),
    ('vocab-bigger-than-embedding', _vocab_too_big,
     TaskConfigError, r"input vocabulary has 259 ids but the model's embedding table has only 128"),
    ('run-on-a-missing-split', _run_on_a_missing_split, TaskConfigError,
     r"Task 'runtime_copy' has no split 'tran'; it has \['train', 'validation'\]"),
    ('lengths-without-targets', _lengths_without_targets, ValueError,
     r"TASK_FEATURE_LENGTHS=\{'inputs': 8\}: no length for 'targets'; an "
     r"encoder-decoder run needs both"),
    ('task-vocab-differs-from-model', _vocab_differs,
     TaskConfigError, r"Task 'runtime_copy' feature 'inputs' is tokenized with bytes \(259 ids\), "
                 r"but the model's input vocabulary is bytes \(263 ids, 4 sentinels\)"),
])


# --------------------------------------------------------------- checkpoints

_SAVED: dict[str, Any] = {}


def _saved():
  """A model dir with checkpoint_1 of the tiny model (built once)."""
  if not _SAVED:
    import jax
    import seqio
    from crosstask.models import config as config_lib, model as model_lib, network
    from crosstask.runtime.config import run as run_lib
    from crosstask.runtime.sharding import partitioning
    from crosstask.runtime.state import checkpoints
    from crosstask.runtime.state import optimizers
    from crosstask.runtime.state import trainer as trainer_lib

    def make(d_model):
      cfg = config_lib.TransformerConfig(
          vocab_size=264, d_model=d_model, d_ff=64, num_heads=4, d_kv=8, num_encoder_layers=1,
          num_decoder_layers=1, activations=('gelu', 'linear'), dtype='float32')
      model = model_lib.EncoderDecoderModel(network.Transformer(cfg), seqio.ByteVocabulary(),
                                            seqio.ByteVocabulary())
      run = run_lib.resolve(model, partitioning.Partitioner(), batch_size=8,
                            lengths={'inputs': 16, 'targets': 16})
      tx, sched = optimizers.create_optimizer(optimizers.adafactor, 1e-3,
                                              param_axes=run.param_axes)
      return trainer_lib.Trainer(run, tx, sched), cfg
    trainer, cfg = make(32)
    state = trainer.init_state(0)
    model_dir = scratch('ckpt')
    mgr = checkpoints.manager(str(model_dir))
    checkpoints.save(mgr, 1, state, 1)
    mgr.wait_until_finished()
    mgr.close()
    _SAVED.update(dir=model_dir, trainer=trainer, cfg=cfg, wide=make(64)[0],
                  params=jax.device_get(state['params']))
  return _SAVED


def _checkpoint_still_restores():
  import jax
  from crosstask.runtime.state import checkpoints
  s = _saved()
  params = checkpoints.load_params(str(s['dir']), s['trainer'].abstract_params())
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(params), s['params'])


def _load(path_fn, which='trainer'):
  from crosstask.runtime.state import checkpoints
  s = _saved()
  return checkpoints.load_params(str(path_fn(s)), s[which].abstract_params())


def _restore_full_wrong_shape():
  from crosstask.runtime.state import checkpoints
  s = _saved()
  mgr = checkpoints.manager(str(s['dir']), read_only=True)
  try:
    checkpoints.restore(mgr, 1, s['wide'].abstract_state())
  finally:
    mgr.close()


def _hf_folder(name: str, edit: Callable[[dict, dict], None]) -> pathlib.Path:
  """An HF export of the saved params, with config and tensors edited by `edit`."""
  import safetensors.numpy
  from crosstask.models import hf_import
  s = _saved()
  folder = scratch(name)
  config = hf_import.hf_config_from(s['cfg'])
  tensors = hf_import.hf_tensors_from_params(s['cfg'], s['params'])
  edit(config, tensors)
  (folder / 'config.json').write_text(json.dumps(config))
  safetensors.numpy.save_file(tensors, str(folder / 'model.safetensors'))
  return folder


def _hf_load(name, edit):
  from crosstask.models import hf_import
  return hf_import.load_hf_checkpoint(_hf_folder(name, edit))


def _bad_progress_record():
  from crosstask.runtime.state import checkpoints
  import shutil
  s = _saved()
  copy = _ROOT / 'ckpt_bad_data'
  if not copy.exists():
    shutil.copytree(s['dir'], copy)
  (copy / 'checkpoint_1' / 'data' / 'metadata').write_text('{"step": 1}')
  mgr = checkpoints.manager(str(copy), read_only=True)
  try:
    checkpoints.restore_with_progress(mgr, 1, s['trainer'].abstract_state())
  finally:
    mgr.close()


add_cases([
    # CheckpointMismatchError (a ValueError): what the entry points print as one line.
    ('orbax-params-wrong-shape', lambda: _load(lambda s: s['dir'], 'wide'),
     CheckpointMismatchError, r"ckpt/checkpoint_1/state: parameter '[\w/]+' has shape \([\d, ]*32,?\), the "
                 r'model expects \([\d, ]*64,?\)', _checkpoint_still_restores),
    ('orbax-state-wrong-shape', _restore_full_wrong_shape,
     CheckpointMismatchError, r"ckpt/checkpoint_1/state: parameter '[\w/]+' has shape", _checkpoint_still_restores),
    ('orbax-path-missing', lambda: _load(lambda s: s['dir'] / 'checkpoint_9'),
     FileNotFoundError, r'ckpt/checkpoint_9 does not exist'),
    ('orbax-no-checkpoint-in-dir', lambda: _load(lambda s: scratch('empty_model_dir')),
     FileNotFoundError, r'No complete checkpoint under .*empty_model_dir'),
    ('orbax-interrupted-save', lambda: _load(
        lambda s: scratch('ckpt2/checkpoint_3.orbax-checkpoint-tmp-1')),
     FileNotFoundError, r'checkpoint_3\.orbax-checkpoint-tmp-1 is an interrupted'),
    ('orbax-progress-record-missing', _bad_progress_record,
     ValueError, r"checkpoint_1/data holds no 'batches_consumed'"),
    ('hf-config-lacks-field', lambda: _hf_load('hf1', lambda c, t: c.pop('d_kv')),
     ValueError, r"config\.json lacks 'd_kv'"),
    ('hf-bad-activation', lambda: _hf_load(
        'hf2', lambda c, t: c.update(feed_forward_proj='gated-gelu-new')),
     ValueError, r"feed_forward_proj='gated-gelu-new'"),
    ('hf-tensor-wrong-shape', lambda: _hf_load(
        'hf3', lambda c, t: t.update({'shared.weight': np.zeros((264, 16), np.float32)})),
     ValueError, r"tensor 'shared\.weight' has shape \(264, 16\), expected \(264, 32\)"),
    ('hf-tensor-missing', lambda: _hf_load(
        'hf4', lambda c, t: t.pop('encoder.final_layer_norm.weight')),
     ValueError, r"missing tensor 'encoder\.final_layer_norm\.weight'"),
    ('hf-other-model-tensors', lambda: _hf_load(
        'hf5', lambda c, t: t.update({'bert.pooler.dense.weight': np.zeros((2, 2), np.float32)})),
     ValueError, r"unexpected tensors: \['bert\.pooler\.dense\.weight'\]"),
    ('hf-folder-without-weights', lambda: __import__(
        'crosstask.models.hf_import', fromlist=['x']).read_tensors(scratch('hf6')),
     FileNotFoundError, r'hf6 has neither model\.safetensors nor pytorch_model\.bin'),
    ('hf-missing-tensor-as-a-run-loads-it', lambda: _load(lambda s: _hf_folder(
        'hf8', lambda c, t: t.pop('encoder.final_layer_norm.weight'))),
     CheckpointMismatchError, r"missing tensor 'encoder\.final_layer_norm\.weight'"),
    ('hf-into-wrong-model', lambda: _load(lambda s: _hf_folder('hf7', lambda c, t: None), 'wide'),
     CheckpointMismatchError, r"hf7: parameter '.*' has shape .* Its config\.json describes "
     r"d_model 32, 1\+1 layers, 4 heads, 264 embeddings: does the model gin file describe"),
])


# ------------------------------------------------- metrics and model settings

def _metric(name, targets, predictions):
  import crosstask.metrics as ev
  return getattr(ev, name)(targets, predictions)


add_cases([
    ('metric-rouge-lengths', lambda: _metric('rouge', ['a b', 'c'], ['a b']),
     ValueError, r'2 targets but 1 predictions'),
    ('metric-bleu-lengths', lambda: _metric('bleu', ['a'], ['a', 'b']),
     ValueError, r'1 targets but 2 predictions'),
    ('metric-accuracy-lengths', lambda: _metric('accuracy', ['x', 'y'], ['x']),
     ValueError, r'2 targets but 1 predictions'),
    ('metric-keyword-f1-lengths', lambda: _metric('keyword_f1', [['a']], []),
     ValueError, r'1 targets but 0 predictions'),
    ('metric-empty-predictions', lambda: _metric('rouge', [], []),
     ValueError, r'no examples to score'),
    ('metric-prediction-not-text', lambda: _metric('rouge', ['a'], [None]),
     TypeError, r'predictions\[0\] is NoneType'),
])


def _partitioner(n):
  from crosstask.runtime.sharding import partitioning
  return partitioning.Partitioner(num_partitions=n)


def _microbatches():
  from crosstask.runtime.config import run as run_lib
  t = _saved()['trainer']
  (batch, inputs), (_, targets) = (t.input_shapes['encoder_input_tokens'],
                                   t.input_shapes['decoder_input_tokens'])
  run_lib.resolve(t.model, t.partitioner, batch_size=batch, num_microbatches=3,
                  lengths={'inputs': inputs, 'targets': targets})


def _initial_checkpoint_cfg():
  from crosstask.runtime.jobs import train_lib
  from crosstask.runtime.state import checkpoints
  train_lib.check_initial_checkpoint(
      checkpoints.RestoreCheckpointConfig('/ckpt', params_only=False))


def _checkpoint_job(**kwargs):
  from crosstask.runtime.jobs import restoring
  return restoring.checkpoint_job(lambda job: job)(
      model=None, dataset_cfg=None, restore_checkpoint_cfg=None, output_dir='/out', **kwargs)


def _checkpoint_mode(mode):
  from crosstask.runtime.jobs import restoring
  from crosstask.runtime.state import checkpoints
  return restoring.checkpoint_dirs(checkpoints.RestoreCheckpointConfig('/ckpt', mode=mode))


add_cases([
    # Eval and infer of NUM_EXAMPLES=-3 or 0 had read the whole split.
    ('num-examples-negative', lambda: _checkpoint_job(num_examples=-3),
     GinConfigError, r'^NUM_EXAMPLES=-3: expected a whole number of at least 1\.$'),
    ('num-examples-zero', lambda: _checkpoint_job(num_examples=0),
     GinConfigError, r'^NUM_EXAMPLES=0: expected a whole number of at least 1\.$'),
    # A GinConfigError: a one-line error at the command line (a plain ValueError had
    # printed a traceback).
    ('checkpoint-mode-misspelt', lambda: _checkpoint_mode('lastest'),
     GinConfigError, r"CHECKPOINT_MODE\) must be 'specific', 'latest' or 'all', got 'lastest'"),
    ('partitions-do-not-divide-devices', lambda: _partitioner(3),
     ValueError, r'num_partitions=3 must divide the number of devices \(8\)'),
    ('microbatches-do-not-divide-batch', _microbatches,
     ValueError, r'NUM_MICROBATCHES=3 .* batch of 8'),
    ('initial-checkpoint-full-state', _initial_checkpoint_cfg,
     ValueError, r"params_only=False for '/ckpt'"),
    ('model-config-bad-field', lambda: __import__(
        'crosstask.models.config', fromlist=['x']).TransformerConfig(
            vocab_size=8, d_model=8, d_ff=8, num_heads=1, d_kv=8, num_encoder_layers=1,
            num_decoder_layers=1, relative_attention_num_buckets=1),
     ValueError, r'relative_attention_num_buckets'),
])


# -------------------------------------------------- run directory and data fetch

def _locked():
  from crosstask.runtime.report import faults
  model_dir = scratch('locked')
  keep(model_dir / 'train-0.lock', json.dumps({'pid': os.getpid(),
                                                'host': socket.gethostname(), 'started': 0}))
  faults.ModelDirLock(str(model_dir)).acquire()


def _registry(name, row):
  from crosstask.data import fetch
  path = keep(scratch('registry') / name, '# header\n' + row + '\n')
  return fetch.read_registry(path)


add_cases([
    ('model-dir-locked', _locked, RuntimeError, rf'in use by another trainer \(pid {os.getpid()}'),
    ('model-dir-not-writable', lambda: __import__(
        'crosstask.runtime.report.faults', fromlist=['x']).prepare_model_dir(
            str(keep(scratch('nw') / 'file', 'x') / 'run')),
     PermissionError, r'nw/file/run is not a writable directory'),
    ('disk-nearly-full', lambda: __import__(
        'crosstask.runtime.report.faults', fromlist=['x']).check_free_space(
            str(scratch('df')), 2**60),
     OSError, r'df has .* MiB free, but one checkpoint of this model takes about'),
    ('registry-wrong-columns', lambda: _registry('a.tsv', 'csl\tpath\turl'),
     ValueError, r'registry/a\.tsv:2: expected 5 tab-separated columns'),
    ('registry-bad-sha256', lambda: _registry('b.tsv', 'csl\tp\thttps://x\t3\tnothex'),
     ValueError, r"registry/b\.tsv:2: field sha256 'nothex'"),
    ('fetch-unknown-benchmark', lambda: __import__(
        'crosstask.data.fetch', fromlist=['x']).fetch('cls', scratch('fetch')),
     ValueError, r"Unknown benchmark 'cls'; known: citesum, clue, csl"),
])


# ------------------------------------------------- benchmark readers (four issues)

def _root_with(name: str, files: dict[str, bytes | str]) -> pathlib.Path:
  """A data root holding `files` (relative path -> content), each kept unchanged."""
  root = scratch(name)
  for rel, data in files.items():
    keep(root / rel, data)
  return root


def _citesum(name, files, split='train'):
  from crosstask.tasks.citesum import readers
  return list(readers.read_citesum(split, _root_with(name, files)))


def _scitldr(name, files, split='validation'):
  from crosstask.tasks.citesum import readers
  return list(readers.read_scitldr(split, _root_with(name, files)))


def _gigaword(name, files, split='test'):
  from crosstask.tasks.citesum import readers
  return list(readers.read_gigaword(split, _root_with(name, files)))


def _clue(name, benchmark, task, split, files):
  from crosstask.tasks.clue import readers
  return readers.read_all(benchmark, task, split, root=_root_with(name, files))


def _lot(name, task, split, files):
  from crosstask.tasks.lot import readers
  return list(readers.read_split(task, split, _root_with(name, files)))


def _scirepeval(fn_name, name, text):
  from crosstask.tasks.scirepeval import readers
  return getattr(readers, fn_name)(keep(scratch('scirepeval') / name, text))


_PAPER = '{"src": "We study x.", "tgt": "We study x .", "paper_id": "p1"}\n'
_PAIR = '{"sentence1": "一", "sentence2": "二", "label": "1"}\n'
_SENPOS = ('{"story": "甲。[MASK]乙。[MASK]丙。", "sentence": "丁。", "label": %s}\n')

add_cases([
    ('citesum-bad-json', lambda: _citesum('cs1', {'citesum/train.json': _PAPER + '{"src": \n'}),
     ValueError, r'cs1/citesum/train\.json:2'),
    ('citesum-missing-target', lambda: _citesum(
        'cs2', {'citesum/train.json': _PAPER + '{"src": "a", "paper_id": "p2"}\n'}),
     ValueError, r"cs2/citesum/train\.json:2.*'tgt'"),
    ('citesum-missing-split', lambda: _citesum('cs3', {}, split='test'),
     FileNotFoundError, r'cs3/citesum/test\.json'),
    ('scitldr-missing-source', lambda: _scitldr(
        'cs4', {'scitldr/SciTLDR-A/dev.jsonl':
                '{"target": ["b"], "paper_id": "x", "title": "t"}\n'}),
     ValueError, r"cs4/scitldr/SciTLDR-A/dev\.jsonl:1.*'source'"),
    ('gigaword-line-counts-differ', lambda: _gigaword(
        'cs5', {'gigaword/org_data/test.src.txt': 'a b\nc d\n',
                'gigaword/org_data/test.tgt.txt': 'a\n'}),
     ValueError, r'cs5/gigaword/org_data/test\.(src|tgt)\.txt'),
    ('clue-afqmc-bad-json', lambda: _clue('cl1', 'clue', 'afqmc', 'validation',
                                          {'clue/afqmc/dev.json': _PAIR + '{"sentence1": \n'}),
     ValueError, r'cl1/clue/afqmc/dev\.json:2'),
    ('clue-afqmc-unknown-label', lambda: _clue(
        'cl2', 'clue', 'afqmc', 'validation',
        {'clue/afqmc/dev.json': _PAIR.replace('"1"', '"7"')}),
     ValueError, r"cl2/clue/afqmc/dev\.json:1.*'label'"),
    ('clue-afqmc-missing-field', lambda: _clue(
        'cl3', 'clue', 'afqmc', 'validation',
        {'clue/afqmc/dev.json': '{"sentence1": "一", "label": "1"}\n'}),
     ValueError, r"cl3/clue/afqmc/dev\.json:1.*'sentence2'"),
    ('clue-missing-split', lambda: _clue('cl4', 'clue', 'afqmc', 'validation', {}),
     FileNotFoundError, r"clue afqmc split 'validation' not found: .*cl4/clue/afqmc/dev\.json"),
    ('fewclue-unknown-split', lambda: _clue('cl5', 'fewclue', 'eprstmt', 'train_9', {}),
     ValueError, r"fewclue eprstmt has no split 'train_9'"),
    ('lot-senpos-label-out-of-range', lambda: _lot(
        'lt1', 'senpos', 'train', {'lot/senpos/train.jsonl': _SENPOS % 9}),
     ValueError, r"lt1/lot/senpos/train\.jsonl:1.*label"),
    ('lot-clozet-label-not-0-or-1', lambda: _lot(
        'lt2', 'clozet', 'train', {'lot/clozet/train.jsonl':
                                   '{"story": "甲。<mask>丙。", "plot0": "乙。", '
                                   '"plot1": "丁。", "label": "2"}\n'}),
     ValueError, r"lt2/lot/clozet/train\.jsonl:1.*label"),
    ('lot-outgen-bad-json', lambda: _lot(
        'lt3', 'outgen', 'validation', {'lot/outgen/val.jsonl': '{"title": "t", \n'}),
     ValueError, r'lt3/lot/outgen/val\.jsonl:1'),
    ('lot-unknown-task', lambda: _lot('lt4', 'clozed', 'train', {}),
     ValueError, r"unknown LOT task 'clozed'"),
    ('scirepeval-meta-bad-json', lambda: _scirepeval(
        'read_meta', 'm1.jsonl', b'{"doc_id": "1", "title": "a"}\n{"doc_id": \n'),
     ValueError, r'scirepeval/m1\.jsonl:2'),
    ('scirepeval-meta-missing-id', lambda: _scirepeval(
        'read_meta', 'm2.jsonl', b'{"doc_id": "1", "title": "a"}\n{"title": "b"}\n'),
     ValueError, r'scirepeval/m2\.jsonl:2.*(doc_id|corpus_id)'),
    ('scirepeval-ir-row-without-candidates', lambda: _scirepeval(
        'read_ir_rows', 'ir.jsonl', b'{"query": "deep nets", "doc_id": "q1"}\n'),
     ValueError, r'scirepeval/ir\.jsonl:1.*candidates'),
])


@pytest.mark.parametrize('bad', CASES, ids=[c.id for c in CASES])
def test_bad_input_fails_clearly_and_keeps_what_was_written(bad: BadInput):
  with pytest.raises(bad.error) as raised:
    bad.trigger()
  text = str(raised.value) if not isinstance(raised.value, SystemExit) else str(
      raised.value.code)
  assert re.search(bad.match, text, re.S), text
  for path, data in _KEPT.items():
    assert path.read_bytes() == data, f'{path} changed'
  if bad.intact is not None:
    bad.intact()
