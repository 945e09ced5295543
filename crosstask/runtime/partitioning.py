"""The device mesh and the logical-axis rules that place parameters and batches on it.

The network names its axes logically ('embed', 'mlp', ...); only here do those names
become mesh axes, so one model runs data-parallel, model-parallel or both unchanged.
"""

import contextlib
from typing import Any, Iterator, Mapping, Sequence

import flax.linen as nn
import gin
import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

LogicalRules = Sequence[tuple[str, str | None]]


def standard_logical_axis_rules() -> LogicalRules:
  """T5X's standard rules: batch over 'data', wide dims over 'model', embed replicated."""
  return (
      ('batch', 'data'),
      ('vocab', 'model'),
      ('mlp', 'model'),
      ('heads', 'model'),
      ('joined_kv', 'model'),
      ('kv', None),
      ('embed', None),
      ('length', None),
      ('relpos_buckets', None),
      ('abspos_buckets', None),
      ('layers', None),
      ('stack', None),
      ('mlp_activations', None),
  )


@gin.configurable(module='partitioning')
class Partitioner:
  """A ('data', 'model') mesh; `num_partitions` devices share the model axis."""

  def __init__(self,
               num_partitions: int = 1,
               logical_axis_rules: LogicalRules | None = None,
               devices: Sequence[jax.Device] | None = None):
    devices = list(devices if devices is not None else jax.devices())
    if num_partitions < 1 or len(devices) % num_partitions:
      raise ValueError(
          f'Partitioner.num_partitions={num_partitions} must divide the number of '
          f'devices ({len(devices)}).')
    grid = np.asarray(devices).reshape(len(devices) // num_partitions, num_partitions)
    self.mesh = Mesh(grid, ('data', 'model'), axis_types=(AxisType.Auto, AxisType.Auto))
    self.rules = tuple(logical_axis_rules or standard_logical_axis_rules())

  @property
  def data_size(self) -> int:
    return self.mesh.shape['data']

  @property
  def data_sharding(self) -> NamedSharding:
    """Batches are split over the 'data' axis along their first dimension."""
    return NamedSharding(self.mesh, PartitionSpec('data'))

  @property
  def replicated(self) -> NamedSharding:
    return NamedSharding(self.mesh, PartitionSpec())

  @contextlib.contextmanager
  def context(self) -> Iterator[None]:
    """Activates the mesh and the rules, so the network's logical constraints bind."""
    with jax.set_mesh(self.mesh), nn.logical_axis_rules(self.rules):
      yield

  def logical_to_sharding(self, boxed_tree: Any) -> Any:
    """Shardings for a tree of `nn.Partitioned` (or plain) leaves, by the rules."""
    specs = nn.get_partition_spec(boxed_tree)
    return nn.logical_to_mesh_sharding(specs, self.mesh, self.rules)

  def shard_batch(self, local_batch: Mapping[str, np.ndarray]) -> dict[str, jax.Array]:
    """A global batch from this host's piece (the whole batch on one host)."""
    sharding = self.data_sharding
    return {k: jax.make_array_from_process_local_data(sharding, np.asarray(v))
            for k, v in local_batch.items()}


_DISTRIBUTED = []


@gin.configurable(module='partitioning')
def initialize_distributed(enabled: bool = False, coordinator_address: str | None = None,
                           num_processes: int | None = None,
                           process_id: int | None = None) -> None:
  """Multi-host start-up (`jax.distributed.initialize`), off unless asked for.

  The entry points call it right after parsing gin, before anything touches the
  devices (a Partitioner built by gin would otherwise see only local ones).
  """
  if enabled and not _DISTRIBUTED:
    jax.distributed.initialize(coordinator_address=coordinator_address,
                               num_processes=num_processes, process_id=process_id)
    _DISTRIBUTED.append(True)


def wait_for_all_processes(name: str, timeout_s: int = 900) -> None:
  """A barrier of the coordination service (not a collective), before the first collective.

  CPU collectives (gloo) give up after 30 s when one process lags, e.g. still
  compiling on a busy machine; this barrier waits as long as `timeout_s`.
  """
  if jax.process_count() == 1:
    return
  from jax._src import distributed  # The client that jax.distributed.initialize made.
  client = getattr(distributed.global_state, 'client', None)
  if client is not None:
    client.wait_at_barrier(name, timeout_in_ms=timeout_s * 1000)
