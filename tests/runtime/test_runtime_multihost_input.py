"""Two processes whose meshes are not host-major load exactly the rows their devices hold
and train like one process (jax.distributed over localhost, gloo CPU collectives)."""

import json
import os
import pathlib
import subprocess
import sys

import jax
import pytest

import runtime_subprocess as rs
import xla_test_flags
import multihost_input_worker as worker
import test_runtime_partitioning as tp
from test_runtime_multiprocess import _free_port
from crosstask.runtime.sharding import partitioning

HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.slow(seconds=35)
def test_hosts_load_the_rows_their_devices_hold_on_meshes_that_are_not_host_major(tmp_path):
  env = rs.env()
  env['XLA_FLAGS'] = xla_test_flags.flags(4)
  env['PYTHONPATH'] = os.pathsep.join([str(HERE), env['PYTHONPATH']])
  port = _free_port()
  outs = [tmp_path / f'{i}.json' for i in range(2)]
  logs = [tmp_path / f'{i}.log' for i in range(2)]
  procs = [subprocess.Popen([sys.executable, str(HERE / 'multihost_input_worker.py'),
                             str(outs[i])], cwd=rs.REPO, env={**env, **rs.slurm_env(i, 2, port)},
                            stdout=open(logs[i], 'w'), stderr=subprocess.STDOUT)
           for i in range(2)]
  with rs.reaped(procs):
    rs.assert_all_succeed(procs, logs, timeout=900)
  got = [json.loads(o.read_text()) for o in outs]

  # Which rows each host loads, from the batch sharding alone.
  assert [g['interleaved-data']['host'] for g in got] == [[0, 2, 8], [1, 2, 8]]
  assert got[0]['interleaved-data']['held_starts'] == [0, 4, 8, 12]  # Not a contiguous block.
  assert got[1]['interleaved-data']['held_starts'] == [2, 6, 10, 14]
  assert [g['model-across-hosts']['host'] for g in got] == [[0, 1, 16], [0, 1, 16]]
  assert [g['interleaved-fsdp']['host'] for g in got] == [[0, 2, 8], [1, 2, 8]]

  # One process with all 8 devices and the whole example pool as its batch.
  part = partitioning.Partitioner()
  trainer = tp._trainer(part, rows=worker.GLOBAL_BATCH)
  state, metrics = trainer.train_step(trainer.init_state(seed=0),
                                      part.shard_batch(tp._batch(worker.GLOBAL_BATCH)),
                                      jax.random.key(1))
  want = {'loss': float(metrics['loss']), 'grad_norm': float(metrics['grad_norm']),
          'param_sq_sum': float(sum((x * x).sum() for x in jax.tree.leaves(
              jax.device_get(state['params']))))}
  for g in got:
    for name in worker.LAYOUTS:
      for key, value in want.items():
        assert g[name][key] == pytest.approx(value, rel=1e-4), (name, key)
