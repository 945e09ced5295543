"""Checkpoints are safe to restore: async saves cut by a kill are never restored, and
restoring never unpickles anything (arrays, JSON and tf.data's format only)."""

import asyncio
import logging
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
import types

import jax
import numpy as np
import pytest
import seqio

import runtime_subprocess as rs
from crosstask import startup
from crosstask.models import config as config_lib
from crosstask.models import model as model_lib
from crosstask.models import network
from crosstask.runtime.config import platform
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.data import pipeline as data
from crosstask.runtime.report import faults
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints
from crosstask.runtime.state import optimizers
from crosstask.runtime.state import trainer as trainer_lib

_ASYNC_KILLED = textwrap.dedent('''
    import asyncio, sys
    import jax.numpy as jnp
    from orbax.checkpoint._src.path import atomicity
    from crosstask.runtime.state import checkpoints
    mgr = checkpoints.manager(sys.argv[1], checkpoints.SaveCheckpointConfig(async_save=True))
    state = {'w': jnp.arange(4096.0), 'step': jnp.int32(1)}
    checkpoints.save(mgr, 1, state, batches_consumed=1)
    mgr.wait_until_finished()
    async def never_commit(self, *a, **k):  # The rename that publishes step 2 never comes.
        print('COMMITTING', flush=True)
        await asyncio.sleep(3600)
    atomicity.AtomicRenameTemporaryPath.finalize = never_commit
    checkpoints.save(mgr, 2, {'w': jnp.ones(4096), 'step': jnp.int32(2)}, batches_consumed=2)
    print('SAVE RETURNED', flush=True)  # Async: training would go on from here.
    mgr.wait_until_finished()
''')


def test_async_save_killed_before_commit_is_never_restored(tmp_path):
  model_dir = tmp_path / 'run'
  proc = subprocess.Popen([sys.executable, '-c', _ASYNC_KILLED, str(model_dir)], cwd=rs.REPO,
                          env=rs.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
  try:
    seen = []
    deadline = time.time() + 240
    # Step 2 written completely, not yet published ('COMMITTING', from the save's own
    # thread), and the save returned before it was ('SAVE RETURNED': asynchronous). The
    # two threads print in either order: on a loaded machine the commit thread can
    # reach its rename before the main thread prints (a full suite failed so).
    while not {'COMMITTING', 'SAVE RETURNED'} <= set(seen):
      line = proc.stdout.readline()
      assert line or proc.poll() is None, '\n'.join(seen)
      assert time.time() < deadline, '\n'.join(seen)
      seen.append(line.strip())
    proc.send_signal(signal.SIGKILL)
  finally:
    proc.kill()
    proc.wait()
  leftovers = [p.name for p in model_dir.iterdir() if 'orbax-checkpoint-tmp' in p.name]
  assert leftovers and leftovers[0].startswith('checkpoint_2')
  assert checkpoints.steps_in(str(model_dir)) == [1]
  with pytest.raises(FileNotFoundError, match='interrupted'):  # Named directly, too.
    checkpoints.resolve_state_dir(str(model_dir / leftovers[0]))
  mgr = checkpoints.manager(str(model_dir))  # What a restarted run does.
  try:
    assert mgr.latest_step() == 1
    abstract = {'w': jax.ShapeDtypeStruct((4096,), np.float32),
                'step': jax.ShapeDtypeStruct((), np.int32)}
    restored, consumed = checkpoints.restore(mgr, 1, abstract)
    assert consumed == 1 and float(restored['w'][5]) == 5.0
  finally:
    mgr.close()
  assert not (model_dir / leftovers[0]).exists()  # The restarted manager cleared it.


def _trainer(profile: platform.Profile | None = None,
             **trainer_kwargs) -> tuple[trainer_lib.Trainer, config_lib.TransformerConfig]:
  cfg = config_lib.TransformerConfig(
      vocab_size=264, d_model=32, d_ff=64, num_heads=4, d_kv=8, num_encoder_layers=1,
      num_decoder_layers=1, activations=('gelu', 'linear'), dropout_rate=0.0, dtype='float32')
  vocab = seqio.ByteVocabulary()
  model = model_lib.EncoderDecoderModel(network.Transformer(cfg), vocab, vocab)
  run = run_lib.resolve(model, partitioning.Partitioner(), batch_size=8,
                        lengths={'inputs': 16, 'targets': 16}, profile=profile)
  tx, sched = optimizers.create_optimizer(optimizers.adafactor, 1e-3, param_axes=run.param_axes)
  return trainer_lib.Trainer(run, tx, sched, **trainer_kwargs), cfg


class _Payload:
  """Unpickling this creates `marker`: proof that something unpickled it."""

  def __init__(self, marker):
    self.marker = str(marker)

  def __reduce__(self):
    return (open, (self.marker, 'w'))


@pytest.mark.slow
def test_restore_never_unpickles(tmp_path, monkeypatch):
  import runtime_helpers  # noqa: F401  Registers the synthetic tasks.
  trainer, cfg = _trainer()
  state = trainer.init_state(seed=0)
  cfg_ds = data.DatasetConfig('runtime_copy', {'inputs': 16, 'targets': 16}, 'train', 8,
                              shuffle=True, seed=0)
  iterator = iter(data.get_dataset(cfg_ds))
  next(iterator)
  mgr = checkpoints.manager(str(tmp_path / 'run'))
  checkpoints.save(mgr, 1, state, 1, iterator)
  mgr.wait_until_finished()
  mgr.close()
  want_next = data.to_numpy(next(iterator))

  # Pickle payloads planted where a careless loader might look.
  marker = tmp_path / 'UNPICKLED'
  step_dir = tmp_path / 'run' / 'checkpoint_1'
  for where in (step_dir, step_dir / 'state', step_dir / 'data', step_dir / 'input'):
    for name in ('checkpoint.pkl', 'state.pickle', 'data.pkl'):
      (where / name).write_bytes(pickle.dumps(_Payload(marker)))
  hf = tmp_path / 'hf'
  from crosstask.models import hf_import
  hf_import.save_hf_checkpoint(hf, cfg, jax.device_get(state['params']))
  (hf / 'model.safetensors').unlink()
  (hf / 'pytorch_model.bin').write_bytes(pickle.dumps(_Payload(marker)))

  def refuse(*args, **kwargs):
    raise AssertionError('restore called pickle')
  for name in ('load', 'loads', 'Unpickler'):
    monkeypatch.setattr(pickle, name, refuse)

  mgr = checkpoints.manager(str(tmp_path / 'run'))
  restored, consumed = checkpoints.restore(mgr, 1, trainer.abstract_state())
  fresh = iter(data.get_dataset(cfg_ds))
  checkpoints.restore_input(mgr, 1, fresh)
  mgr.close()
  params = checkpoints.load_params(str(step_dir), trainer.abstract_params())
  monkeypatch.undo()  # torch.load(weights_only=True) unpickles with its own allow-list.
  import torch
  with pytest.raises(faults.CheckpointMismatchError,
                     match=r"pytorch_model\.bin holds more than tensors, which torch's "
                           r"weights-only loader refuses \(Weights only load failed"):
    checkpoints.load_params(str(hf), trainer.abstract_params())
  del torch

  assert not marker.exists()
  assert consumed == 1
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(restored), jax.device_get(state))
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(params),
               jax.device_get(state['params']))
  got_next = data.to_numpy(next(fresh))
  for k in want_next:
    np.testing.assert_array_equal(got_next[k], want_next[k])
  assert os.listdir(tmp_path)  # The planted files are still there, unread.


def test_a_damaged_checkpoint_is_one_line_naming_it(tmp_path, monkeypatch):
  """A checkpoint cut short, or Git LFS pointers where its data should be, had ended in
  safetensors' or TensorStore's traceback (or 'lacks 28 entries', as if another model's);
  and the reads orbax abandoned when one failed printed tracebacks under the line."""
  from crosstask.models import hf_import  # pylint: disable=g-import-not-at-top
  trainer, cfg = _trainer()
  state = trainer.init_state(seed=0)
  mgr = checkpoints.manager(str(tmp_path / 'run'))
  checkpoints.save(mgr, 1, state, batches_consumed=0)
  mgr.wait_until_finished()
  mgr.close()
  hf = tmp_path / 'hf'
  hf_import.save_hf_checkpoint(hf, cfg, jax.device_get(state['params']))
  abstract = trainer.abstract_params()

  def refused(path) -> str:
    with pytest.raises(faults.CheckpointMismatchError) as e:
      checkpoints.load_params(str(path), abstract)
    assert '\n' not in str(e.value)
    return str(e.value)

  weights = hf / 'model.safetensors'
  weights.write_bytes(weights.read_bytes()[:5000])
  assert refused(hf).startswith(f'{weights} (5000 bytes) is not a readable weights file')
  weights.write_text('version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 9\n')
  assert 'is a Git LFS pointer (63 bytes), not the weights: fetch them with `git lfs pull`' in (
      refused(hf))
  state_dir = tmp_path / 'run' / 'checkpoint_1' / 'state'
  data_files = list(state_dir.glob('ocdbt.process_*/d/*'))  # the arrays' chunks
  for p in data_files:
    p.unlink()
  # The session's hook filtered too, for what this test's read drops after it ends.
  startup._drop_abandoned_reads()  # pylint: disable=protected-access
  dropped = []  # what reaches the hook Python had before the entry point: what gets printed
  monkeypatch.setattr(sys, 'unraisablehook', dropped.append)
  asyncio_log = logging.getLogger('asyncio')
  monkeypatch.setattr(asyncio_log, 'filters', [])
  monkeypatch.setattr(logging.getLogger('absl'), 'filters', [])
  startup.quiet_startup()  # as every entry point starts
  assert data_files and 'could not be read (' in refused(state_dir.parent)
  _abandoned_reads_stay_quiet(dropped, asyncio_log)
  (state_dir / '_METADATA').unlink()
  assert 'holds none of the 28 entries the model needs (it holds 0): its metadata is ' in (
      refused(state_dir.parent))


def _abandoned_reads_stay_quiet(printed: list, asyncio_log: logging.Logger) -> None:
  """What TensorStore and asyncio drop after a failed restore (0 to 9 tracebacks on a
  resume from damaged files, by the race) is kept off the console; anything else is not."""
  read_error = Exception('Encountered error while reading array index: (slice(0, 32, 1),)')
  read_error.__cause__ = ValueError('FAILED_PRECONDITION: Error reading "params.x/0"')
  loop = asyncio.new_event_loop()
  loop.close()
  def closed_loop_from(call):
    try:
      call()
    except RuntimeError as e:
      return e
  # From TensorStore's threads, the traceback starts in asyncio itself.
  tensorstore_late = closed_loop_from(lambda: loop.call_soon_threadsafe(print))
  while tensorstore_late.__traceback__.tb_frame.f_code.co_name != 'call_soon_threadsafe':
    tensorstore_late.__traceback__ = tensorstore_late.__traceback__.tb_next
  from_python = closed_loop_from(lambda: loop.call_soon_threadsafe(print))  # a caller's bug
  other = RuntimeError('a real bug in a callback')
  other.__context__ = ValueError('while handling it')
  other.__context__.__context__ = other  # a cycle: the walk through the chain still ends
  for e in (read_error, tensorstore_late, from_python, other):
    sys.unraisablehook(types.SimpleNamespace(exc_value=e, exc_traceback=e.__traceback__))
  assert [u.exc_value for u in printed] == [from_python, other]
  later = Exception('gathered')
  later.__context__ = read_error
  kept = []
  for e in (later, other):
    record = asyncio_log.makeRecord('asyncio', logging.ERROR, __file__, 0,
                                    'Task exception was never retrieved\nfuture: <Task>', (),
                                    (type(e), e, None))
    if asyncio_log.filter(record):
      kept.append(e)
  assert kept == [other]
