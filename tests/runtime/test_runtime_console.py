"""The console: entry points print what the researcher asked for, not library noise."""

import gc
import json
import logging
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import runtime_subprocess as rs
from crosstask import paths
from crosstask import records
from crosstask import startup
from crosstask.runtime.report import console


@pytest.mark.slow  # TensorFlow's import alone takes 10-25 s on a busy 2-core machine.
def test_results_prints_only_its_table(tmp_path):
  run = tmp_path / 'run'
  (run / 'inference_eval').mkdir(parents=True)
  (run / 'operative_config.gin').write_text(f"MODEL_DIR = '{run}'\nRANDOM_SEED = 0\n")
  # A CSL task's column loads the CSL task modules, and with them TensorFlow.
  records.append(run / 'inference_eval', [records.Record(
      100, 'csl_zh_title_to_category', {'accuracy': 60.0, 'macro_f1': 20.0},
      fingerprint='aaaa0000', source='eval', split='validation')])
  done = subprocess.run([sys.executable, '-m', 'crosstask.results', str(run)], cwd=rs.REPO,
                        env=rs.env(), capture_output=True, text=True, timeout=300,
                        check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stderr == '' and not rs.noise_in(done.stdout), done.stderr[-3000:]
  # The table, then the table's own note on the cell it could give no interval.
  table, _, notes = done.stdout.strip().partition('\n\n')
  lines = table.splitlines()
  assert lines and all(line.startswith('|') for line in lines), done.stdout
  assert '| run | - | 0 | 60.00 |' in lines
  assert notes == 'No 95% interval in run: no saved predictions to resample.', done.stdout


@pytest.mark.slow  # a subprocess that imports TensorFlow and registers every task
def test_the_task_layers_command_line_lists_without_startup_noise():
  # The task layer's command lines load SeqIO, and TensorFlow with it, after silencing
  # its start-up lines, as the runtime's entry points do (`crosstask.startup`).
  done = rs.run([sys.executable, '-m', 'crosstask.tasks', '--list', 'csl_zh_abstract_to_title.p0'])
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stderr == '' and done.stdout.splitlines() == [
      'task     csl_zh_abstract_to_title.p0', '1 tasks, 0 mixtures'], done.stderr[-3000:]


@pytest.mark.slow  # two subprocesses that import TensorFlow and register a benchmark's tasks
def test_the_benchmark_commands_print_without_startup_noise(tmp_path):
  # CiteSum's paper report and CLUE's leaderboard files: importing their task packages
  # loads TensorFlow, so the commands start at crosstask's top level and quiet it first.
  predictions = tmp_path / 'clue_afqmc-test.jsonl'
  predictions.write_text(''.join(json.dumps(
      {'index': i, 'inputs': 'x', 'targets': '', 'prediction': p, 'score': -1.0,
       'target_score': -1.0}, ensure_ascii=False) + '\n' for i, p in enumerate('相同 不同 相同'.split())),
                         encoding='utf-8')
  env = {**rs.env(), paths.DATA_DIR_ENV: str(paths.SAMPLE_DIR)}
  done = subprocess.run([sys.executable, '-m', 'crosstask.clue_submissions', '--task=clue_afqmc',
                         f'--predictions={predictions}', f'--output_dir={tmp_path}'],
                        cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stderr == '' and done.stdout == f'{tmp_path / "afqmc_predict.json"}\n', done.stderr
  assert (tmp_path / 'afqmc_predict.json').read_text('utf-8').splitlines()[1] == (
      '{"id": 1, "label": "0"}')
  # A wrong path is one line naming it, not a traceback.
  report = subprocess.run([sys.executable, '-m', 'crosstask.citesum_report',
                           f'--run=6:CiTES={tmp_path / "none"}'], cwd=rs.REPO, env=env,
                          capture_output=True, text=True, timeout=300)
  assert report.returncode == 2 and report.stdout == '', report.stderr[-3000:]
  assert report.stderr.startswith(f'ERROR: no metrics.jsonl at {tmp_path / "none"}') and (
      report.stderr.count('\n') == 1), report.stderr[-3000:]


def test_the_parameter_count_command_prints_only_its_count():
  """`python -m crosstask.runtime.config.model_gin FILE` as a user runs it: JAX_PLATFORMS
  unset, so on a machine with the libtpu wheel (the `tpu` extra, as CI installs it) and
  no TPU, JAX would start libtpu and print its search for one."""
  env = rs.env()
  env.pop("JAX_PLATFORMS")
  done = subprocess.run([sys.executable, "-m", "crosstask.runtime.config.model_gin",
                         "crosstask/gin/t5_1_1/tiny.gin"], cwd=rs.REPO, env=env,
                        capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stderr == "" and done.stdout.splitlines() == [
      "crosstask/gin/t5_1_1/tiny.gin: 4,310,016 parameters (4.3M)"], done.stderr[-3000:]
  usage = subprocess.run([sys.executable, "-m", "crosstask.runtime.config.model_gin", "--help"],
                         cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=300)
  assert usage.returncode == 0 and usage.stdout.startswith(
      "usage: python -m crosstask.runtime.config.model_gin"), usage.stderr[-3000:]


@pytest.mark.slow(seconds=8)  # a process that compiles
def test_the_compile_command_for_this_machine_prints_no_libtpu_search():
  """`crosstask.compile --topology=local` as a user runs it (JAX_PLATFORMS unset): it
  compiles for this machine's devices, so it starts JAX's backends; libtpu only where a
  TPU is attached. Its decoding report says which parameters its programs hold."""
  env = rs.env()
  env.pop("JAX_PLATFORMS")
  done = subprocess.run([sys.executable, "-m", "crosstask.compile",
                         "--gin_file=t5_1_1/tiny.gin", "--topology=local", "--step=infer",
                         "--gin.BATCH_SIZE=8",
                         "--gin.TASK_FEATURE_LENGTHS={'inputs': 32, 'targets': 16}"],
                        cwd=rs.REPO, env=env, capture_output=True, text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  assert done.stderr == "", done.stderr[-3000:]
  assert re.search(r"^  arguments +[\d.]+ GiB  \(of the model's 0\.016 of parameters, those "
                   r"the program reads\)$", done.stdout, re.M), done.stdout


# A command line's TensorFlow import, as `quiet_startup` arranges it: the collections
# during the import, the collector's state after, the objects frozen, what of Keras's
# optional integrations the import brought, and whether they import after it.
_IMPORT_UNDER_STARTUP = """
import gc, json, sys
from crosstask import startup
startup.quiet_startup()
collections = []
gc.callbacks.append(lambda phase, info: collections.append(1) if phase == 'start' else None)
import tensorflow
gc.callbacks.clear()
brought = sorted(name for name in ('sklearn', 'matplotlib') if name in sys.modules)
import matplotlib.pyplot, sklearn.metrics
print(json.dumps([len(collections), gc.isenabled(), gc.get_freeze_count(), brought,
                  sklearn.metrics.f1_score([0, 1, 1], [0, 1, 0], average='macro')]))
"""


@pytest.mark.slow  # a subprocess that imports TensorFlow
def test_tensorflows_import_runs_without_the_collector_or_keras_optional_imports():
  done = subprocess.run([sys.executable, '-c', _IMPORT_UNDER_STARTUP], cwd=rs.REPO,
                        env=rs.env(), capture_output=True, text=True, timeout=300, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  collections, enabled, frozen, brought, f1 = json.loads(done.stdout.splitlines()[-1])
  # Without the pause: ~1,200 collections during the import (1,020 here), nothing frozen.
  assert collections == 0 and enabled and frozen > 300_000, done.stdout
  # Keras imports scikit-learn and matplotlib if it can (1 s of the import); after the
  # import both are there for crosstask's own uses.
  assert brought == [] and f1 == pytest.approx(2 / 3), done.stdout


def test_keras_optional_imports_are_hidden_only_during_the_import(monkeypatch):
  monkeypatch.delitem(sys.modules, 'sklearn', raising=False)
  already = types.ModuleType('matplotlib')
  monkeypatch.setitem(sys.modules, 'matplotlib', already)
  with startup._without_keras_optional_imports():  # pylint: disable=protected-access
    with pytest.raises(ImportError):
      import sklearn  # pylint: disable=import-outside-toplevel,unused-import
    import matplotlib  # pylint: disable=import-outside-toplevel
    assert matplotlib is already  # imported before: left as it was
  assert 'sklearn' not in sys.modules and sys.modules['matplotlib'] is already


def test_a_collector_the_caller_turned_off_stays_off():
  frozen = gc.get_freeze_count()
  gc.disable()
  try:
    with startup._collector_paused_then_frozen():  # pylint: disable=protected-access
      pass
    assert not gc.isenabled() and gc.get_freeze_count() == frozen
  finally:
    gc.enable()


def test_unactionable_library_warnings_are_dropped_and_others_kept():
  drop = startup._DropUnactionable()  # pylint: disable=protected-access

  def record(level, msg):
    return logging.LogRecord('absl', level, 'seqio/evaluation.py', 1, msg, (), None)
  assert not drop.filter(record(logging.WARNING, 'Given sequence lengths are longer than '
                                                 'necessary for some evaluation inputs'))
  assert not drop.filter(record(logging.WARNING, 'Using an uncached FunctionDataset for '
                                                 'training is not recommended'))
  assert not drop.filter(record(logging.WARNING, 'Given directory is read only=%s'))
  assert drop.filter(record(logging.WARNING, 'Task x has no split, skipping.'))
  assert drop.filter(record(logging.ERROR, 'Given sequence lengths: an error stays'))


def test_only_process_zero_prints(monkeypatch, capsys, caplog):
  caplog.set_level(logging.INFO)
  console.say('step 1/2 from the lead')
  console.warn('lead warning')
  monkeypatch.setattr(console, 'is_lead_process', lambda: False)
  console.say('step 1/2 from host 3')
  console.warn('host 3 warning')
  console.error('host 3 failed')
  out, err = capsys.readouterr()
  assert out == 'step 1/2 from the lead\n'
  assert err == 'WARNING: lead warning\nERROR: host 3 failed\n'
  assert 'step 1/2 from host 3' in caplog.text and 'host 3 warning' in caplog.text


def test_an_entry_points_error_prints_without_gins_call_notes(capsys):
  """gin appends "In call to configurable 'NAME' (<function NAME at 0x...>)" to an error
  leaving each configurable; the console shows the error alone, once."""
  import gin  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import gin_utils  # pylint: disable=g-import-not-at-top

  @gin.configurable('console_test_job')
  def job(steps=gin.REQUIRED):
    raise gin_utils.GinConfigError(f'STEPS={steps}: not a number of steps')

  gin.clear_config()
  try:
    with pytest.raises(SystemExit) as stop:
      gin_utils.run_main(job, ['--gin.console_test_job.steps=-1'], what='a test job')
  finally:
    gin.clear_config()
  err = capsys.readouterr().err
  assert stop.value.code == 2
  assert "STEPS=-1: not a number of steps" in err and "In call to" not in err, err


def test_a_model_setting_of_the_wrong_kind_is_one_line(capsys):
  """`--gin.DROPOUT_RATE="'0.1'"` (a string) is refused by the model's config as a
  `ConfigError`: one line and exit 2, as a binding's mistake, not 90 lines of traceback."""
  import gin  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import gin_utils  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  try:
    with pytest.raises(SystemExit) as stop:
      gin_utils.run_main(lambda: gin_utils.query('%MODEL'),
                         [f'--gin_file={rs.TINY}', "--gin.DROPOUT_RATE='0.1'"], what='a test job')
  finally:
    gin.clear_config()
  err = capsys.readouterr().err
  assert stop.value.code == 2
  assert err.strip().splitlines() == [
      "ERROR: TransformerConfig.dropout_rate must be a number in [0, 1), got '0.1' (a string: "
      "write the number unquoted, e.g. --gin.DROPOUT_RATE=0.1)"], err


def test_a_refused_macro_says_where_it_was_set(capsys, tmp_path):
  """A count refused by the job (`check_count`) names the user's gin file and line that set
  it (or the command-line flag): the message named the value alone."""
  import gin  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import gin_utils  # pylint: disable=g-import-not-at-top
  mine = tmp_path / 'my.gin'
  mine.write_text("# my run's settings\n\nBATCH_SIZE = 'four'\n", encoding='utf-8')

  def job():  # what the runtime checks when it resolves the run
    gin_utils.check_count('BATCH_SIZE', gin_utils.query('%BATCH_SIZE'), 1)

  gin.clear_config()
  try:
    with pytest.raises(SystemExit):
      gin_utils.run_main(job, [f'--gin_file={rs.TINY}', f'--gin_file={mine}'], what='a test job')
  finally:
    gin.clear_config()
  assert capsys.readouterr().err.strip() == (
      f"ERROR: BATCH_SIZE='four': expected a whole number of at least 1 (unquoted). "
      f"(set in {mine}, line 3)")


@pytest.mark.parametrize('fault', ['missing', 'malformed'])
def test_a_missing_or_malformed_file_is_one_line_unless_verbose(capsys, fault):
  """A data or checkpoint file that is not there, or a data file that is not its format
  (`paths.DataError`, which the task layer's readers raise): the message names it (exit
  1); --verbose keeps the traceback."""
  import gin  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import gin_utils  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.common import readers  # pylint: disable=g-import-not-at-top
  error, message = {
      'missing': (FileNotFoundError,
                  "CSL split 'test' needs all four benchmark files; missing: a.tsv"),
      'malformed': (readers.DataError,
                    'ts/train.tsv:50: expected 3 tab-separated columns, got 2')}[fault]

  @gin.configurable(f'console_test_reader_{fault}')
  def job(split=gin.REQUIRED):
    raise error(message)

  argv = [f"--gin.console_test_reader_{fault}.split='test'"]
  gin.clear_config()
  try:
    with pytest.raises(SystemExit) as stop:
      gin_utils.run_main(job, argv, what='a test job')
    err = capsys.readouterr().err
    assert stop.value.code == 1 and err.strip() == f'ERROR: {message}', err
    gin.clear_config()
    with pytest.raises(error, match=message[-20:]):
      gin_utils.run_main(job, argv + ['--verbose'], what='a test job')
  finally:
    gin.clear_config()


def test_metrics_line_reads_as_numbers_not_a_dict_repr():
  """Eval's and training's console lines: four significant digits, nested keys joined."""
  line = console.metrics_line({
      'csl_zh_title_to_category': {'accuracy': 46.666666666666664, 'macro_f1': np.float32(0.5)},
      'scirepeval:fos': {'f1': {'macro': 12.345678}, 'examples': 30}})
  assert line == ('csl_zh_title_to_category: accuracy 46.67, macro_f1 0.5; '
                  'scirepeval:fos: f1/macro 12.35, examples 30')
