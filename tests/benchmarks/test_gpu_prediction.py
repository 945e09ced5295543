"""A GPU train row sets `crosstask.compile`'s prediction beside its measured step:
the report is made from the program the row compiled and ran, not from a second
compile, and it is the same roofline `crosstask.compile` prints (issue 41.3's
calibration). Run here on the CPU, with the H100's entry of the chip table."""

import jax
import pytest

import gpu
import gpu_crosstask
import gpu_spec
from crosstask.runtime.sharding import model_flops
from crosstask.runtime.sharding import topology
from gpu_workload import Lengths

H100 = 'NVIDIA H100 80GB HBM3'


# ~8 s, most of it the tiny GPU row's step compiled for 8 devices: the full suite's.
@pytest.mark.slow
def test_a_train_row_predicts_its_step_from_the_program_it_ran():
  row, lengths = gpu_spec.parse('train:tiny:xla:dots:8:scan'), Lengths(32, 16)
  trainer, data, run = gpu_crosstask.train_workload(row, lengths)
  assert trainer.compiled_train_step is None
  state, _ = trainer.train_step(trainer.init_state(0), jax.device_put(data), jax.random.key(0))
  ran = trainer.compiled_train_step
  assert ran is not None

  got = gpu_crosstask.prediction(trainer, run, H100)
  assert trainer.compiled_train_step is ran  # reported on, not compiled again
  chip = topology.chip_for_device_kind(H100)
  cfg = run.model.module.config
  executed = model_flops.executed_train_step(cfg, 8, 32, 16)  # every layer, remat included
  terms = got['predicted_terms_s']
  assert terms['flops'] == pytest.approx(executed / len(jax.devices()) / chip.peak_bf16_flops)
  assert terms['hbm'] > 0 and got['predicted_step_s'] == max(terms.values())
  assert got['predicted_bound'] == max(terms, key=terms.get)
  assert 0 < got['predicted_mfu'] <= 1

  # No chip entry (this CPU): no prediction, and the row says why.
  assert gpu_crosstask.prediction(trainer, run, 'cpu') == {
      'predicted_step_s': None, 'prediction_note': "no chip entry for 'cpu'"}
  # The JSON row: the measured step over the prediction.
  raw = {'times': [0.5, 0.5, 0.5], 'device': H100, **got}
  described = gpu.describe(row, raw, lengths)
  assert described['measured_over_predicted'] == pytest.approx(0.5 / got['predicted_step_s'])
  del state
