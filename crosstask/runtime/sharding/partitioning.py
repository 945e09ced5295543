"""The device mesh, the layouts (logical-axis rules) that place tensors on it, and batches.

The network names its axes logically ('embed', 'mlp', ...); only here do those names
become mesh axes, so one model runs data-parallel, fully sharded (FSDP), tensor-parallel
or a mix unchanged. The mesh always has the axes ('data', 'fsdp', 'model'); a layout
decides their sizes and which logical axes they take:

- 'data': batches split over 'data', parameters whole on every device (T5X's default);
  with NUM_PARTITIONS > 1 the wide dimensions also split over 'model', as in T5X.
- 'fsdp': batches split over 'fsdp', and every parameter's 'embed' dimension too, so
  parameters and optimizer state are sharded over the data-parallel devices.
- 'tensor': heads, mlp and vocab dimensions over 'model' (NUM_PARTITIONS devices),
  batches over 'data'.
- 'fsdp+tensor': both: 'embed' over 'fsdp', heads/mlp/vocab over 'model'.

With `num_slices` > 1 (multi-slice TPU), the 'data' axis also spans the slices, over
the data-centre network; 'fsdp' and 'model' stay within a slice.
"""

import contextlib
import dataclasses
import functools
import math
from typing import Any, Iterator, Mapping, Sequence

import flax.linen as nn
import gin
import jax
import numpy as np
from jax.experimental import mesh_utils
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec


class LayoutError(ValueError):
  """A mesh, layout or batch the devices cannot take; the message names the gin macro to
  change (entry points print it as one line, as a gin mistake)."""


LogicalRules = Sequence[tuple[str, str | tuple[str, ...] | None]]

MESH_AXES = ('data', 'fsdp', 'model')
# Batches (and activations' batch dimension) split over both data-parallel axes.
BATCH_AXES = ('data', 'fsdp')
LAYOUTS = ('data', 'fsdp', 'tensor', 'fsdp+tensor')


def standard_logical_axis_rules() -> LogicalRules:
  """T5X's standard rules: batch over the data axes, wide dims over 'model', embed whole."""
  return (
      ('batch', BATCH_AXES),
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


def fsdp_logical_axis_rules() -> LogicalRules:
  """The standard rules with parameters' 'embed' dimension over 'fsdp'.

  Flax gives each dimension the first rule whose mesh axis the tensor does not use
  yet. Activations ([batch, length, embed]) already use 'fsdp' for their batch, so
  their 'embed' falls through to the next rule and stays whole; parameters have no
  batch dimension, so theirs is sharded.
  """
  standard = standard_logical_axis_rules()
  return standard[:1] + (('embed', 'fsdp'),) + standard[1:]


def layout_rules(layout: str) -> LogicalRules:
  check_layout(layout)
  return fsdp_logical_axis_rules() if 'fsdp' in layout else standard_logical_axis_rules()


def check_layout(layout: str) -> None:
  if layout not in LAYOUTS:
    raise LayoutError(f'Partitioner.layout={layout!r} (gin LAYOUT): expected one of {LAYOUTS}.')


def mesh_shapes(layout: str, num_devices: int, num_partitions: int = 1,
                num_slices: int = 1) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
  """(within-slice, across-slice) sizes of the ('data', 'fsdp', 'model') axes.

  The within-slice (ICI) shape times the across-slice (DCN) shape elementwise is
  the mesh's shape; only 'data' crosses slices.
  """
  check_layout(layout)
  if num_slices < 1 or num_devices % num_slices:
    raise LayoutError(f'Partitioner.num_slices={num_slices} must divide the number of '
                      f'devices ({num_devices}).')
  per_slice = num_devices // num_slices
  if num_partitions < 1 or per_slice % num_partitions:
    raise LayoutError(
        f'Partitioner.num_partitions={num_partitions} must divide the number of '
        f'devices ({num_devices})' + (f' per slice ({per_slice})' if num_slices > 1 else '')
        + '.')
  if layout.endswith('tensor') and num_partitions == 1:
    raise LayoutError(f"Partitioner.layout='{layout}' splits tensors over the 'model' axis, "
                      'whose size is NUM_PARTITIONS (Partitioner.num_partitions): set it '
                      f'above 1 (a divisor of the {per_slice} devices per slice).')
  rest = per_slice // num_partitions
  ici = (1, rest, num_partitions) if 'fsdp' in layout else (rest, 1, num_partitions)
  return ici, (num_slices, 1, 1)


def batch_shards(layout: str, num_devices: int, num_partitions: int = 1,
                 num_slices: int = 1) -> int:
  """How many ways a batch splits under `layout` (the 'data' x 'fsdp' axes), from sizes only."""
  ici, dcn = mesh_shapes(layout, num_devices, num_partitions, num_slices)
  return ici[0] * dcn[0] * ici[1] * dcn[1]


def _single_slice_grid(shape: Sequence[int], devices: Sequence[Any]) -> np.ndarray:
  """mesh_utils' topology-aware order; the devices as listed where it refuses them."""
  try:
    return mesh_utils.create_device_mesh(tuple(shape), list(devices),
                                         allow_split_physical_axes=True)
  except (ValueError, NotImplementedError, AssertionError, KeyError, AttributeError):
    # E.g. TPU devices without the coordinates mesh_utils expects for this shape.
    return np.asarray(devices, dtype=object).reshape(tuple(shape))


def device_grid(ici_shape: Sequence[int], dcn_shape: Sequence[int],
                devices: Sequence[Any]) -> np.ndarray:
  """The devices as an array of shape ici * dcn, fast-network axes within each slice.

  Multi-slice devices (TPU's `slice_index`) go through mesh_utils'
  create_hybrid_device_mesh; devices without slice indices (CPU, some compile-only
  lists) are split into `prod(dcn_shape)` consecutive groups, one per slice.
  """
  devices = list(devices)
  if math.prod(dcn_shape) == 1:
    return _single_slice_grid(ici_shape, devices)
  try:
    return mesh_utils.create_hybrid_device_mesh(tuple(ici_shape), tuple(dcn_shape), devices,
                                                allow_split_physical_axes=True)
  except (ValueError, NotImplementedError, AssertionError, KeyError, AttributeError):
    pass
  n = math.prod(dcn_shape)
  per = len(devices) // n
  blocks = [_single_slice_grid(ici_shape, devices[i * per:(i + 1) * per]) for i in range(n)]
  # [slices..., ici...] -> interleave each slice axis with its ici axis, slice-major.
  grid = np.stack(blocks).reshape(tuple(dcn_shape) + tuple(ici_shape))
  k = len(ici_shape)
  grid = grid.transpose([a for i in range(k) for a in (i, k + i)])
  return grid.reshape([d * c for d, c in zip(dcn_shape, ici_shape)])


@dataclasses.dataclass(frozen=True)
class HostInput:
  """What this host's input pipeline reads: shard `shard_index` of `num_shards`,
  `batch_size` rows a step (the rows of the global batch its devices hold).

  Hosts whose devices hold the same rows (replicas, e.g. across the model axis)
  share a shard index and must read the same examples.
  """
  shard_index: int
  num_shards: int
  batch_size: int


@gin.configurable(module='partitioning')
class Partitioner:
  """A ('data', 'fsdp', 'model') mesh laid out by `layout`.

  `num_partitions` is the size of the 'model' axis (tensor parallelism); the other
  devices go to 'data' or 'fsdp' as the layout says. `num_slices` > 1 makes the
  'data' axis span that many slices (the slower, data-centre network).
  """

  def __init__(self,
               num_partitions: int = 1,
               logical_axis_rules: LogicalRules | None = None,
               devices: Sequence[jax.Device] | None = None,
               layout: str = 'data',
               num_slices: int = 1):
    devices = list(devices if devices is not None else jax.devices())
    ici, dcn = mesh_shapes(layout, len(devices), num_partitions, num_slices)
    grid = device_grid(ici, dcn, devices)
    self.layout = layout
    self.num_slices = num_slices
    self.mesh = Mesh(grid, MESH_AXES, axis_types=(AxisType.Auto,) * len(MESH_AXES))
    self.rules = tuple(logical_axis_rules or layout_rules(layout))

  @property
  def data_size(self) -> int:
    """How many ways a batch is split (the 'data' and 'fsdp' axes together)."""
    return self.mesh.shape['data'] * self.mesh.shape['fsdp']

  @property
  def data_sharding(self) -> NamedSharding:
    """Batches are split over the data-parallel axes along their first dimension."""
    return NamedSharding(self.mesh, PartitionSpec(BATCH_AXES))

  @property
  def replicated(self) -> NamedSharding:
    return NamedSharding(self.mesh, PartitionSpec())

  def describe(self) -> str:
    sizes = ', '.join(f'{k}={v}' for k, v in self.mesh.shape.items())
    return f"layout '{self.layout}' (mesh {sizes})"

  @contextlib.contextmanager
  def context(self) -> Iterator[None]:
    """Activates the mesh and the rules, so the network's logical constraints bind."""
    with jax.set_mesh(self.mesh), nn.logical_axis_rules(self.rules):
      yield

  def logical_to_sharding(self, boxed_tree: Any) -> Any:
    """Shardings for a tree of `nn.Partitioned` (or plain) leaves, by the rules.

    Refuses a dimension that its mesh axes do not divide: XLA would pad or
    replicate it, so the layout would not hold what it says.
    """
    specs = nn.get_partition_spec(boxed_tree)
    shardings = nn.logical_to_mesh_sharding(specs, self.mesh, self.rules)
    is_box = lambda x: isinstance(x, nn.Partitioned)
    boxes = dict(jax.tree_util.tree_flatten_with_path(boxed_tree, is_leaf=is_box)[0])
    for path, sharding in jax.tree_util.tree_flatten_with_path(shardings)[0]:
      box = boxes.get(path)
      if box is None or not hasattr(box, 'value') or not hasattr(box.value, 'shape'):
        continue
      self._check_divides(path_name(path), box.value.shape, sharding.spec, box.names)
    return shardings

  def _check_divides(self, name: str, shape: Sequence[int], spec: PartitionSpec,
                     logical: Sequence[str | None]) -> None:
    for dim, (size, axes) in enumerate(zip(shape, spec)):
      axes = (axes,) if isinstance(axes, str) else tuple(axes or ())
      ways = math.prod(self.mesh.shape[a] for a in axes)
      if size % ways:
        over = ' x '.join(f"'{a}' (size {self.mesh.shape[a]})" for a in axes)
        raise LayoutError(
            f"{self.describe()} would shard parameter '{name}' dimension {dim} "
            f"('{logical[dim]}', size {size}) over mesh axis {over}, which does not divide "
            f'it; XLA would silently replicate or pad it. Choose NUM_PARTITIONS '
            f'(Partitioner.num_partitions) or LAYOUT (Partitioner.layout) so that it divides.')

  def check_batch(self, global_batch: int, what: str = 'BATCH_SIZE', *,
                  num_microbatches: int = 1) -> None:
    """Refuses a global batch (or its microbatches) the data-parallel axes do not split
    evenly: the one place this is decided (`run.resolve` asks it once per run)."""
    n = self.data_size
    if global_batch % n:
      raise LayoutError(
          f'{what}={global_batch} (the global batch) does not divide over the {n} batch '
          f"shards of {self.describe()} (the {n}-way data axes 'data' x 'fsdp'); use a "
          f'multiple of {n}.')
    if num_microbatches < 1 or global_batch % num_microbatches:
      raise LayoutError(f'NUM_MICROBATCHES={num_microbatches} (Trainer.num_microbatches) must '
                        f'split the batch of {global_batch} into equal microbatches.')
    if (global_batch // num_microbatches) % n:
      raise LayoutError(
          f'NUM_MICROBATCHES={num_microbatches} (Trainer.num_microbatches) splits the batch of '
          f'{global_batch} into microbatches of {global_batch // num_microbatches} rows, which '
          f'do not divide over the {n} batch shards of {self.describe()}.')

  @functools.cached_property
  def _host_shards(self) -> dict[int, frozenset[int]]:
    """For each process, the batch shards (of `data_size`) that its devices hold."""
    indices = self.data_sharding.devices_indices_map((self.data_size,))
    shards: dict[int, set[int]] = {}
    for device, index in indices.items():
      shards.setdefault(device.process_index, set()).add(index[0].start or 0)
    return {p: frozenset(s) for p, s in shards.items()}

  def host_input(self, global_batch: int) -> HostInput:
    """Which rows of each global batch this host must load, from the batch sharding.

    Works for any mesh: a host's devices may hold rows that are not contiguous
    (a mesh that is not host-major), or the same rows as another host's.
    """
    self.check_batch(global_batch)
    by_host = self._host_shards
    groups = sorted(set(by_host.values()), key=min)
    for a in groups:
      for b in groups:
        if a != b and a & b:
          raise ValueError(f'{self.describe()}: hosts hold overlapping but different batch '
                           f'shards ({sorted(a)} and {sorted(b)}); no host input fits.')
    if len({len(g) for g in groups}) > 1:
      raise ValueError(f'{self.describe()}: hosts hold different numbers of batch shards '
                       f'({[sorted(g) for g in groups]}).')
    mine = by_host[jax.process_index()]
    rows = global_batch // self.data_size * len(mine)
    return HostInput(shard_index=groups.index(mine), num_shards=len(groups), batch_size=rows)

  def shard_batch(self, local_batch: Mapping[str, np.ndarray]) -> dict[str, jax.Array]:
    """The global batch from this host's rows (`host_input`'s; the whole batch on one host).

    Each device gets its rows of the host's piece in order, wherever in the global
    batch the sharding puts them.
    """
    mine = self._host_shards[jax.process_index()]
    out = {}
    for k, v in local_batch.items():
      v = np.asarray(v)
      if v.shape[0] % len(mine):
        raise ValueError(f"Batch feature '{k}' has {v.shape[0]} rows on this host, which do "
                         f'not split over the {len(mine)} batch shards its devices hold '
                         f'({self.describe()}).')
      rows = v.shape[0] // len(mine) * self.data_size
      out[k] = jax.make_array_from_process_local_data(self.data_sharding, v,
                                                      (rows,) + v.shape[1:])
    return out

  def shard_global_batch(self, global_batch: Mapping[str, np.ndarray]) -> dict[str, jax.Array]:
    """The batch split over the data axes when every host holds all of it."""
    return {k: jax.make_array_from_process_local_data(self.data_sharding, np.asarray(v),
                                                      np.shape(v))
            for k, v in global_batch.items()}

  def mirror_sharding(self, leaf: Any, param: Any, param_sharding: NamedSharding
                      ) -> NamedSharding:
    """The sharding of a state array derived from a parameter (moments, statistics).

    Dimensions the leaf shares with the parameter keep its mesh axes; reduced ones
    (size 1 where the parameter's is larger, e.g. factored Adafactor statistics) and
    leaves of another rank are whole.
    """
    if len(leaf.shape) != len(param.shape):
      return self.replicated
    spec = tuple(param_sharding.spec) + (None,) * (len(param.shape) - len(param_sharding.spec))
    axes = [a if n == p else None for a, n, p in zip(spec, leaf.shape, param.shape)]
    return NamedSharding(self.mesh, PartitionSpec(*axes))

  def state_shardings(self, state: Any, params: Any, param_shardings: Any) -> Any:
    """Shardings for a tree of state (e.g. optimizer state) built from `params`.

    A leaf is matched to the parameter whose path ends its own (optax keeps a
    params-shaped tree under each moment); scalars and unmatched leaves are whole.
    """
    by_path = {}
    for (path, p), (_, s) in zip(jax.tree_util.tree_flatten_with_path(params)[0],
                                 jax.tree_util.tree_flatten_with_path(param_shardings)[0]):
      by_path[tuple(str(k) for k in path)] = (p, s)

    def place(path, leaf):
      keys = tuple(str(k) for k in path)
      for start in range(len(keys)):
        if keys[start:] in by_path:
          return self.mirror_sharding(leaf, *by_path[keys[start:]])
      return self.replicated
    return jax.tree_util.tree_map_with_path(place, state)


def path_name(path: Sequence[Any]) -> str:
  """'encoder/layers_0/attention/query' for a pytree key path."""
  parts = []
  for k in path:
    parts.append(str(getattr(k, 'key', getattr(k, 'name', getattr(k, 'idx', k)))))
  return '/'.join(parts)


_DISTRIBUTED = []


@gin.configurable(module='partitioning')
def initialize_distributed(enabled: bool = False, coordinator_address: str | None = None,
                           num_processes: int | None = None,
                           process_id: int | None = None) -> None:
  """Multi-host start-up (`jax.distributed.initialize`), off unless asked for.

  The entry points call it right after parsing gin, before anything touches the
  devices (a Partitioner built by gin would otherwise see only local ones). What is
  left None, JAX's own cluster detection fills in (Cloud TPU metadata, Slurm's srun
  variables, JAX_COORDINATOR_ADDRESS): scripts/launch_*.sh set nothing else.
  """
  if enabled and not _DISTRIBUTED:
    try:
      jax.distributed.initialize(coordinator_address=coordinator_address,
                                 num_processes=num_processes, process_id=process_id)
    except ValueError as e:  # No cluster found to fill in what was left None.
      raise ValueError(
          f'MULTIHOST=True, but jax.distributed.initialize could not start ({e}): launch '
          'on every worker of a Cloud TPU slice or under srun (scripts/launch_tpu_pod.sh, '
          'scripts/launch_slurm_gpu.sh), or set JAX_COORDINATOR_ADDRESS and '
          'partitioning.initialize_distributed.num_processes / process_id.') from e
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
