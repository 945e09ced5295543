"""Two processes x four CPU devices train exactly like one process with eight devices,
through a checkpoint save and a restart (jax.distributed started by its Slurm detection
from the variables srun sets, as scripts/launch_slurm_gpu.sh does; CPU collectives
through gloo, the default of jax_cpu_collectives_implementation in jax 0.10).

Unshuffled and unpacked, the two hosts' shards of a batch are the one-host batch's
rows in another order; losses are sums over rows, so they agree to float rounding.
"""

import os
import re
import socket
import subprocess

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

import runtime_subprocess as rs
import xla_test_flags

STEPS = 6
FLAGS = ("--gin.MIXTURE_OR_TASK_NAME='runtime_copy'", '--gin.SHUFFLE=False', '--gin.PACK=False',
         '--gin.EVAL_PERIOD=0', '--gin.DROPOUT_RATE=0.0', '--gin.LOG_EVERY=1',
         '--gin.CHECKPOINT_PERIOD=3')


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(('localhost', 0))
    return s.getsockname()[1]


def _start(model_dir, steps, log, process: tuple[int, int]):
  env = rs.env()
  env['XLA_FLAGS'] = xla_test_flags.flags(4)
  pid, port = process
  env.update(rs.slurm_env(pid, 2, port))  # As srun starts a task: only MULTIHOST is set.
  cmd = rs.train_cmd(model_dir, steps, *FLAGS, '--gin.MULTIHOST=True')
  return subprocess.Popen(cmd, cwd=rs.REPO, env=env, stdout=open(log, 'w'),
                          stderr=subprocess.STDOUT)


def _numpy_restore(path: str) -> dict:
  """A checkpoint as numpy arrays, whatever device layout (here 2 x 4) saved it."""
  ckptr = ocp.PyTreeCheckpointer()
  meta = ckptr.metadata(path)
  meta = getattr(meta, 'item_metadata', meta)
  meta = getattr(meta, 'tree', meta)
  args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), meta)
  return ckptr.restore(path, args=ocp.args.PyTreeRestore(restore_args=args))


def _losses(log) -> dict[int, float]:
  return {int(s): float(l) for s, l in
          re.findall(r'^step (\d+)/\d+  loss ([\d.]+)', log.read_text(), re.M)}


def _two_processes(model_dir, steps, tmp_path, tag):
  port = _free_port()
  logs = [tmp_path / f'{tag}-{i}.log' for i in range(2)]
  procs = [_start(model_dir, steps, logs[i], (i, port)) for i in range(2)]
  return procs, logs


def _one_process_reference(model_dir, capsys) -> dict[int, float]:
  """The same run in this (8-device) test process, after the others: no CPU contention."""
  import gin
  from crosstask.runtime.config import gin_utils
  from crosstask.runtime.jobs import train_lib
  flags = [f[len('--gin.'):] for f in FLAGS] + [
      f"MODEL_DIR='{model_dir}'", f'TRAIN_STEPS={STEPS}', 'BATCH_SIZE=8',
      "MIXTURE_OR_TASK_MODULE='runtime_helpers'",
      "TASK_FEATURE_LENGTHS={'inputs': 16, 'targets': 16}"]
  gin.clear_config()
  capsys.readouterr()
  try:
    gin_utils.parse([rs.TINY, 'runs/finetune.gin'], flags)
    train_lib.train()
  finally:
    gin.clear_config()
  return {int(s): float(l) for s, l in
          re.findall(r'^step (\d+)/\d+  loss ([\d.]+)', capsys.readouterr().out, re.M)}


@pytest.mark.slow(seconds=40)
def test_two_processes_match_one_including_restart(tmp_path, capsys):
  one, two = tmp_path / 'one', tmp_path / 'two'
  with rs.reaped([]) as procs:
    first, first_logs = _two_processes(two, STEPS // 2, tmp_path, 'first')
    procs += first
    rs.assert_all_succeed(first, first_logs, timeout=600)
    assert (two / 'checkpoint_3' / 'input' / 'ds-1-of-2.index').is_file()
    second, second_logs = _two_processes(two, STEPS, tmp_path, 'second')
    procs += second
    rs.assert_all_succeed(second, second_logs, timeout=600)
  restarted = second_logs[0].read_text()
  assert 'continuing at step 3' in restarted and 'Restored the input position' in restarted

  got = {**_losses(first_logs[0]), **_losses(second_logs[0])}
  want = _one_process_reference(one, capsys)
  assert sorted(got) == sorted(want) == list(range(1, STEPS + 1))
  for step in want:
    assert got[step] == pytest.approx(want[step], rel=1e-4), (step, got, want)
  a = _numpy_restore(os.path.join(one, f'checkpoint_{STEPS}', 'state'))
  b = _numpy_restore(os.path.join(two, f'checkpoint_{STEPS}', 'state'))
  flat_b = dict(jax.tree_util.tree_leaves_with_path(b['params']))
  for path, x in jax.tree_util.tree_leaves_with_path(a['params']):
    np.testing.assert_allclose(x, flat_b[path], rtol=1e-4, atol=1e-5,
                               err_msg=jax.tree_util.keystr(path))
