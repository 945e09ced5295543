"""A run killed with SIGKILL and restarted ends where an uninterrupted run ends."""

import os
import signal
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

import runtime_subprocess as rs

STEPS, PERIOD = 40, 5
# Dropout on, so the resumed run must also replay the per-step dropout keys.
FLAGS = (f'--gin.CHECKPOINT_PERIOD={PERIOD}', '--gin.EVAL_PERIOD=0', '--gin.DROPOUT_RATE=0.1',
         '--gin.LOG_EVERY=1')


def _final(model_dir) -> dict:
  path = os.path.join(model_dir, f'checkpoint_{STEPS}', 'state')
  return ocp.PyTreeCheckpointer().restore(path)


@pytest.mark.slow
def test_kill_and_resume_matches_uninterrupted(tmp_path):
  clean, killed = tmp_path / 'clean', tmp_path / 'killed'
  ref = rs.start(rs.train_cmd(clean, STEPS, *FLAGS), tmp_path / 'clean.log')
  victim = rs.start(rs.train_cmd(killed, STEPS, *FLAGS), tmp_path / 'killed.log')
  deadline = time.time() + 240
  while not (killed / f'checkpoint_{PERIOD}').is_dir():
    assert victim.poll() is None, (tmp_path / 'killed.log').read_text()[-3000:]
    assert time.time() < deadline, 'no checkpoint appeared'
    time.sleep(0.05)
  victim.send_signal(signal.SIGKILL)
  victim.wait()
  assert not (killed / f'checkpoint_{STEPS}').exists(), 'killed too late to test resuming'
  resumed = rs.run(rs.train_cmd(killed, STEPS, *FLAGS), timeout=300)
  assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
  assert 'Restored' in resumed.stdout and f'continuing at step' in resumed.stdout
  assert ref.wait(timeout=300) == 0, (tmp_path / 'clean.log').read_text()[-3000:]

  a, b = _final(clean), _final(killed)
  assert int(a['step']) == int(b['step']) == STEPS
  flat_a = jax.tree_util.tree_leaves_with_path(a['params'])
  flat_b = dict(jax.tree_util.tree_leaves_with_path(b['params']))
  for path, x in flat_a:
    np.testing.assert_allclose(x, flat_b[path], rtol=0, atol=1e-6,
                               err_msg=jax.tree_util.keystr(path))
  jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, atol=1e-6),
               a['opt_state'], b['opt_state'])
