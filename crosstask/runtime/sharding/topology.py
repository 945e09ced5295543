"""Named TPU slices as compile-only devices, and what each chip generation offers.

With the `libtpu` wheel installed (`pip install 'crosstask[tpu]'`) XLA can compile
for a TPU slice on a machine that has none: the devices of
`jax.experimental.topologies.get_topology_desc` cannot run anything, but a jitted
step lowered for them compiles to the slice's real program, so its memory plan,
FLOPs and collectives can be read before renting the slice.

Names: 'GEN:AxB[xC]' (the chip grid, e.g. 'v5e:2x4', 'v4:2x2x2'), Cloud TPU's
accelerator types ('v5e-8', 'v4-16', 'v5p-8': for v4 and v5p the number counts
TensorCores, two per chip) and 'Nx' before either for N slices joined over the
data-centre network ('2xv5e:2x4').
"""

import dataclasses
import math
import os
import re
from typing import Sequence

import jax

GIB = 1024 ** 3


@dataclasses.dataclass(frozen=True)
class Chip:
  """One accelerator's published figures: Cloud TPU system architecture pages, NVIDIA
  data sheets (SXM parts; dense bf16, no sparsity). The one table the runtime and the
  benchmarks read peaks, bandwidths and memory from."""
  name: str
  hbm_gib: float  # HBM per chip
  peak_bf16_flops: float  # dense bf16 FLOP/s per chip
  hbm_bytes_per_s: float  # HBM bandwidth per chip
  grid_dims: int  # 2: a 2-D torus (v5e, v6e); 3: a 3-D torus (v4, v5p); 0: a GPU
  cores_per_chip: int  # what the number in an accelerator type ('v4-16') counts per chip
  chip_config: str  # get_topology_desc's chip_config_name: one device per chip
  # Bytes a second one chip can send to its peers (ICI links; NVLink for a GPU).
  interconnect_bytes_per_s: float = 0.0
  # The share of `hbm_bytes_per_s` at which crosstask.compile's prediction counts a step's
  # HBM bytes, calibrated on measured train steps (benchmarks/README.md, GPU): 1.0 where
  # the published figure fits (H100: five steps within 7%) or nothing was measured; the
  # H200's from its four LongLM-large steps: the GPU default's step took 559-565 ms
  # there against 589 on an H100, where the published bandwidths predicted 19% less.
  hbm_efficiency: float = 1.0
  # Whether crosstask.compile's prediction was checked against train steps measured on
  # this chip (the H100 and the H200): elsewhere its HBM term is the published bandwidth
  # over XLA's bytes, which on a TPU (other fusions) is probably pessimistic.
  calibrated: bool = False

  @property
  def effective_hbm_bytes_per_s(self) -> float:
    return self.hbm_bytes_per_s * self.hbm_efficiency


CHIPS = {
    'v4': Chip('v4', 32, 275e12, 1228e9, 3, 2, 'megacore', 6 * 50e9),
    'v5e': Chip('v5e', 16, 197e12, 819e9, 2, 1, 'default', 4 * 50e9),
    'v5p': Chip('v5p', 95, 459e12, 2765e9, 3, 2, 'default', 6 * 100e9),
    'v6e': Chip('v6e', 32, 918e12, 1640e9, 2, 1, 'default', 4 * 100e9),
}
# GPUs by the words of their jax `device_kind` ('NVIDIA H100 80GB HBM3'); most specific
# first, so 'H100 PCIe' wins over 'H100'.
GPUS = {
    'H200': Chip('H200', 141, 989e12, 4.8e12, 0, 1, '', 450e9, hbm_efficiency=0.68,
                 calibrated=True),
    'H100 PCIe': Chip('H100 PCIe', 80, 756e12, 2.0e12, 0, 1, '', 64e9),
    'H100': Chip('H100', 80, 989e12, 3.35e12, 0, 1, '', 450e9, calibrated=True),
    'A100': Chip('A100', 80, 312e12, 2.0e12, 0, 1, '', 300e9),
    'L40S': Chip('L40S', 48, 362e12, 864e9, 0, 1, '', 32e9),
    'L4': Chip('L4', 24, 121e12, 300e9, 0, 1, '', 32e9),
}


def chip_for_device_kind(device_kind: str) -> Chip | None:
  """The table's chip for a jax device's `device_kind`, or None for a CPU or an
  unlisted part ('TPU v5 lite' -> v5e, 'NVIDIA H100 80GB HBM3' -> H100)."""
  kind = device_kind.upper()
  for name, chip in GPUS.items():
    if all(part in kind for part in name.upper().split()):
      return chip
  tpu = {'TPU V4': 'v4', 'TPU V5 LITE': 'v5e', 'TPU V5E': 'v5e', 'TPU V5P': 'v5p',
         'TPU V5': 'v5p', 'TPU V6 LITE': 'v6e', 'TPU V6E': 'v6e'}
  for words, name in tpu.items():
    if kind.startswith(words):
      return CHIPS[name]
  return None
# Grids of the accelerator types the scale table and the docs use; any other grid
# can be named as GEN:AxB[xC].
ACCELERATOR_TYPES = {
    'v4-8': 'v4:2x2x1', 'v4-16': 'v4:2x2x2', 'v4-32': 'v4:2x2x4', 'v4-64': 'v4:2x4x4',
    'v5p-8': 'v5p:2x2x1', 'v5p-16': 'v5p:2x2x2', 'v5p-32': 'v5p:2x2x4',
    'v5p-64': 'v5p:2x4x4',
    'v5e-1': 'v5e:1x1', 'v5e-4': 'v5e:2x2', 'v5e-8': 'v5e:2x4', 'v5e-16': 'v5e:4x4',
    'v5e-32': 'v5e:4x8', 'v5e-64': 'v5e:8x8', 'v5e-256': 'v5e:16x16',
    'v6e-1': 'v6e:1x1', 'v6e-4': 'v6e:2x2', 'v6e-8': 'v6e:2x4', 'v6e-16': 'v6e:4x4',
    'v6e-32': 'v6e:4x8', 'v6e-64': 'v6e:8x8', 'v6e-256': 'v6e:16x16',
}
LIBTPU_HINT = ("Compiling for a TPU slice needs the libtpu wheel that matches jax "
               "(no TPU needed): pip install 'crosstask[tpu]'")


class TopologyError(ValueError):
  """A topology name that does not parse, or a slice libtpu refuses."""


class LibtpuMissingError(RuntimeError):
  """libtpu is not importable, so XLA cannot target a TPU."""


@dataclasses.dataclass(frozen=True)
class Topology:
  """A parsed topology name: chip generation, chip grid, number of slices."""
  name: str
  chip: Chip
  grid: tuple[int, ...]
  num_slices: int = 1

  @property
  def chips_per_slice(self) -> int:
    return math.prod(self.grid)

  @property
  def num_chips(self) -> int:
    return self.chips_per_slice * self.num_slices

  @property
  def grid_name(self) -> str:
    return f'{self.chip.name}:{"x".join(map(str, self.grid))}'


def valid_names() -> str:
  """What `parse` accepts, for error messages and --help."""
  return (f"'local', GEN:AxB (2-D: v5e, v6e) or GEN:AxBxC (3-D: v4, v5p), e.g. 'v5e:2x4', "
          f"'v4:2x2x2'; accelerator types {', '.join(sorted(ACCELERATOR_TYPES))}; "
          f"'Nx' in front for N slices, e.g. '2xv5e:2x4'")


def parse(name: str, num_slices: int | None = None) -> Topology:
  """'v5e:2x4', 'v5e-8', '2xv5e:2x4' -> Topology; unknown names are refused with the list."""
  text = name.strip().lower()
  slices = 1
  match = re.fullmatch(r'(\d+)x(v.*)', text)
  if match:
    slices, text = int(match.group(1)), match.group(2)
  if num_slices is not None:
    if match and num_slices != slices:
      raise TopologyError(f'--topology={name!r} names {slices} slices but '
                          f'--num_slices={num_slices}.')
    slices = num_slices
  text = ACCELERATOR_TYPES.get(text, text)
  match = re.fullmatch(r'(v[0-9a-z]+):(\d+(?:x\d+)*)', text)
  if not match or match.group(1) not in CHIPS:
    gpu = chip_for_device_kind(name)
    if gpu is not None:  # No compile-only GPU devices exist, as libtpu's TPU ones do.
      raise TopologyError(
          f'--topology={name!r} is a GPU ({gpu.name}): XLA compiles for a GPU only on one. '
          'Run crosstask.compile with --topology=local on that machine; its prediction '
          f'reads the {gpu.name} row of the chip table. Ahead of time: {valid_names()}.')
    raise TopologyError(f'Unknown topology {name!r}; valid: {valid_names()}.')
  chip = CHIPS[match.group(1)]
  grid = tuple(int(d) for d in match.group(2).split('x'))
  if chip.grid_dims == 3 and len(grid) == 2:
    grid = grid + (1,)
  if len(grid) != chip.grid_dims or min(grid) < 1 or slices < 1:
    raise TopologyError(f'Topology {name!r}: a {chip.name} slice is a '
                        f'{chip.grid_dims}-D grid of chips (e.g. '
                        f'{"v5e:2x4" if chip.grid_dims == 2 else "v4:2x2x2"}); '
                        f'valid: {valid_names()}.')
  return Topology(name, chip, grid, slices)


def _host_bounds(grid: Sequence[int]) -> tuple[int, int, int]:
  """Chips per host: 2x2 (four chips), or the whole grid when it is smaller."""
  padded = tuple(grid) + (1,) * (3 - len(grid))
  return (min(2, padded[0]), min(2, padded[1]), 1)


def require_libtpu() -> None:
  try:
    import libtpu  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError as e:
    raise LibtpuMissingError(f'libtpu is not installed ({e}). {LIBTPU_HINT}') from None


def compile_only_devices(topology: Topology) -> list[jax.Device]:
  """The slice's devices, one per chip, ordered by slice then chip coordinates."""
  require_libtpu()
  from jax.experimental import topologies  # pylint: disable=g-import-not-at-top
  # Without these libtpu writes warnings about a TPU VM it is not on; they describe
  # a machine to run on, not the compile target.
  os.environ.setdefault('TPU_WORKER_HOSTNAMES', 'localhost')
  os.environ.setdefault('TPU_ACCELERATOR_TYPE', 'v5litepod-4')
  # Compile-only devices touch no chip, so processes need not take turns (tests run
  # in parallel workers; the lock is for processes driving real chips).
  os.environ.setdefault('ALLOW_MULTIPLE_LIBTPU_LOAD', '1')
  grid = topology.grid + (1,) * (3 - len(topology.grid))
  try:
    desc = topologies.get_topology_desc(
        platform='tpu', topology_name=topology.grid_name,
        chip_config_name=topology.chip.chip_config,
        chips_per_host_bounds=_host_bounds(grid), num_slices=topology.num_slices)
  except Exception as e:  # pylint: disable=broad-except
    raise TopologyError(f'libtpu refused topology {topology.name!r}: {e}') from e
  devices = list(desc.devices)
  if len(devices) != topology.num_chips:
    raise TopologyError(f'Topology {topology.name!r}: libtpu gave {len(devices)} devices '
                        f'for {topology.num_chips} chips.')
  return devices
