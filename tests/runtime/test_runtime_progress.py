"""The progress line's and TensorBoard's MFU and device memory, on a known chip and on a CPU."""

import jax
import numpy as np
import pytest

from crosstask.runtime.report import progress
from crosstask.runtime.sharding import topology

GIB = topology.GIB


class _Device:
  """A device's memory statistics as a GPU or TPU backend reports them."""
  process_index = 0
  device_kind = 'NVIDIA H100 80GB HBM3'

  def __init__(self, in_use_gib: float, peak_gib: float):
    self.stats = {'bytes_in_use': int(in_use_gib * GIB), 'peak_bytes_in_use': int(peak_gib * GIB),
                  'bytes_limit': 80 * GIB}

  def memory_stats(self):
    return self.stats


class _Writer:
  def __init__(self):
    self.scalars = {}

  def write_scalars(self, step, scalars):
    self.scalars[step] = dict(scalars)

  def flush(self):
    pass


def _report(hw, monkeypatch):
  """Two steps over 4 s (0.5 steps/s) through a Progress reporting every 2 steps."""
  times = iter([100.0, 104.0])
  monkeypatch.setattr(progress.time, 'time', lambda: next(times))
  lines, writer = [], _Writer()
  report = progress.Progress(2, 0, writer, every=2, echo=lambda line, **_: lines.append(line),
                             hw=hw)
  for step in (1, 2):
    report.update(step, {'loss': np.float32(3.0), 'nonpadding_tokens': np.float32(100.0)})
  return lines[-1], writer.scalars[2]


def test_mfu_and_memory_on_a_known_chip(monkeypatch):
  devices = [_Device(10.0, 12.0), _Device(11.0, 13.0)]
  hw = progress.hardware(devices, 2e15)
  assert hw.chip is topology.GPUS['H100'] and hw.num_chips == 2
  line, scalars = _report(hw, monkeypatch)
  # 2e15 FLOPs a step at 0.5 steps/s over two chips of 989 TFLOP/s.
  expected = 2e15 * 0.5 / (2 * 989e12)
  assert scalars['train/mfu'] == pytest.approx(expected)
  assert (scalars['train/memory_gib'], scalars['train/peak_memory_gib']) == (11.0, 13.0)
  assert line.endswith('tokens/s  ETA 0s  MFU 50.6%  mem 11.0 GiB (peak 13.0)')


def test_a_cpu_has_neither_field(monkeypatch):
  hw = progress.hardware(jax.devices(), 2e15)
  assert hw.chip is None and jax.devices()[0].memory_stats() is None
  line, scalars = _report(hw, monkeypatch)
  assert 'MFU' not in line and ' mem ' not in line and line.endswith('ETA 0s')
  # The loss a token (3.0 summed over 100 tokens), not the batch's sum, which TensorBoard keeps.
  assert line.startswith('step 2/2  loss 0.0300/token  lr nan  0.50 steps/s  '
                         '50 target tokens/s  ')  # 2 steps of 100 target tokens in 4 s
  assert scalars['train/loss'] == 3.0 and scalars['train/loss_per_token'] == pytest.approx(0.03)
  assert not {'train/mfu', 'train/memory_gib', 'train/peak_memory_gib'} & set(scalars)
  assert scalars['train/steps_per_sec'] == 0.5
