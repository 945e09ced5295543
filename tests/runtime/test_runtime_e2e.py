"""train -> eval -> infer as real subprocesses, and gin errors that name their source."""

import json
import re
import sys

import gin
import jax
import pytest
import transformers

import runtime_subprocess as rs
from crosstask import vocabularies
from crosstask.runtime.config import gin_utils
from crosstask.runtime.jobs import infer_lib


@pytest.mark.slow(seconds=36)
def test_train_eval_infer(tmp_path):
  model_dir = tmp_path / 'model'
  train = rs.run(rs.train_cmd(model_dir, 60, '--gin.CHECKPOINT_PERIOD=30', '--gin.EVAL_PERIOD=60',
                              '--gin.LEARNING_RATE=0.01', '--gin.LOG_EVERY=10'))
  assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
  losses = [float(x) for x in re.findall(r'^step \d+/60  loss ([\d.]+)', train.stdout, re.M)]
  assert len(losses) == 6 and losses[-1] < losses[0] * 0.8, train.stdout
  # A CPU has no peak in the chip table and no memory statistics: no MFU, no memory.
  progress_lines = re.findall(r'^step \d+/60  loss .*$', train.stdout, re.M)
  assert all(l.endswith('s') and 'tokens/s' in l and 'MFU' not in l and ' mem ' not in l
             for l in progress_lines), progress_lines
  assert sorted(p.name for p in model_dir.glob('checkpoint_*')) == ['checkpoint_30',
                                                                    'checkpoint_60']
  assert 'train.total_steps = %TRAIN_STEPS' in (model_dir / 'operative_config.gin').read_text()
  assert list((model_dir / 'train').glob('events.out.tfevents.*'))
  in_train = [json.loads(l) for l in (model_dir / 'inference_eval' / 'metrics.jsonl').open()]
  assert {m['task'] for m in in_train} == {'runtime_copy', 'runtime_reverse'}

  # The trained run carries its own configuration: eval takes its directory and gives,
  # for the last checkpoint, what the training run's own evaluation recorded.
  ev = rs.run([rs.sys.executable, '-m', 'crosstask.eval', f'--run_dir={model_dir}',
               '--gin.BATCH_SIZE=16'])
  assert ev.returncode == 0, ev.stdout[-3000:] + ev.stderr[-3000:]
  number = r'\d+(\.\d{1,2})?'  # 4 significant digits, not a float's repr
  assert re.search(rf'^{re.escape(str(model_dir))}/checkpoint_60: runtime_copy: exact_match '
                   rf'{number}; runtime_reverse: exact_match {number}$', ev.stdout, re.M), ev.stdout
  eval_dir = model_dir / 'eval'
  lines = [json.loads(l) for l in (eval_dir / 'metrics.jsonl').open()]
  assert sorted((m['step'], m['task']) for m in lines) == [
      (30, 'runtime_copy'), (30, 'runtime_reverse'), (60, 'runtime_copy'),
      (60, 'runtime_reverse')]
  assert all('exact_match' in m['metrics'] for m in lines)
  assert list(eval_dir.glob('events.out.tfevents.*'))
  assert sorted((m['task'], m.get('fingerprint'), json.dumps(m['metrics']))
                for m in lines if m['step'] == 60) == sorted(
      (m['task'], m.get('fingerprint'), json.dumps(m['metrics'])) for m in in_train)

  # The run exported as a Hugging Face folder (its newest checkpoint, to DIR/hf), as a
  # published T5 or LongLM comes: infer takes the folder itself, as one checkpoint of
  # step 0 (it records none).
  export = rs.run([rs.sys.executable, '-m', 'crosstask.export', f'--run_dir={model_dir}'])
  assert export.returncode == 0, export.stdout[-3000:] + export.stderr[-3000:]
  hf_folder = model_dir / 'hf'
  assert export.stdout.strip().endswith(f'checkpoint_60 (step 60) -> {hf_folder}: '
                                        'config.json, model.safetensors, tokenizer_config.json')
  infer_dir = tmp_path / 'infer'
  inf = rs.run([rs.sys.executable, '-m', 'crosstask.infer', f'--gin_file={rs.TINY}',
                '--gin_file=runs/infer.gin', *rs.task_flags(),
                f"--gin.CHECKPOINT_PATH='{hf_folder}'",
                f"--gin.INFER_OUTPUT_DIR='{infer_dir}'", '--gin.BATCH_SIZE=16'])
  assert inf.returncode == 0, inf.stdout[-3000:] + inf.stderr[-3000:]
  rows = [json.loads(l) for l in (infer_dir / 'runtime_reverse-validation.jsonl').open()]
  assert len(rows) == 16  # One line per validation example.
  assert rows[0]['inputs'].startswith('reverse ') and isinstance(rows[0]['score'], float)
  assert set(rows[0]) >= {'inputs', 'targets', 'prediction', 'score'}
  # transformers reads the folder whole: the run's bytes are ByT5's tokenizer.
  tokenizer = transformers.AutoTokenizer.from_pretrained(str(hf_folder))
  assert tokenizer(rows[0]['inputs']).input_ids == [
      3 + b for b in rows[0]['inputs'].encode()] + [1]

  # And infer, given the run's directory and only what changes, gives from checkpoint 60
  # what the fully configured command gave from its export, step apart.
  again = rs.run([rs.sys.executable, '-m', 'crosstask.infer', f'--run_dir={model_dir}',
                  '--gin.BATCH_SIZE=16'])
  assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
  for name in ('runtime_copy', 'runtime_reverse'):
    got, exported = ([json.loads(l) for l in (folder / f'{name}-validation.jsonl').open()]
                     for folder in (model_dir / 'infer', infer_dir))
    assert {r.pop('step') for r in got} == {60} and {r.pop('step') for r in exported} == {0}
    assert got == exported
  # SciRepEval embeddings of the run's newest checkpoint, its model and vocabulary from
  # its saved config: only the papers and the output are given.
  meta = tmp_path / 'meta.jsonl'
  meta.write_text(''.join(json.dumps({'doc_id': str(i), 'title': t, 'abstract': 'We study x.'})
                          + '\n' for i, t in enumerate(('Deep nets', 'Shallow trees'))))
  embed = rs.run([rs.sys.executable, '-m', 'crosstask.embed', f'--run_dir={model_dir}',
                  f"--gin.META_FILE='{meta}'", f"--gin.EMBEDDINGS_FILE='{tmp_path / 'e.jsonl'}'",
                  "--gin.TASK='fos'"])
  assert embed.returncode == 0, embed.stdout[-3000:] + embed.stderr[-3000:]
  vectors = [json.loads(l) for l in (tmp_path / 'e.jsonl').open()]
  assert [v['doc_id'] for v in vectors] == ['0', '1'] and vectors[0]['embedding'] != vectors[1]['embedding']
  summary = json.loads((tmp_path / 'e.summary.json').read_text())
  assert '/checkpoint_60/' in summary['checkpoint'] and summary['dim'] == len(vectors[0]['embedding'])
  # No command printed TensorFlow's start-up lines or SeqIO's warnings.
  for done in (train, ev, export, inf, again, embed):
    assert not rs.noise_in(done.stdout + done.stderr), rs.noise_in(done.stdout + done.stderr)
  # Fine-tuning from a trained checkpoint (its parameters, not its step) is checked end
  # to end, parameter for parameter, by tests/tasks/xbench's meta-train-then-k-shot test.


@pytest.mark.slow
def test_unknown_binding_on_command_line_fails_clearly(tmp_path):
  res = rs.run(rs.train_cmd(tmp_path / 'm', 2, '--gin.train_script.train.no_such_arg=1'))
  assert res.returncode == 2
  assert 'no_such_arg' in res.stderr and '--gin.train_script.train.no_such_arg' in res.stderr


@pytest.fixture
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def test_gin_error_names_the_file(tmp_path, clean_gin):
  bad = tmp_path / 'bad.gin'
  bad.write_text("MODEL = None\ntrain_script.train.total_step = 3\n")
  with pytest.raises(gin_utils.GinConfigError) as e:
    gin_utils.parse([str(bad)], [])
  assert str(bad) in str(e.value) and 'total_step' in str(e.value)
  with pytest.raises(gin_utils.GinConfigError, match='not found'):
    gin_utils.parse(['runs/no_such.gin'], [])
  gin.clear_config()
  with pytest.raises(gin_utils.GinConfigError, match=r'(?s)MODEL_DIR.*--gin\.MODEL_DIR=VALUE'):
    gin_utils.parse([rs.TINY, 'runs/finetune.gin'], ['TRAIN_STEPS=3'])
  # A string without gin's quotes (the shell ate its own): gin says only that it cannot
  # parse the value, or shows an AST node; the error says how to write it.
  for binding, quoted in (('MODEL_DIR=/tmp/x', """--gin.MODEL_DIR="'/tmp/x'\""""),
                          ('MIXTURE_OR_TASK_NAME = csl_zh_abstract_to_title',
                           """--gin.MIXTURE_OR_TASK_NAME="'csl_zh_abstract_to_title'\"""")):
    gin.clear_config()
    with pytest.raises(gin_utils.GinConfigError) as e:
      gin_utils.parse([rs.TINY, 'runs/finetune.gin'], [binding])
    assert str(e.value).startswith(f'Error in gin binding --gin.{binding}:\n'), str(e.value)
    assert str(e.value).endswith("A string value is written in gin's quotes, inside the "
                                 f"shell's: {quoted}")
  for fine in ("MODEL_DIR='/tmp/x'", 'TRAIN_STEPS=3', 'TASK_FEATURE_LENGTHS={"inputs": 8}'):
    assert gin_utils._unquoted_hint(fine) == '', fine  # pylint: disable=protected-access


@pytest.mark.parametrize('binding,message', [
    ('utils.RestoreCheckpointConfig.params_only=False', 'params_only=False'),
    ("utils.RestoreCheckpointConfig.mode='all'", "mode='all'")])
def test_train_refuses_initial_checkpoint_settings_it_cannot_honour(tmp_path, clean_gin,
                                                                   binding, message):
  from crosstask.runtime.jobs import train_lib  # pylint: disable=g-import-not-at-top
  gin_utils.parse([rs.TINY, 'runs/finetune.gin'],
                  [f"MODEL_DIR='{tmp_path / 'm'}'", 'TRAIN_STEPS=3',
                   "MIXTURE_OR_TASK_NAME='runtime_copy_reverse'",
                   "MIXTURE_OR_TASK_MODULE='runtime_helpers'",
                   "TASK_FEATURE_LENGTHS={'inputs': 8, 'targets': 8}",
                   f"INITIAL_CHECKPOINT_PATH='{tmp_path / 'pretrained'}'", binding])
  with pytest.raises(ValueError, match=message):
    train_lib.train()
  assert not (tmp_path / 'm').exists() or not list((tmp_path / 'm').glob('checkpoint_*'))


def _gin_value(selector: str):
  """What a parsed binding evaluates to (a macro's value, a configurable's object)."""
  ref = gin.query_parameter(selector)
  return ref.scoped_configurable_fn() if hasattr(ref, 'scoped_configurable_fn') else ref


def _publish_with_sentencepiece(tmp_path):
  """Writes `tmp_path/published`: the parsed MODEL's shape as a Hugging Face folder that
  carries a 300-piece SentencePiece model of its own (zero weights)."""
  import numpy as np
  from crosstask.models import hf_import
  import runtime_helpers
  config = gin_utils.query('%MODEL').module.config
  zeros = jax.tree.map(lambda a: np.zeros(a.shape, a.dtype), hf_import.abstract_params(config))
  hf_import.save_hf_checkpoint(tmp_path / 'published', config, zeros, vocabularies.get(
      runtime_helpers.sentencepiece_model(tmp_path / 'sp')))


def test_train_refuses_a_hugging_face_folder_that_reads_text_otherwise(tmp_path, clean_gin):
  """A published checkpoint carries its SentencePiece model; fine-tuning it with the model
  gin file's default vocabulary (bytes) stops before the first step, naming the fix."""
  from crosstask.runtime.jobs import train_lib
  from crosstask.runtime.report import faults
  gin_utils.parse([rs.TINY, 'runs/finetune.gin'],
                  [f"MODEL_DIR='{tmp_path / 'm'}'", 'TRAIN_STEPS=3',
                   "MIXTURE_OR_TASK_NAME='runtime_copy_reverse'",
                   "MIXTURE_OR_TASK_MODULE='runtime_helpers'",
                   "TASK_FEATURE_LENGTHS={'inputs': 8, 'targets': 8}",
                   f"INITIAL_CHECKPOINT_PATH='{tmp_path / 'published'}'"])
  _publish_with_sentencepiece(tmp_path)
  with pytest.raises(faults.CheckpointMismatchError,
                     match=r"published was trained with the SentencePiece model .*published/"
                           r"spiece\.model \(300 pieces; the folder's own tokenizer\), but the "
                           r'model reads bytes \(259 ids\).* --gin.NUM_EMBEDDINGS=264, its'):
    train_lib.train()
  assert not list((tmp_path / 'm').glob('checkpoint_*'))


@pytest.mark.slow(seconds=5)
def test_eval_refuses_another_vocabularys_checkpoint_before_reading_data(tmp_path, clean_gin,
                                                                        capsys):
  """Eval with the vocabulary left out: the refusal comes first, not after the data was
  read and warned about with the wrong vocabulary (inputs cut at TASK_FEATURE_LENGTHS)."""
  from crosstask.runtime.jobs import eval_lib
  from crosstask.runtime.report import faults
  gin_utils.parse([rs.TINY, 'runs/eval.gin'],
                  [f"EVAL_OUTPUT_DIR='{tmp_path / 'eval'}'",
                   "MIXTURE_OR_TASK_NAME='runtime_copy_reverse'",
                   "MIXTURE_OR_TASK_MODULE='runtime_helpers'",
                   "TASK_FEATURE_LENGTHS={'inputs': 4, 'targets': 4}",
                   f"CHECKPOINT_PATH='{tmp_path / 'published'}'"])
  _publish_with_sentencepiece(tmp_path)
  capsys.readouterr()
  with pytest.raises(faults.CheckpointMismatchError, match='published was trained with'):
    eval_lib.evaluate()
  out, err = capsys.readouterr()
  assert 'longer than' not in out + err and not (tmp_path / 'eval').exists()


def test_run_configs_resolve_from_search_paths(clean_gin):
  gin_utils.parse([rs.TINY, 'runs/finetune.gin'],
                  ["MODEL_DIR='/tmp/x'", 'TRAIN_STEPS=3', "MIXTURE_OR_TASK_NAME='x'",
                   "TASK_FEATURE_LENGTHS={'inputs': 8, 'targets': 8}"])
  assert _gin_value('train_script.train.total_steps') == 3
  assert gin.query_parameter('utils.RestoreCheckpointConfig.params_only') is True


def test_run_configs_resolve_where_the_working_directory_has_folders_of_their_names(
    clean_gin, tmp_path, monkeypatch):
  # `python -m` puts the working directory on sys.path: a user's own `runs/` or
  # `t5_1_1/` there imported as a namespace package, and gin's resource lookup of
  # `include 'runs/_partitioning.gin'` raised "expected str, bytes or os.PathLike
  # object, not NoneType" before it tried crosstask's folders.
  for name in ('runs', 't5_1_1'):
    (tmp_path / name).mkdir()
  monkeypatch.chdir(tmp_path)
  monkeypatch.syspath_prepend(str(tmp_path))
  for name in ('runs', 't5_1_1'):
    monkeypatch.delitem(sys.modules, name, raising=False)
  gin_utils.parse(['t5_1_1/tiny.gin', 'runs/finetune.gin'],
                  ["MODEL_DIR='/tmp/x'", 'TRAIN_STEPS=3', "MIXTURE_OR_TASK_NAME='x'",
                   "TASK_FEATURE_LENGTHS={'inputs': 8, 'targets': 8}"])
  assert _gin_value('train_script.train.total_steps') == 3


@pytest.mark.parametrize('gin_file,bindings,steps,task,lengths', [
    ('runs/pretrain.gin', ['TRAIN_STEPS=5', "MIXTURE_OR_TASK_NAME='x'",
                           "TASK_FEATURE_LENGTHS={'inputs': 8, 'targets': 8}"],
     5, 'x', {'inputs': 8, 'targets': 8}),
    ('csl/finetune_abstract_to_title.gin', [], 10000, 'csl_zh_abstract_to_title',
     {'inputs': 1024, 'targets': 128}),
])
def test_run_configs_parse(clean_gin, gin_file, bindings, steps, task, lengths):
  gin_utils.parse([rs.TINY, gin_file], ["MODEL_DIR='/tmp/x'", *bindings])
  assert _gin_value('train_script.train.total_steps') == steps
  dataset = _gin_value('train_script.train.train_dataset_cfg')
  assert (dataset.mixture_or_task_name, dict(dataset.task_feature_lengths)) == (task, lengths)
  assert _gin_value('train_script.train.model_dir') == '/tmp/x'


def test_unknown_task_suggests_close_names():
  import runtime_helpers  # noqa: F401  Registers the synthetic tasks.
  from crosstask.runtime.data import pipeline as data
  with pytest.raises(ValueError, match='runtime_copy'):
    data.get_mixture_or_task('runtime_cpy')
  with pytest.raises(ValueError, match="no split 'test'"):
    data.check_split(data.get_mixture_or_task('runtime_copy'), 'test')


def test_trainer_imports_without_tensorflow_or_seqio():
  code = (rs.WITHOUT_TENSORFLOW
          + "import crosstask.runtime.state.trainer, crosstask.runtime.jobs.train_lib\n"
          "import crosstask.train\n"
          "import crosstask.runtime.sharding.partitioning, crosstask.runtime.state.checkpoints\n")
  res = rs.run([rs.sys.executable, '-c', code], timeout=120)
  assert res.returncode == 0, res.stderr[-2000:]


def test_infer_says_which_predictions_its_file_replaces(tmp_path):
  """Infer writes `<task>-<split>.jsonl` afresh; its 'Wrote' line says when that replaces
  an earlier run's file (another checkpoint's predictions), not silently."""
  path = tmp_path / 'runtime_copy-validation.jsonl'
  assert infer_lib._replacing(str(path)) == ''
  path.write_text(json.dumps({'index': 0, 'prediction': 'a', 'step': 30}) + '\n')
  assert infer_lib._replacing(str(path)) == ", replacing that file's predictions of step 30"
  path.write_text('not json\n')
  assert infer_lib._replacing(str(path)) == ', replacing the file there'
