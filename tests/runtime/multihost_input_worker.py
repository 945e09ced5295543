"""One of two CPU processes (4 devices each) training one step on meshes that are not
host-major; test_runtime_multihost_input.py starts two and compares with one process.

Usage: multihost_input_worker.py OUT_JSON, with Slurm's task variables set
(runtime_subprocess.slurm_env): the process id and coordinator come from JAX's cluster
detection, through the entry points' own start-up (partitioning.initialize_distributed).
Each host loads only the examples its `Partitioner.host_input` names: shard
`shard_index` of `num_shards` of a fixed example pool (every num_shards-th example, as
tf.data sharding does), `batch_size` rows.
"""

import json
import sys

import jax
import numpy as np

LAYOUTS = {
    # Devices interleaved across hosts: host 0 holds rows 0-1, 4-5, 8-9, 12-13.
    'interleaved-data': dict(layout='data', num_partitions=1),
    # The model axis crosses the hosts: both hold every row (replicas).
    'model-across-hosts': dict(layout='data', num_partitions=2),
    'interleaved-fsdp': dict(layout='fsdp', num_partitions=1),
}
GLOBAL_BATCH = 16


def interleaved_devices():
  """p0d0, p1d0, p0d1, p1d1, ...: a device order that is not host-major."""
  by_process = {}
  for d in sorted(jax.devices(), key=lambda d: d.id):
    by_process.setdefault(d.process_index, []).append(d)
  return [d for group in zip(*by_process.values()) for d in group]


def host_rows(host) -> np.ndarray:
  """Indices (in the example pool) of the rows this host loads for the first batch."""
  return np.arange(host.shard_index, GLOBAL_BATCH, host.num_shards)[:host.batch_size]


def main(out: str) -> None:
  from crosstask import startup
  startup.quiet_startup()  # As the entry points start: SeqIO's TensorFlow loads quietly,
  # out of the garbage collector's way.
  from crosstask.runtime.sharding import partitioning
  partitioning.initialize_distributed(enabled=True)
  import test_runtime_partitioning as tp
  pool = tp._batch(GLOBAL_BATCH)
  results = {}
  for name, kwargs in LAYOUTS.items():
    part = partitioning.Partitioner(devices=interleaved_devices(), **kwargs)
    host = part.host_input(GLOBAL_BATCH)
    rows = host_rows(host)
    batch = part.shard_batch({k: v[rows] for k, v in pool.items()})
    # Each device holds pool rows of this host only, in the order the host loaded them.
    placed = batch['encoder_input_tokens']
    held = sorted({int(s.index[0].start or 0) for s in placed.addressable_shards})
    trainer = tp._trainer(part, rows=GLOBAL_BATCH)
    state = trainer.init_state(seed=0)
    partitioning.wait_for_all_processes(f'step-{name}')
    state, metrics = trainer.train_step(state, batch, jax.random.key(1))
    with part.context():
      checksum = jax.jit(lambda p: sum(jax.numpy.sum(x * x) for x in jax.tree.leaves(p)),
                         out_shardings=part.replicated)(state['params'])
    results[name] = {
        'host': [host.shard_index, host.num_shards, host.batch_size],
        'rows': rows.tolist(), 'held_starts': held,
        'loss': float(metrics['loss']), 'grad_norm': float(metrics['grad_norm']),
        'param_sq_sum': float(checksum)}
  with open(out, 'w') as f:
    json.dump(results, f)
  partitioning.wait_for_all_processes('done')


if __name__ == '__main__':
  main(sys.argv[1])
