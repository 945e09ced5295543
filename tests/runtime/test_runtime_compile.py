"""Ahead-of-time compiles for a TPU slice without one (`python -m crosstask.compile`).

The tiny model's train step is compiled for a v5e 2x2 slice with every layout preset
the Partitioner has; per-chip bytes of parameters and optimizer state come from the
state's shardings and are checked against the totals and against XLA's own plan.
Needs the libtpu wheel (`pip install 'crosstask[tpu]'`; `make test` installs it).
"""

import contextlib
import io
import json
import math
import subprocess
import sys
import textwrap

import gin
import numpy as np
import pytest

pytest.importorskip('libtpu', reason="libtpu is not installed (pip install 'crosstask[tpu]')")

import jax  # pylint: disable=g-import-not-at-top

from crosstask import compile as compile_cli  # pylint: disable=g-import-not-at-top
from crosstask.runtime.jobs import aot  # pylint: disable=g-import-not-at-top
from crosstask.runtime.sharding import topology  # pylint: disable=g-import-not-at-top
import runtime_subprocess as rs  # pylint: disable=g-import-not-at-top

TINY = 't5_1_1/tiny.gin'
SMALL_BATCH = ['BATCH_SIZE=8', "TASK_FEATURE_LENGTHS={'inputs': 32, 'targets': 16}"]
# The layout compiles: one layer a stack still has every parameter and collective kind a
# layout places (encoder, decoder self and cross attention, the gated MLP), and an
# unscanned step's TPU compile grows with its layers (v5e 2x2 fsdp: 11 s for 2+2, 6.5 s
# for 1+1 on 2 cores).
ONE_LAYER = SMALL_BATCH + ['config.TransformerConfig.num_encoder_layers=1',
                           'config.TransformerConfig.num_decoder_layers=1']
LAYOUTS = ('data', 'fsdp', 'tensor', 'fsdp+tensor')
# The 'model' axis for the tensor layouts on four chips.
NUM_PARTITIONS = {'data': None, 'fsdp': None, 'tensor': 2, 'fsdp+tensor': 2}


@pytest.fixture(autouse=True)
def _fresh_gin():
  yield
  gin.clear_config()


def _total_bytes(tree) -> int:
  return sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def _check_per_chip_bytes(report: dict, run, trainer) -> None:
  """A v5e 2x2 train-step report's per-chip bytes against the state's totals and XLA's plan."""
  partitioner = run.partitioner
  state = trainer.abstract_state()
  params_total, opt_total = _total_bytes(state['params']), _total_bytes(state['opt_state'])
  # Parameters are never split over 'data'; FSDP and tensor axes split (nearly) all.
  shards = math.prod(size for axis, size in partitioner.mesh.shape.items() if axis != 'data')
  assert report['params_gib'] * aot.GIB == pytest.approx(params_total / shards, rel=0.05)
  opt_per_chip = report['opt_state_gib'] * aot.GIB
  if partitioner.layout == 'data':
    assert opt_per_chip == opt_total  # replicated with the parameters
  else:
    # Split with the parameters; factored statistics of a dimension no axis splits
    # (the vocabulary's, under FSDP) stay whole, so not always by `shards`.
    assert opt_total / shards <= opt_per_chip < opt_total
  # XLA's plan holds those bytes as arguments, plus the batch, step and key, and the
  # padding of the TPU's tiled layouts: the tiny model's 64-wide dimensions, split
  # four ways under FSDP, fill 16 of a tile's 128 lanes (17% over on its shards).
  batch_bytes = 4 * 8 * (32 + 3 * 16) // partitioner.data_size
  held = (report['params_gib'] + report['opt_state_gib']) * aot.GIB + batch_bytes
  assert held <= report['argument_gib'] * aot.GIB <= 1.25 * held
  assert report['fits'] and report['hbm_gib'] == 16
  assert report['flops_per_chip'] > 0 and report['compile_s'] > 0


# 'data', the default layout, is compiled by the CLI test below (under a run file).
@pytest.mark.slow(seconds=14)
@pytest.mark.parametrize('layout', [layout for layout in LAYOUTS if layout != 'data'])
def test_train_step_compiles_for_v5e_2x2_per_chip_bytes(layout):
  where = aot.target('v5e:2x2')
  assert [d.platform for d in where.devices] == ['tpu'] * 4
  run = aot.load_run([TINY], ONE_LAYER, where.devices, layout=layout,
                     num_partitions=NUM_PARTITIONS[layout])
  trainer = aot.build_trainer(run)
  compiled = []
  compile_train_step = trainer.compile_train_step

  def compile_and_keep(*args):  # compile_trainer reports on the program; the test reads it
    compiled.append(compile_train_step(*args))
    return compiled[-1]
  trainer.compile_train_step = compile_and_keep
  result = aot.compile_trainer(trainer, run, chip=where.chip, topology=where.name)
  # The dropout masks come from the TPU profile's hardware generator, as on a TPU,
  # not from the threefry this CPU process defaults to.
  program = compiled[0].as_text()
  assert result.prng_impl == 'unsafe_rbg'
  assert 'rng-bit-generator' in program and 'threefry' not in program
  _check_per_chip_bytes(result.as_dict(), run, trainer)
  if layout == 'tensor':
    # Projections fused into one matmul stack their kernels inside the split axis
    # (heads, mlp), so splitting the model adds no collective (stacked outside it, the
    # one-layer step gathered 56 more times).
    gin.clear_config()
    fused = aot.load_run([TINY], ONE_LAYER + [f'config.TransformerConfig.{name}=True' for name
                                               in ('fused_qkv', 'fused_mlp')],
                         where.devices, layout=layout, num_partitions=NUM_PARTITIONS[layout])
    assert fused.model.module.config.fused_qkv and fused.model.module.config.fused_mlp
    fused_result = aot.compile_trainer(aot.build_trainer(fused), fused, chip=where.chip,
                                       topology=where.name)
    assert fused_result.collectives == result.collectives


@pytest.mark.slow
def test_cli_json_last_line_reports_a_fitting_chip_and_its_prediction(tmp_path):
  # A researcher's run file on the shipped runs/finetune.gin (its optimizer, dropout and
  # required MODEL_DIR and task left unset) gives TRAIN_STEPS=300. (TRAIN_STEPS on the
  # command line takes load_run's same path: test_runtime_compile_prediction.py.)
  run_file = tmp_path / 'my_finetune.gin'
  run_file.write_text("include 'runs/finetune.gin'\nTRAIN_STEPS = 300\n")
  files = [TINY, str(run_file)]
  report, text = _cli_run([f'--gin_file={f}' for f in files] + ['--topology=v5e:2x2']
                          + ['--gin.' + b for b in ONE_LAYER])
  assert report['fits'] is True and report['prng_impl'] == 'unsafe_rbg'
  assert report['hbm_gib'] == 16 and report['chips'] == 4 and report['layout'] == 'data'
  assert 0 < report['per_chip_gib'] < report['hbm_gib']
  # The per-chip bytes of the 'data' layout, against the state's totals (shapes only).
  run = aot.load_run(files, ONE_LAYER, aot.target('v5e:2x2').devices, layout='data')
  _check_per_chip_bytes(report, run, aot.build_trainer(run))
  # The model's 'auto' attention and remat took the TPU profile's, not this CPU's.
  assert (report['model_options']['attention'], report['model_options']['remat_policy']) == (
      'flash', 'full')
  # The prediction: the FLOP, HBM and collective terms at the chip's figures one after
  # another (the roofline, the longest alone, beside it), the MFU it allows, and the
  # hours for TRAIN_STEPS.
  chip = topology.CHIPS['v5e']
  terms = (report['predicted_flops_per_chip'] / chip.peak_bf16_flops,
           report['predicted_hbm_bytes_per_chip'] / chip.effective_hbm_bytes_per_s,
           report['collective_bytes'] / chip.interconnect_bytes_per_s)
  step_s = sum(terms)
  assert report['predicted_step_s'] == pytest.approx(step_s)
  assert report['predicted_floor_s'] == pytest.approx(max(terms))
  assert report['train_steps'] == 300
  assert report['predicted_hours'] == pytest.approx(300 * step_s / 3600)
  assert report['predicted_mfu'] == pytest.approx(
      report['model_flops_per_chip'] / chip.peak_bf16_flops / step_s)
  # The human-readable table came first.
  assert 'fits' in text and 'predicted step' in text and 'predicted MFU' in text
  assert 'roofline' in text
  assert 'for TRAIN_STEPS=300' in text


def _cli_run(argv) -> tuple[dict, str]:
  """`python -m crosstask.compile ... --json` as its CLI runs: the last line's report and
  the text printed before it."""
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    code = compile_cli.main(argv + ['--json'])
  assert code == 0, out.getvalue()[-2000:]
  lines = out.getvalue().strip().splitlines()
  return json.loads(lines[-1]), '\n'.join(lines[:-1])


def _cli_json(argv) -> dict:
  return _cli_run(argv)[0]


def _per_chip_param_bytes_under_fsdp(bindings, chips: int) -> tuple[int, int]:
  """(bytes per chip, number of parameters) from the parameter shapes alone: the fsdp
  layout splits every parameter's 'embed' dimension over all chips and keeps the rest
  (the relative-position table) whole."""
  from crosstask.models.network import Transformer  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import model_gin  # pylint: disable=g-import-not-at-top
  cfg = model_gin.config_from_gin(TINY, bindings)
  tokens = jax.ShapeDtypeStruct((1, 8), np.int32)
  boxed = jax.eval_shape(lambda e, d: Transformer(cfg).init(jax.random.key(0), e, d),
                         tokens, tokens)['params']
  leaves = jax.tree.leaves(boxed, is_leaf=lambda x: hasattr(x, 'names'))
  total = 0
  for leaf in leaves:
    nbytes = math.prod(leaf.value.shape) * np.dtype(leaf.value.dtype).itemsize
    total += nbytes // chips if 'embed' in leaf.names else nbytes
  return total, len(leaves)


HEADLINE = SMALL_BATCH + ['config.TransformerConfig.scan_layers=True']


def _per_chip_adafactor_bytes_under_fsdp(bindings, chips: int) -> int:
  """Adafactor's state per chip from the parameter shapes alone: a factored parameter's
  row statistic keeps 'embed' (split over the chips), its column statistic loses it
  (whole); an unfactored one keeps a statistic the parameter's size, split as it is;
  each unused slot and the step count are 4-byte scalars."""
  from crosstask.models.network import Transformer  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import model_gin  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.state import adafactor  # pylint: disable=g-import-not-at-top
  cfg = model_gin.config_from_gin(TINY, bindings)
  tokens = jax.ShapeDtypeStruct((1, 8), np.int32)
  boxed = jax.eval_shape(lambda e, d: Transformer(cfg).init(jax.random.key(0), e, d),
                         tokens, tokens)['params']
  total = 4
  for leaf in jax.tree.leaves(boxed, is_leaf=lambda x: hasattr(x, 'names')):
    shape, names = leaf.value.shape, tuple(leaf.names)
    plan = adafactor.factoring(shape, names)
    everything = range(len(shape))
    split = lambda kept: math.prod(shape[d] for d in kept) * 4 // (
        chips if any(names[d] == 'embed' for d in kept) else 1)
    if plan.factored:
      total += split([d for d in everything if d not in plan.cols])
      total += split([d for d in everything if d not in plan.rows]) + 2 * 4
    else:
      total += split(everything) + 3 * 4
  return total


@pytest.mark.slow
def test_headline_tpu_step_as_the_cli_builds_it_compiles_for_v5e_2x2():
  """Flash attention inside the layer scan, full remat, in the Trainer, under fsdp's batch
  axes: the configuration behind scale.json, resolved by the TPU profile from 'auto'."""
  report = _cli_json(['--gin_file=' + TINY, '--topology=v5e:2x2', '--layout=fsdp']
                     + ['--gin.' + b for b in HEADLINE])
  assert (report['chips'], report['layout'], report['step']) == (4, 'fsdp', 'train')
  assert report['model_options'] == {'attention': 'flash', 'remat_policy': 'full',
                                     'scan_layers': True}
  params, num_params = _per_chip_param_bytes_under_fsdp(HEADLINE, 4)
  assert report['params_gib'] * aot.GIB == params
  # Adafactor's statistics, as T5X factors them: every scanned parameter by its names at
  # any size (tiny's 64-wide 'embed' is under min_dim_size_to_factor, which T5X applies to
  # matrices only), the rest whole.
  opt = report['opt_state_gib'] * aot.GIB
  assert opt == _per_chip_adafactor_bytes_under_fsdp(HEADLINE, 4) < params
  assert report['fits'] and report['hbm_gib'] == 16
  assert report['argument_gib'] * aot.GIB >= params + opt
  assert report['flops_per_chip'] > 0 and report['collective_bytes'] > 0  # fsdp gathers


def test_local_topology_compiles_for_this_machines_devices():
  """--topology=local: this machine's devices (8 virtual CPUs here) and its profile."""
  report = _cli_json(['--gin_file=' + TINY, '--topology=local']
                     + ['--gin.' + b for b in SMALL_BATCH])
  assert report['chips'] == len(jax.devices()) == 8
  assert report['topology'].startswith(f'local ({len(jax.devices())} x ')
  # The CPU profile resolves 'auto' (the TPU profile would give flash and full remat).
  assert (report['model_options']['attention'], report['model_options']['remat_policy']) == (
      'xla', 'none')
  assert report['predicted_step_s'] is None  # no chip figures for local devices
  assert report['argument_gib'] > 0 and report['flops_per_chip'] > 0


def _cli_error(argv, capsys) -> str:
  assert compile_cli.main(argv) == 2
  return capsys.readouterr().err


def test_unknown_topology_lists_valid_names(capsys):
  err = _cli_error(['--gin_file=' + TINY, '--topology=v9x:2x2'], capsys)
  assert "Unknown topology 'v9x:2x2'" in err and 'v5e:2x4' in err and 'v5p-8' in err
  # A GPU's name, as the README's calibrated H100/H200 invite, is told how a GPU is planned.
  err = _cli_error(['--gin_file=' + TINY, '--topology=h100'], capsys)
  assert "--topology='h100' is a GPU (H100)" in err and '--topology=local on that machine' in err


def test_an_unknown_layout_is_named_without_gins_call_note(capsys):
  err = _cli_error(['--gin_file=' + TINY, '--topology=v5e:2x2', '--layout=fsdp+tensr'], capsys)
  assert err == ("ERROR: Partitioner.layout='fsdp+tensr' (gin LAYOUT): expected one of "
                 "('data', 'fsdp', 'tensor', 'fsdp+tensor').\n"), err


def test_batch_the_data_axis_does_not_divide_is_refused(capsys):
  err = _cli_error(['--gin_file=' + TINY, '--topology=v5e:2x2', '--gin.BATCH_SIZE=6'], capsys)
  assert 'BATCH_SIZE=6' in err and '4-way data axes' in err


def test_missing_libtpu_says_how_to_install(monkeypatch, capsys):
  monkeypatch.setitem(sys.modules, 'libtpu', None)  # what `import libtpu` meets without it
  err = _cli_error(['--gin_file=' + TINY, '--topology=v5e:2x2'], capsys)
  assert 'libtpu' in err and "pip install 'crosstask[tpu]'" in err


def test_topology_names():
  assert topology.parse('v5e-8').grid == (2, 4)
  assert topology.parse('v4-16').num_chips == 8  # v4 counts TensorCores, two per chip
  two = topology.parse('2xv5e:2x4')
  assert (two.num_slices, two.num_chips) == (2, 16)
  with pytest.raises(topology.TopologyError, match='3-D grid'):
    topology.parse('v4:2x2x2x2')


_CACHE_ENTRIES = textwrap.dedent("""
    import pathlib, sys
    import jax, jax.numpy as jnp
    from crosstask.runtime.jobs import aot
    where = aot.target('v5e:2x2')
    one = jax.sharding.SingleDeviceSharding(where.devices[0])
    x = jax.ShapeDtypeStruct((128, 128), jnp.float32, sharding=one)
    def entries_after_compiling(scale):
      jax.jit(lambda a: jnp.tanh(a @ a) * scale, in_shardings=one).lower(x).compile()
      return len(list(pathlib.Path(sys.argv[1]).iterdir()))
    plain = entries_after_compiling(2.0)
    with aot._no_persistent_cache_entries(where.devices):
      print(plain, entries_after_compiling(3.0))
""")


def test_compiles_for_a_slice_write_no_persistent_cache_entry(tmp_path):
  # No client loads a compile-only executable back: a cached one only warned on the
  # next compile of the program. A fresh process, so the cache is this test's folder.
  env = dict(rs.env(), JAX_COMPILATION_CACHE_DIR=str(tmp_path),
             JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS='0')
  done = subprocess.run([sys.executable, '-c', _CACHE_ENTRIES, str(tmp_path)], env=env,
                        cwd=rs.REPO, capture_output=True, text=True, timeout=120)
  assert done.returncode == 0, done.stderr[-2000:]
  plain, compile_only = map(int, done.stdout.split())
  assert plain >= 1  # JAX's own path writes one for the same kind of compile
  assert compile_only == plain  # the context added none
