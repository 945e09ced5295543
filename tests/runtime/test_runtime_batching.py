"""The shared batching of inference, embedding and scoring: a batch rounded up to the
data axis, zero-padded, and placed on any mesh layout from the full host batch."""

import json
import socket
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import runtime_subprocess as rs
import xla_test_flags
from crosstask.runtime.data import batching


def test_batch_size_is_a_multiple_of_the_data_axis():
  assert [batching.global_batch_size(b, 4) for b in (1, 4, 5, 8, 9)] == [4, 4, 8, 8, 12]
  assert batching.global_batch_size(3, 1) == 3
  with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
    batching.global_batch_size(0, 4)


def test_pad_rows_zero_pads_and_counts_the_real_rows():
  feats = {"a": np.arange(6, dtype=np.int32).reshape(3, 2), "b": np.ones(3, np.float32)}
  padded, n = batching.pad_rows(feats, 5)
  assert n == 3
  np.testing.assert_array_equal(padded["a"], [[0, 1], [2, 3], [4, 5], [0, 0], [0, 0]])
  assert padded["a"].dtype == np.int32 and padded["b"].tolist() == [1, 1, 1, 0, 0]
  with pytest.raises(ValueError, match="disagree on their row count"):
    batching.pad_rows({"a": np.zeros(3), "b": np.zeros(2)}, 4)
  with pytest.raises(ValueError, match="4 rows do not fit a batch of 2"):
    batching.pad_rows({"a": np.zeros(4)}, 2)


@pytest.mark.skipif(len(jax.devices()) < 8, reason="needs 8 devices")
def test_any_mesh_layout_gets_the_rows_its_devices_hold():
  # Devices in an order unlike jax.devices(), split over 'data' and 'model' axes.
  devices = np.asarray(jax.devices()[::-1]).reshape(2, 4)[:, [2, 0, 3, 1]]
  mesh = Mesh(devices, ("data", "model"))
  host = {"tokens": np.arange(8 * 3, dtype=np.int32).reshape(8, 3)}
  for spec in (PartitionSpec("data"), PartitionSpec(("model", "data")), PartitionSpec()):
    placed = batching.to_device(host, NamedSharding(mesh, spec))["tokens"]
    np.testing.assert_array_equal(batching.to_host(placed), host["tokens"])
    for shard in placed.addressable_shards:  # each device holds its own rows
      np.testing.assert_array_equal(np.asarray(shard.data), host["tokens"][shard.index])


_TWO_HOSTS = textwrap.dedent("""
    import json
    import jax, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from crosstask.runtime.data import batching
    from crosstask.runtime.sharding import partitioning
    partitioning.initialize_distributed(enabled=True)  # Slurm's variables: rs.slurm_env
    # The data axis alternates between the hosts: not host-major.
    by_host = [[d for d in jax.devices() if d.process_index == p] for p in (0, 1)]
    order = [d for pair in zip(*by_host) for d in pair]
    mesh = Mesh(np.asarray(order).reshape(8, 1), ('data', 'model'))
    size = batching.global_batch_size(13, 8)
    host, n = batching.pad_rows({'x': np.arange(13 * 3, dtype=np.float32).reshape(13, 3)}, size)
    batch = batching.to_device(host, NamedSharding(mesh, PartitionSpec('data')))
    out = jax.jit(lambda b: b['x'].sum(1) * 2.0,
                  out_shardings=NamedSharding(mesh, PartitionSpec('data')))(batch)
    print(json.dumps({'rows': size, 'real': n, 'out': batching.to_host(out)[:n].tolist()}))
""")


def test_two_hosts_on_a_mesh_that_is_not_host_major_compute_every_row_once(tmp_path):
  with socket.socket() as s:
    s.bind(("localhost", 0))
    port = s.getsockname()[1]
  env = rs.env()
  env["XLA_FLAGS"] = xla_test_flags.flags(4)
  procs = [subprocess.Popen([sys.executable, "-c", _TWO_HOSTS], cwd=rs.REPO,
                            env={**env, **rs.slurm_env(i, 2, port)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for i in (0, 1)]
  outs = [p.communicate(timeout=600) for p in procs]
  for p, (_, err) in zip(procs, outs):
    assert p.returncode == 0, err[-3000:]
  want = (np.arange(13 * 3, dtype=np.float32).reshape(13, 3).sum(1) * 2).tolist()
  for out, _ in outs:
    assert json.loads(out.strip().splitlines()[-1]) == {"rows": 16, "real": 13, "out": want}
