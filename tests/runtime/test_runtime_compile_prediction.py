"""`crosstask.compile`'s roofline prediction counts every layer, scanned or not.

XLA's cost model counts a while loop's body once; the prediction takes its FLOPs from
the model count and scales the collectives and HBM bytes by each loop's trip count
(`runtime.hlo`). The tiny model is compiled scanned and unrolled, on this machine's
CPU and for a v5e 2x2 slice (libtpu's compile-only devices). The CLI's JSON and text
carry the prediction and a run file's TRAIN_STEPS (test_runtime_compile.py, in its CLI
compile for the 'data' layout).
"""

import dataclasses

import gin
import jax
import jax.numpy as jnp
import pytest

from crosstask.runtime.config import gin_utils
from crosstask.runtime.jobs import aot
from crosstask.runtime.sharding import compile_report
from crosstask.runtime.sharding import hlo
from crosstask.runtime.sharding import model_flops

TINY = 't5_1_1/tiny.gin'
BATCH = ['BATCH_SIZE=8', "TASK_FEATURE_LENGTHS={'inputs': 32, 'targets': 16}"]
# Four layers a stack and a small vocabulary, so the layers hold most of the FLOPs.
DEEP = BATCH + ['config.TransformerConfig.vocab_size=256',
                'config.TransformerConfig.num_encoder_layers=4',
                'config.TransformerConfig.num_decoder_layers=4']
SCANNED = 'config.TransformerConfig.scan_layers=True'

# An all-reduce inside a loop that XLA's analysis says runs 5 times, and one after it.
LOOP_HLO = """HloModule loop, entry_computation_layout={(f32[8,4]{1,0})->f32[8,4]{1,0}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%body (state: (s32[], f32[8,4])) -> (s32[], f32[8,4]) {
  %state = (s32[], f32[8,4]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %x = f32[8,4]{1,0} get-tuple-element(%state), index=1
  %reduced = f32[8,4]{1,0} all-reduce(%x), replica_groups={}, to_apply=%add
  ROOT %next = (s32[], f32[8,4]{1,0}) tuple(%i, %reduced)
}

%cond (state.1: (s32[], f32[8,4])) -> pred[] {
  %state.1 = (s32[], f32[8,4]{1,0}) parameter(0)
  ROOT %go = pred[] constant(true)
}

ENTRY %main (x.1: f32[8,4]) -> f32[8,4] {
  %x.1 = f32[8,4]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,4]{1,0}) tuple(%zero, %x.1)
  %loop = (s32[], f32[8,4]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"5"}}
  %out = f32[8,4]{1,0} get-tuple-element(%loop), index=1
  ROOT %final = f32[8,4]{1,0} all-reduce(%out), replica_groups={}, to_apply=%add
}
"""


@pytest.fixture(autouse=True)
def _fresh_gin():
  yield
  gin.clear_config()


def test_collectives_in_a_loop_count_once_per_iteration():
  module = hlo.HloModule.parse(LOOP_HLO)
  assert module.runs['body'] == 5 and module.runs['cond'] == 6 and module.runs['main'] == 1
  stats = hlo.collective_stats(LOOP_HLO)['all-reduce']
  assert stats == {'count': 6, 'bytes': 6 * 8 * 4 * 4}


def test_a_loop_without_xlas_trip_count_runs_its_conditions_bound():
  # XLA:TPU writes no known_trip_count: the condition's `i < 5` gives it.
  tpu_style = LOOP_HLO.replace(', backend_config={"known_trip_count":{"n":"5"}}', '').replace(
      'ROOT %go = pred[] constant(true)',
      '%i.1 = s32[] get-tuple-element(%state.1), index=0\n  %five = s32[] constant(5)\n'
      '  ROOT %go = pred[] compare(%i.1, %five), direction=LT')
  assert 'known_trip_count' not in tpu_style
  assert hlo.collective_stats(tpu_style)['all-reduce']['count'] == 6


def test_the_run_keeps_the_run_files_train_steps():
  def steps(files, bindings=()):
    return aot.load_run(files, BATCH + list(bindings), jax.devices()).train_steps

  assert steps([TINY, 'csl/demo_tiny.gin']) == 300  # The compile's placeholder is not bound.
  assert steps([TINY, 'csl/demo_tiny.gin'], ['TRAIN_STEPS=7']) == 7
  assert steps([TINY, 'runs/finetune.gin']) is None  # Required but unset: the placeholder.
  assert steps([TINY]) is None
  # BATCH_SIZE above is read by the compile itself, with no run file; a misspelt one is not.
  with pytest.raises(gin_utils.GinConfigError, match=r'--gin\.BATCH_SIZ=4: no configuration '
                     r'of this job reads macro BATCH_SIZ.* Did you mean BATCH_SIZE'):
    steps([TINY], ['BATCH_SIZ=4'])


def test_traffic_of_a_scanned_loop_matches_the_unrolled_program():
  def scanned(x, weights):
    return jax.lax.scan(lambda h, w: (jnp.tanh(h @ w), None), x, weights)[0]

  def unrolled(x, weights):
    for i in range(7):
      x = jnp.tanh(x @ weights[i])
    return x

  args = (jnp.ones((32, 64), jnp.float32), jnp.ones((7, 64, 64), jnp.float32))
  loop = jax.jit(scanned).lower(*args).compile()
  flat = jax.jit(unrolled).lower(*args).compile()
  module = hlo.HloModule.parse(loop.as_text())
  assert sorted(set(module.runs.values())) == [1, 7, 8]  # entry; body; condition
  flat_bytes = compile_report.cost(flat)['bytes']
  assert compile_report.cost(loop)['bytes'] < flat_bytes / 2  # XLA's: the body once
  assert module.traffic() == pytest.approx(flat_bytes, rel=0.25)


def _compile(where: aot.Target, scan: bool) -> compile_report.Report:
  run = aot.load_run([TINY], DEEP + ([SCANNED] if scan else []), where.devices)
  return aot.compile_step(run, chip=where.chip, topology=where.name)


@pytest.mark.slow(seconds=18)
@pytest.mark.parametrize('topology_name', ['local', 'v5e:2x2'])
def test_scanned_and_unrolled_compiles_predict_the_same_step(topology_name):
  if topology_name != 'local':
    pytest.importorskip('libtpu', reason="libtpu is not installed (pip install 'crosstask[tpu]')")
  where = aot.target(topology_name)
  unrolled, scanned = _compile(where, False), _compile(where, True)
  assert scanned.model_options['scan_layers'] and not unrolled.model_options['scan_layers']
  # XLA's own count falls by about the layer count when the stacks are scanned.
  assert scanned.flops_per_chip < 0.5 * unrolled.flops_per_chip
  cfg = aot.load_run([TINY], DEEP, where.devices).model.module.config
  for r in (unrolled, scanned):
    remat = dataclasses.replace(cfg, remat_policy=r.model_options['remat_policy'])
    # The prediction's FLOPs are the model count (remat recompute on top).
    assert r.predicted_flops_per_chip == model_flops.executed_train_step(
        remat, 8, 32, 16) / r.chips
    if where.chip is None:
      # They are the unrolled program's matmuls; XLA:CPU's count adds elementwise
      # work. (XLA:TPU's counts 2.6x the matmuls of this 64-wide model.)
      assert 0.75 * unrolled.flops_per_chip < r.predicted_flops_per_chip <= (
          unrolled.flops_per_chip)
  assert scanned.collective_bytes == pytest.approx(unrolled.collective_bytes, rel=0.05)
  if where.chip is None:
    assert scanned.predicted_step_s is None  # a CPU has no peak in the chip table
    return
  # HBM bytes read from the program, each loop iteration (one layer's slice) counted,
  # against XLA's count of the unrolled program (the CPU's threefry and copies differ).
  for r in (unrolled, scanned):
    assert r.predicted_hbm_bytes_per_chip == pytest.approx(unrolled.hbm_bytes_per_chip,
                                                           rel=0.25)
  assert scanned.predicted_step_s == pytest.approx(unrolled.predicted_step_s, rel=0.25)
  assert 0 < scanned.predicted_mfu <= 1


def test_the_prediction_adds_its_terms_and_keeps_the_roofline_beside_it():
  # 2e14 model FLOPs (2.2e14 run) and 1.34e12 HBM bytes a chip on an H100: FLOPs
  # 0.222 s, HBM 0.4 s. The step is their sum; the roofline the larger alone.
  from crosstask.runtime.sharding import topology
  h100 = topology.chip_for_device_kind('NVIDIA H100 80GB HBM3')
  report = dataclasses.replace(
      compile_report.refused_report([jax.devices()[0]], 'local', 'train', 'data', 64,
                                    {'inputs': 512, 'targets': 512}),
      model_flops_per_chip=2e14, predicted_flops_per_chip=2.2e14,
      predicted_hbm_bytes_per_chip=1.34e12)
  got = compile_report.predict(report, h100, train_steps=1000)
  flops_s, hbm_s = 2.2e14 / 989e12, 1.34e12 / 3.35e12
  assert got.predicted_terms_s == pytest.approx(
      {'flops': flops_s, 'hbm': hbm_s, 'collectives': 0.0})
  assert got.predicted_step_s == pytest.approx(flops_s + hbm_s)
  assert (got.predicted_bound, got.predicted_floor_s) == ('hbm', pytest.approx(hbm_s))
  assert got.predicted_mfu == pytest.approx(2e14 / 989e12 / (flops_s + hbm_s))
  assert got.predicted_hours == pytest.approx(1000 * (flops_s + hbm_s) / 3600)
  text = compile_report._prediction_lines(got, h100)  # pylint: disable=protected-access
  assert any('none overlapping' in line for line in text)
  assert any(line.split()[:2] == ['roofline', f'{hbm_s * 1e3:.2f}'] for line in text)
  # Checked against measured steps on the H100: no caveat. On a TPU it never was, and says so.
  assert got.predicted_calibrated and not any('not calibrated' in line for line in text)
  v5e = topology.CHIPS['v5e']
  on_tpu = compile_report.predict(report, v5e, train_steps=1000)
  assert on_tpu.predicted_calibrated is False
  lines = compile_report._prediction_lines(on_tpu, v5e)  # pylint: disable=protected-access
  assert lines[-1].startswith(
      '  (not calibrated on a v5e: the prediction was checked against steps measured on H100 '
      'and H200 GPUs only')
