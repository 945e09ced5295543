"""Runs stopped by SIGKILL or SIGTERM and restarted end where an uninterrupted run ends."""

import os
import re
import signal
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

import runtime_subprocess as rs
from crosstask.runtime.report import faults

STEPS, PERIOD = 40, 5
# Dropout on, so the resumed run must also replay the per-step dropout keys.
FLAGS = ('--gin.EVAL_PERIOD=0', '--gin.DROPOUT_RATE=0.1', '--gin.LOG_EVERY=1')


def _final(model_dir) -> dict:
  path = os.path.join(model_dir, f'checkpoint_{STEPS}', 'state')
  return ocp.PyTreeCheckpointer().restore(path)


@pytest.fixture
def procs():
  """Started runs; any still alive when the test ends (it failed) are killed."""
  started = []
  yield started
  for p in started:
    if p.poll() is None:
      p.kill()
      p.wait()


@pytest.mark.slow(seconds=40)
def test_killed_and_preempted_runs_resume_to_the_uninterrupted_result(tmp_path, procs):
  clean, killed, preempted = tmp_path / 'clean', tmp_path / 'killed', tmp_path / 'preempted'
  logs = {d: tmp_path / f'{d.name}.log' for d in (clean, killed, preempted)}
  with_period = (f'--gin.CHECKPOINT_PERIOD={PERIOD}',) + FLAGS
  # The preempted run saves only when told to stop (and at the end).
  no_period = ('--gin.CHECKPOINT_PERIOD=1000',) + FLAGS
  ref = rs.start(rs.train_cmd(clean, STEPS, *with_period), logs[clean])
  victim = rs.start(rs.train_cmd(killed, STEPS, *with_period), logs[killed])
  termed = rs.start(rs.train_cmd(preempted, STEPS, *no_period), logs[preempted])
  procs.extend([ref, victim, termed])

  # Both interruptions are watched in one tight loop and sent the moment their
  # trigger shows: blocking on one run while the other trains freely lets a fast
  # machine finish it before it is interrupted.
  triggers = {
      victim: (killed / f'checkpoint_{PERIOD}').is_dir,
      termed: lambda: f'step 6/{STEPS}' in logs[preempted].read_text(),
  }
  log_of = {victim: logs[killed], termed: logs[preempted]}
  deadline = time.time() + 480
  while triggers:
    for proc, fired in list(triggers.items()):
      assert proc.poll() is None, log_of[proc].read_text()[-3000:]
      if fired():
        proc.send_signal(signal.SIGKILL if proc is victim else signal.SIGTERM)
        del triggers[proc]
    assert time.time() < deadline, 'the interruption points never came'
    time.sleep(0.01)

  victim.wait()
  assert not (killed / f'checkpoint_{STEPS}').exists(), 'killed too late to test resuming'
  assert termed.wait(timeout=300) == faults.PREEMPTED_EXIT_CODE, logs[preempted].read_text()
  out = logs[preempted].read_text()
  stopped = int(re.search(r'Preempted \(SIGTERM\) at step (\d+): saved', out).group(1))
  assert 6 <= stopped < STEPS, 'SIGTERM came too late to test resuming'
  assert [p.name for p in preempted.glob('checkpoint_*')] == [f'checkpoint_{stopped}']
  assert 'Rerun the same command to continue' in out
  assert 'In call to configurable' not in out  # gin's note, with a function's address

  resumed = [rs.start(rs.train_cmd(d, STEPS, *flags), tmp_path / f'{d.name}.resumed.log')
             for d, flags in ((killed, with_period), (preempted, no_period))]
  procs.extend(resumed)
  for d, proc in zip((killed, preempted), resumed):
    log = tmp_path / f'{d.name}.resumed.log'
    assert proc.wait(timeout=600) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert 'continuing at step' in text
    assert 'Restored the input position' in text  # No batch re-read.
    assert 'Taking over the stale lock' in text or d is preempted
  assert ref.wait(timeout=600) == 0, logs[clean].read_text()[-3000:]

  a = _final(clean)
  for other in (_final(killed), _final(preempted)):
    assert int(a['step']) == int(other['step']) == STEPS
    flat_b = dict(jax.tree_util.tree_leaves_with_path(other['params']))
    for path, x in jax.tree_util.tree_leaves_with_path(a['params']):
      np.testing.assert_allclose(x, flat_b[path], rtol=0, atol=1e-6,
                                 err_msg=jax.tree_util.keystr(path))
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, atol=1e-6),
                 a['opt_state'], other['opt_state'])
