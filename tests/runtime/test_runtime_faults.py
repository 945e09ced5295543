"""Faults met in-process: resume cost, NaN/Inf steps, a locked, unwritable or full MODEL_DIR.

The runs are the tiny test model on the synthetic tasks of runtime_helpers, called
through gin as `python -m crosstask.train` would call them.
"""

import gc
import json
import os
import shutil
import socket
import subprocess
import traceback

import gin
import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest
import tensorflow as tf

import runtime_helpers as rh
import runtime_subprocess as rs
from crosstask.models import config as config_lib
from crosstask.models import model as model_lib
from crosstask.models import network
from crosstask.runtime.data import pipeline as data
from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.jobs import train_lib
from crosstask.runtime.report import faults
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints



def _train(model_dir, steps: int, *bindings: str, task: str = 'runtime_counted', model=None):
  gin.clear_config()
  gin_utils.parse([rs.TINY, 'runs/finetune.gin'], [
      f"MODEL_DIR='{model_dir}'", f'TRAIN_STEPS={steps}', f"MIXTURE_OR_TASK_NAME='{task}'",
      "MIXTURE_OR_TASK_MODULE='runtime_helpers'", "TASK_FEATURE_LENGTHS={'inputs': 16, "
      "'targets': 16}", 'BATCH_SIZE=8', 'EVAL_PERIOD=0', 'PACK=False', 'LOG_EVERY=1000',
      'DROPOUT_RATE=0.0', *bindings])
  try:
    return train_lib.train(**({'model': model} if model is not None else {}))
  finally:
    gin.clear_config()


def _params(model_dir, step: int) -> dict:
  return ocp.PyTreeCheckpointer().restore(
      os.path.join(model_dir, f'checkpoint_{step}', 'state'))['params']


def _assert_same(a, b):
  jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=0, atol=1e-6), a, b)


def _restart_from(src, step: int, dst):
  """A copy of model dir `src` as a run stopped at `step` would have left it."""
  shutil.copytree(src, dst)
  for later in dst.glob('checkpoint_*'):
    if int(later.name.split('_')[1]) > step:
      shutil.rmtree(later)
  return dst


@pytest.mark.slow(seconds=17)
def test_resume_reads_no_consumed_batch(tmp_path, capsys):
  """Restart cost is flat in N: the iterator resumes, the source is not re-read."""
  run = tmp_path / 'run'
  _train(run, 20, 'CHECKPOINT_PERIOD=2')
  pulled = {}
  for n in (2, 18):
    restarted = _restart_from(run, n, tmp_path / f'at{n}')
    before = int(rh.PULLED.numpy())
    _train(restarted, n + 2, 'CHECKPOINT_PERIOD=2')
    pulled[n] = int(rh.PULLED.numpy()) - before
    assert 'Restored the input position' in capsys.readouterr().out
    # The resumed run is the uninterrupted one.
    _assert_same(_params(restarted, n + 2), _params(run, n + 2))
  # Both restarts pull only what their two new steps (and tf.data's read-ahead)
  # need; re-reading 18 batches would pull 16 * 8 = 128 examples more.
  assert abs(pulled[18] - pulled[2]) < 16, pulled
  assert pulled[18] < 16 * 8, pulled


def test_a_resume_on_another_input_stream_is_refused_naming_what_changed(tmp_path):
  """The saved position is one in the saved stream: another batch size, length or task
  is refused before anything runs (a changed batch failed in tf.data after the restore;
  a changed task went on from the old task's position)."""
  run = tmp_path / 'run'
  _train(run, 2, 'CHECKPOINT_PERIOD=2')
  saved = (run / 'config.gin').read_text()
  with pytest.raises(faults.CheckpointMismatchError,
                     match=r"checkpoint_2 was trained on another input stream \(BATCH_SIZE 8 "
                           r"-> 16\).*INITIAL_CHECKPOINT_PATH="):
    _train(run, 4, 'BATCH_SIZE=16')
  with pytest.raises(faults.CheckpointMismatchError,
                     match=r"MIXTURE_OR_TASK_NAME 'runtime_counted' -> 'runtime_generator'; "
                           r"TASK_FEATURE_LENGTHS \{'inputs': 16, 'targets': 16\} -> "
                           r"\{'inputs': 16, 'targets': 8\}"):
    _train(run, 4, "TASK_FEATURE_LENGTHS={'inputs': 16, 'targets': 8}",
           task='runtime_generator')
  assert (run / 'config.gin').read_text() == saved
  assert checkpoints.steps_in(str(run)) == [2]


@pytest.mark.slow
def test_pipeline_that_cannot_save_its_position_skips_batches(tmp_path, capsys):
  """A from_generator source has Python state: the run warns and re-reads to skip."""
  run = tmp_path / 'gen'
  _train(run, 4, 'CHECKPOINT_PERIOD=2', task='runtime_generator')
  warned = capsys.readouterr().err
  assert 'cannot save its position' in warned and 'PyFunc is stateful' in warned
  assert not (run / 'checkpoint_2' / 'input').exists()
  restarted = _restart_from(run, 2, tmp_path / 'at2')
  before = rh.PULLED_PY[0]
  _train(restarted, 4, 'CHECKPOINT_PERIOD=2', task='runtime_generator')
  assert rh.PULLED_PY[0] - before >= 4 * 8  # Re-read 2 batches, then 2 new ones.
  assert 'Skipping 2 consumed batches' in capsys.readouterr().out
  _assert_same(_params(restarted, 4), _params(run, 4))


def _network() -> network.Transformer:
  return network.Transformer(config_lib.TransformerConfig(
      vocab_size=264, d_model=32, d_ff=64, num_heads=4, d_kv=8, num_encoder_layers=1,
      num_decoder_layers=1, activations=('gelu', 'linear'), logits_via_embedding=False,
      dropout_rate=0.0, dtype='float32'))


def _poisoned_model():
  return rh.PoisonedModel(_network(), rh.VOCAB, rh.VOCAB)


# Unshuffled, example 40 lies in the sixth batch of 8: step 6 is non-finite.
BAD_STEP = rh.POISON_INDEX // 8 + 1


def test_nonfinite_loss_stops_naming_step_terms_and_task(tmp_path):
  model_dir = tmp_path / 'nan'
  with pytest.raises(faults.NonFiniteLossError) as e:
    _train(model_dir, 12, 'CHECKPOINT_PERIOD=4', 'SHUFFLE=False', task='runtime_poisoned',
           model=_poisoned_model())
  msg = str(e.value)
  assert f'Non-finite training step {BAD_STEP}: loss nan' in msg
  assert 'cross_ent_loss' in msg and 'z_loss' in msg and 'grad_norm' in msg
  assert "'runtime_poisoned'" in msg and "first input 'copy" in msg
  assert 'checkpoint_4' in msg and 'SKIP_NONFINITE_BATCHES' in msg
  # The last good checkpoint is kept and nothing after the bad step was saved.
  assert checkpoints.steps_in(str(model_dir)) == [4]
  assert np.isfinite(np.concatenate([np.ravel(x) for x in
                                     jax.tree.leaves(_params(model_dir, 4))])).all()
  dumped = np.load(model_dir / f'nonfinite_batch_step_{BAD_STEP}-0.npz')
  assert (dumped['encoder_input_tokens'] == rh.POISON_ID).any()
  assert not (model_dir / 'train-0.lock').exists()  # Released on the way out.
  # So is the input pipeline: no frame of the error's traceback holds a tf.data iterator
  # (one left there was freed by a later garbage collection, which it blocked for 18-27 s
  # in `make test-fast` while its autotuning thread slept).
  held = [(frame.f_code.co_name, name) for frame, _ in traceback.walk_tb(e.value.__traceback__)
          for name, v in frame.f_locals.items() if isinstance(v, tf.data.Iterator)]
  assert not held, held


def test_nonfinite_batches_skipped_when_asked(tmp_path, capsys):
  model_dir = tmp_path / 'skip'
  step, last = _train(model_dir, 8, 'CHECKPOINT_PERIOD=8', 'SHUFFLE=False',
                      'SKIP_NONFINITE_BATCHES=True', task='runtime_poisoned',
                      model=_poisoned_model())
  assert step == 8 and np.isfinite(last['loss'])
  out = capsys.readouterr().out
  assert f'Non-finite training step {BAD_STEP}' in out and 'Skipped (no update applied' in out
  meta = json.loads((model_dir / 'checkpoint_8' / 'data' / 'metadata').read_text())
  assert meta['skipped_nonfinite'] == 1
  params = _params(model_dir, 8)
  assert np.isfinite(np.concatenate([np.ravel(x) for x in jax.tree.leaves(params)])).all()


def test_nonfinite_step_applies_no_update():
  """Inside the jitted step: parameters and optimizer state stay, the step advances."""
  from crosstask.runtime.config import run as run_lib
  from crosstask.runtime.sharding import partitioning
  from crosstask.runtime.state import optimizers
  from crosstask.runtime.state import trainer as trainer_lib
  run = run_lib.resolve(_poisoned_model(), partitioning.Partitioner(), batch_size=8,
                        lengths={'inputs': 16, 'targets': 16})
  sched = lambda count: 1e-3 * (count + 1)
  tx, sched = optimizers.create_optimizer(optimizers.adafactor, sched, param_axes=run.param_axes)
  trainer = trainer_lib.Trainer(run, tx, sched)
  state = trainer.init_state(seed=0)
  before = jax.device_get(state)
  tokens = np.full((8, 16), 5, np.int32)
  batch = {'encoder_input_tokens': tokens, 'decoder_input_tokens': tokens,
           'decoder_target_tokens': tokens, 'decoder_loss_weights': np.ones((8, 16), np.float32)}
  good, m_good = trainer.train_step(state, trainer.partitioner.shard_batch(batch), jax.random.key(0))
  assert float(m_good['nonfinite']) == 0.0
  assert not np.allclose(jax.device_get(good)['params']['encoder']['encoder_norm']['scale'],
                         before['params']['encoder']['encoder_norm']['scale'])
  tokens = tokens.copy()
  tokens[3, 2] = rh.POISON_ID
  batch['encoder_input_tokens'] = tokens
  state = jax.device_put(before, trainer.state_shardings)
  after, metrics = trainer.train_step(state, trainer.partitioner.shard_batch(batch),
                                      jax.random.key(0))
  assert float(metrics['nonfinite']) == 1.0 and np.isnan(float(metrics['loss']))
  after = jax.device_get(after)
  assert int(after['step']) == int(before['step']) + 1
  jax.tree.map(np.testing.assert_array_equal, after['params'], before['params'])
  jax.tree.map(np.testing.assert_array_equal, after['opt_state'], before['opt_state'])
  # The next step applies the rate of the optimizer's count, which the skip left at 0
  # (T5X's rate of step 1 would be logged otherwise): the logged rate is the applied one.
  batch['encoder_input_tokens'] = np.full((8, 16), 5, np.int32)
  _, metrics = trainer.train_step(jax.device_put(after, trainer.state_shardings),
                                  trainer.partitioner.shard_batch(batch), jax.random.key(0))
  assert float(metrics['learning_rate']) == pytest.approx(1e-3)


def test_second_trainer_on_a_model_dir_refuses(tmp_path):
  model_dir = tmp_path / 'busy'
  model_dir.mkdir()
  (model_dir / 'config.gin').write_text('# the first run\n')
  lock = model_dir / 'train-0.lock'
  lock.write_text(json.dumps({'pid': os.getpid(), 'host': socket.gethostname(), 'started': 0}))
  with pytest.raises(faults.ModelDirLockedError,
                     match=rf'in use by another trainer \(pid {os.getpid()} on host'):
    _train(model_dir, 2)
  assert (model_dir / 'config.gin').read_text() == '# the first run\n'  # Untouched.
  assert lock.exists()
  # A lock left by a dead process (kill -9) is taken over.
  dead = subprocess.Popen(['true'])
  dead.wait()
  lock.write_text(json.dumps({'pid': dead.pid, 'host': socket.gethostname(), 'started': 0}))
  assert _train(model_dir, 2, 'CHECKPOINT_PERIOD=2')[0] == 2
  assert checkpoints.steps_in(str(model_dir)) == [2] and not lock.exists()


@pytest.mark.slow(seconds=5)  # three short runs
def test_a_start_that_fails_leaves_the_runs_saved_configuration(tmp_path, capsys):
  # Resuming with another model's shapes is refused, and the run's config.gin, which
  # --run_dir and the results table read, still describes the model that was trained.
  run = tmp_path / 'run'
  _train(run, 2, 'CHECKPOINT_PERIOD=2')
  saved = {name: (run / name).read_bytes() for name in ('config.gin', 'operative_config.gin')}
  assert b'd_ff = 64' in saved['config.gin']
  with pytest.raises(faults.CheckpointMismatchError, match='checkpoint_2'):
    _train(run, 4, 'config.TransformerConfig.d_ff = 128')
  assert {name: (run / name).read_bytes() for name in saved} == saved
  capsys.readouterr()
  assert _train(run, 1)[0] == 2  # A run past TRAIN_STEPS says so, and trains nothing.
  assert f'{run} is at step 2, TRAIN_STEPS=1: nothing to train' in capsys.readouterr().out
  # A job's own output folder may not be a training run's, whose config it would replace.
  from crosstask.runtime.jobs import restoring  # pylint: disable=g-import-not-at-top
  with pytest.raises(gin_utils.GinConfigError,
                     match=rf"EVAL_OUTPUT_DIR='{run}' is a training run's model directory"):
    restoring.check_output_dir(str(run), 'EVAL_OUTPUT_DIR')
  restoring.check_output_dir(str(run / 'eval'), 'EVAL_OUTPUT_DIR')


def test_unwritable_or_full_model_dir_fails_before_training(tmp_path, monkeypatch):
  blocker = tmp_path / 'a_file'
  blocker.write_text('')
  with pytest.raises(faults.ModelDirError, match=rf'MODEL_DIR {blocker}/run is not a writable directory'):
    _train(blocker / 'run', 2)
  monkeypatch.setattr(faults, 'free_bytes', lambda path: 4096)
  with pytest.raises(faults.DiskSpaceError, match=r'has 0\.0 MiB free, but one checkpoint'):
    _train(tmp_path / 'full', 2, 'CHECKPOINT_PERIOD=1')
  assert not list((tmp_path / 'full').glob('checkpoint_*'))
  assert not (tmp_path / 'full' / 'train-0.lock').exists()


def test_an_error_in_the_train_eval_leaves_no_input_pipeline_behind():
  # T5X's train_eval met an error after its first batch (here: parameters of another
  # tree). Its pipeline goes with the error, not with a later garbage collection of the
  # traceback (see the NaN test above): no tf.data iterator the evaluation made lives on.
  # (Its batches held in a named local, it does: one iterator.)
  model = model_lib.EncoderDecoderModel(_network(), rh.VOCAB, rh.VOCAB)
  partitioner = partitioning.Partitioner()
  lengths = {'inputs': 16, 'targets': 16}
  run = run_lib.resolve(model, partitioner, batch_size=8, lengths=lengths)
  ds_cfg = data.DatasetConfig('runtime_copy', lengths, 'train', 8, shuffle=False, seed=0)
  evaluate = train_lib._teacher_forced_eval(  # pylint: disable=protected-access
      model, partitioner, partitioner.logical_to_sharding(run.boxed), ds_cfg, max_batches=2)

  def live_iterators():
    return {id(o) for o in gc.get_objects() if issubclass(type(o), tf.data.Iterator)}
  before = live_iterators()
  with pytest.raises(ValueError) as e:
    evaluate({'not': np.zeros(3, np.float32)})
  assert e.value.__traceback__ is not None
  assert not live_iterators() - before
