"""The one chip table: every part a device_kind names maps to its published figures."""
import pytest

from crosstask.runtime.sharding import topology


@pytest.mark.parametrize('device_kind, name, peak', [
    ('NVIDIA H100 80GB HBM3', 'H100', 989e12),
    ('NVIDIA H100 PCIe', 'H100 PCIe', 756e12),
    ('NVIDIA H200', 'H200', 989e12),
    ('NVIDIA A100-SXM4-80GB', 'A100', 312e12),
    ('TPU v5 lite', 'v5e', 197e12),
    ('TPU v4', 'v4', 275e12),
    ('TPU v5p', 'v5p', 459e12),
])
def test_device_kinds_map_to_the_table(device_kind, name, peak):
  chip = topology.chip_for_device_kind(device_kind)
  assert chip is not None and chip.name == name and chip.peak_bf16_flops == peak
  assert chip.hbm_bytes_per_s > 0 and chip.hbm_gib > 0 and chip.interconnect_bytes_per_s > 0


def test_cpu_and_unknown_parts_have_no_chip():
  assert topology.chip_for_device_kind('cpu') is None
  assert topology.chip_for_device_kind('Radeon 7900') is None


def test_the_prediction_counts_hbm_bytes_at_the_calibrated_share_of_the_bandwidth():
  # The H200's memory-bound kernels reach 68% of its published bandwidth (four measured
  # LongLM-large steps); uncalibrated chips and the H100 count the published figure.
  h200 = topology.chip_for_device_kind('NVIDIA H200')
  assert h200.effective_hbm_bytes_per_s == pytest.approx(0.68 * 4.8e12)
  for kind in ('NVIDIA H100 80GB HBM3', 'TPU v5 lite', 'TPU v4'):
    chip = topology.chip_for_device_kind(kind)
    assert chip.effective_hbm_bytes_per_s == chip.hbm_bytes_per_s
