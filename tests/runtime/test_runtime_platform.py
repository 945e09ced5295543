"""The platform profile: chosen from the backend or gin, applied by the entry points,
its XLA options reaching the train step and both decoding programs without changing
a result, and a wrong setting named by its gin binding."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import types

import flax.linen as nn
import gin
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

import runtime_subprocess as rs
from crosstask.models import decoding
from crosstask.models import model as model_lib
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer
from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import host_memory
from crosstask.runtime.config import platform
from crosstask.runtime.predict import inference
from crosstask.runtime.sharding import partitioning

CFG = TransformerConfig(vocab_size=300, d_model=64, d_ff=128, num_heads=4, d_kv=16,
                        num_encoder_layers=2, num_decoder_layers=2, dropout_rate=0.0,
                        dtype="float32")
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=300)


@pytest.fixture(autouse=True)
def _clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def test_the_profile_follows_the_backend_and_gin_names_one():
  assert platform.profile(backend="cpu").name == "cpu"
  assert platform.profile(backend="cuda").name == "gpu"
  assert platform.profile(backend="gpu").name == "gpu"
  assert platform.profile(backend="tpu").name == "tpu"
  assert platform.profile().name == jax.default_backend()  # the tests run on CPU devices
  mesh = partitioning.Partitioner().mesh
  assert platform.for_mesh(mesh) == platform.PROFILES["cpu"]
  gin.parse_config(["platform.profile.name = 'tpu'",
                    "platform.profile.compilation_cache_dir = '/tmp/cache'"])
  chosen = platform.for_mesh(mesh)
  assert chosen.name == "tpu" and chosen.compilation_cache_dir == "/tmp/cache"
  assert chosen.prng_impl != "threefry2x32" and chosen.attention == "flash"


def test_cpu_keeps_threefry_xla_attention_and_no_remat_accelerators_differ():
  cpu, gpu, tpu = (platform.PROFILES[n] for n in ("cpu", "gpu", "tpu"))
  assert (cpu.prng_impl, cpu.attention, cpu.remat) == ("threefry2x32", "xla", "none")
  assert cpu.tune_host_malloc and not gpu.tune_host_malloc and not tpu.tune_host_malloc
  assert gpu.attention == "cudnn" and tpu.attention == "flash"
  for p in (gpu, tpu):
    assert p.prng_impl in ("rbg", "unsafe_rbg") and p.remat != "none"
  for p in (cpu, gpu, tpu):  # a real PRNG implementation JAX knows
    jax.random.key(0, impl=p.prng_impl)


def test_a_bad_profile_name_names_the_binding():
  with pytest.raises(ValueError, match=r"platform\.profile\.name='gpux'.*'cpu', 'gpu', 'tpu'"):
    platform.profile(name="gpux")
  with pytest.raises(ValueError, match=r"backend 'metal'.*platform\.profile\.name"):
    platform.profile(backend="metal")
  with pytest.raises(ValueError, match="program='decoder'"):
    platform.PROFILES["cpu"].decoding_compiler_options("decoder")


def test_an_entry_point_refuses_a_bad_profile_name_by_its_binding(monkeypatch, capsys):
  monkeypatch.setenv(host_memory.ENV, "system")  # pytest's own process stays untuned
  with pytest.raises(SystemExit) as exit_info:
    gin_utils.run_main(lambda: None, ["--gin_search_paths=/tmp",
                                      "--gin.platform.profile.name='gpux'"],
                       what="test", job="infer")
  assert exit_info.value.code == 2
  assert "platform.profile.name='gpux'" in capsys.readouterr().err


_ENV_BACKEND = textwrap.dedent("""
    import json
    from crosstask.runtime.config import platform
    print(json.dumps({'backend': platform.backend_from_environment(),
                      'malloc': platform.prepare_host('infer')}))
""")


def _in_environment(extra_path: str | None = None, **env_vars: str) -> dict:
  env = {k: v for k, v in rs.env().items()
         if k not in ("JAX_PLATFORMS", "GLIBC_TUNABLES", host_memory.ENV)}
  if extra_path:
    env["PYTHONPATH"] = os.pathsep.join([extra_path, env["PYTHONPATH"]])
  env.update(env_vars)
  out = subprocess.run([sys.executable, "-c", _ENV_BACKEND], cwd=rs.REPO, env=env,
                       capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(platform._has_tpu_chips(), reason="this machine has TPU chips")
def test_libtpu_installed_on_a_cpu_machine_keeps_the_cpu_profile(tmp_path):
  # A `libtpu` package importable, as `pip install crosstask[tpu]` makes it, and no chip.
  (tmp_path / "libtpu").mkdir()
  (tmp_path / "libtpu" / "__init__.py").write_text("")
  seen = _in_environment(str(tmp_path))
  assert seen["backend"] == "cpu"
  assert seen["malloc"] == "no mmap for large blocks, no trimming"  # tuned as on any CPU
  # JAX_PLATFORMS decides where set: the allocator is left alone for an accelerator.
  assert _in_environment(JAX_PLATFORMS="cuda,cpu") == {
      "backend": "gpu", "malloc": "glibc defaults (JAX will use gpu)"}
  assert _in_environment(str(tmp_path), JAX_PLATFORMS="tpu")["backend"] == "tpu"


_APPLIED = textwrap.dedent("""
    import gc, json, sys
    from crosstask.runtime.config import gin_utils

    def job():
      import jax
      print(json.dumps({'prng': str(jax.random.key_impl(jax.random.key(0))),
                        'cache': jax.config.values['jax_compilation_cache_dir'],
                        'gc': gc.get_threshold()}))

    gin_utils.run_main(job, ['--gin_search_paths=/tmp'] + sys.argv[1:], job='train')
""")


def test_the_entry_point_applies_the_profiles_prng_compilation_cache_and_gc(tmp_path):
  env = {k: v for k, v in rs.env().items() if k != "JAX_COMPILATION_CACHE_DIR"}
  env[host_memory.ENV] = "system"

  def run(*flags: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _APPLIED, *flags], cwd=rs.REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])

  # The collector's thresholds too, on any platform: Python's defaults are (700, 10, 10).
  gc = list(platform.GC_THRESHOLDS)
  assert run() == {"prng": "threefry2x32", "cache": None, "gc": gc}
  named = run("--gin.platform.profile.name='tpu'",
              f"--gin.platform.profile.compilation_cache_dir='{tmp_path}'")
  assert named == {"prng": "unsafe_rbg", "cache": str(tmp_path), "gc": gc}


# ------------------------------------------------------------------ the model's config


@dataclasses.dataclass(frozen=True)
class _Config:
  attention: str = "auto"
  remat_policy: str = "auto"
  width: int = 4


class _Net(nn.Module):
  config: _Config

  @nn.compact
  def __call__(self, x):
    return nn.Dense(self.config.width)(x)


def test_resolve_model_fills_in_auto_fields_on_a_copy():
  model = model_lib.EncoderDecoderModel(_Net(_Config()), VOCAB, VOCAB)
  for name, attention, remat in (("cpu", "xla", "none"), ("tpu", "flash", "full")):
    resolved = platform.resolve_model(model, platform.PROFILES[name])
    assert (resolved.module.config.attention, resolved.module.config.remat_policy) == (
        attention, remat)
    assert resolved.module.config.width == 4 and resolved.decode_fn is model.decode_fn
  assert model.module.config == _Config()  # the caller's model is unchanged
  chosen = model_lib.EncoderDecoderModel(_Net(_Config(attention="xla", remat_policy="none")),
                                         VOCAB, VOCAB)
  assert platform.resolve_model(chosen, platform.PROFILES["tpu"]) is chosen
  # The real network: its 'auto' fields take the profile's choices; cuDNN's kernel only
  # for a half-precision model (float32 gets the same call through XLA).
  for dtype, gpu_attention in (("bfloat16", "cudnn"), ("float32", "dot_product")):
    config = dataclasses.replace(CFG, dtype=dtype, attention="auto", remat_policy="auto",
                                 scan_unroll="auto")
    real = model_lib.EncoderDecoderModel(Transformer(config), VOCAB, VOCAB)
    for name, attention, remat, unroll in (("cpu", "xla", "none", 1),
                                           ("gpu", gpu_attention, "dots_attention", 2),
                                           ("tpu", "flash", "full", 1)):
      resolved = platform.resolve_model(real, platform.PROFILES[name]).module.config
      assert (resolved.attention, resolved.remat_policy, resolved.scan_unroll) == (
          attention, remat, unroll), (dtype, name)
  fixed = model_lib.EncoderDecoderModel(
      Transformer(dataclasses.replace(CFG, attention="xla", remat_policy="none", scan_unroll=1)),
      VOCAB, VOCAB)
  assert platform.resolve_model(fixed, platform.PROFILES["tpu"]) is fixed
  # The Pallas decoding kernel is compiled on a GPU and interpreted anywhere else.
  kernel = model_lib.EncoderDecoderModel(Transformer(dataclasses.replace(
      CFG, attention="xla", remat_policy="none", scan_unroll=1,
      decode_cross_attention="pallas")), VOCAB, VOCAB)
  assert platform.resolve_model(kernel, platform.PROFILES["gpu"]) is kernel
  for name in ("cpu", "tpu"):
    resolved = platform.resolve_model(kernel, platform.PROFILES[name]).module.config
    assert resolved.decode_cross_attention == "pallas_interpret"


# ------------------------------------------------------------------ XLA options


def _model(beam: bool = False) -> model_lib.EncoderDecoderModel:
  kw = dict(decode_fn=decoding.beam_search, default_decoder_params={"alpha": 1.0}) if beam else {}
  return model_lib.EncoderDecoderModel(Transformer(CFG), VOCAB, VOCAB, **kw)


@pytest.fixture(scope="module")
def params():
  shapes = jax.eval_shape(lambda: _model().get_initial_variables(jax.random.key(0), {
      "encoder_input_tokens": (1, 24), "decoder_input_tokens": (1, 8)})["params"])
  rng = np.random.default_rng(0)  # Spread-out weights, so decodes differ from row to row.
  return jax.tree.map(lambda x: np.float32(0.3) * rng.standard_normal(x.shape, np.float32),
                      nn.unbox(shapes))


def _batch(b: int = 8) -> dict[str, np.ndarray]:
  rng = np.random.default_rng(0)
  return {"encoder_input_tokens": rng.integers(2, 300, (b, 24)).astype(np.int32),
          "decoder_input_tokens": np.zeros((b, 8), np.int32)}


def _dataset(batch):
  feats = {k: tf.constant(v) for k, v in batch.items()}
  return tf.data.Dataset.from_tensor_slices(feats).enumerate()


def _runner(model, params, profile=None, num_decodes=1, devices=None):
  partitioner = partitioning.Partitioner(devices=devices)
  shardings = jax.tree.map(lambda _: partitioner.replicated, params)
  return inference.Inference(model, partitioner, shardings, batch_size=8,
                             num_decodes=num_decodes, profile=profile)


# The fast set (`-m 'not slow'`) decodes greedily; the full suite with beam search too.
@pytest.mark.parametrize("beam", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["greedy", "beam4"])
def test_decoding_with_the_cpu_profile_or_xlas_defaults_gives_the_same_outputs(params, beam):
  model, batch = _model(beam), _batch()
  num_decodes = 4 if beam else 1
  cpu = _runner(model, params, platform.PROFILES["cpu"], num_decodes, jax.devices()[:1])
  # XLA's defaults on all 8 devices, one example a device: the sharded loop decodes alike
  # (beam search's tables of where each beam's past lives reordered on each device's rows).
  xla = _runner(model, params, platform.profile("cpu", decode_compiler_options={}),
                num_decodes, jax.devices())
  assert cpu._predict_options == {"encoder": dict(platform.PROFILES["cpu"].encoder_compiler_options),
                                  "loop": dict(platform.PROFILES["cpu"].loop_compiler_options)}
  assert xla._predict_options == {"encoder": {}, "loop": {}}
  (a, aux_a), (b, aux_b) = (r.predict_with_aux(params, _dataset(batch)) for r in (cpu, xla))
  assert a == b
  np.testing.assert_allclose(aux_a["scores"], aux_b["scores"], rtol=1e-5, atol=1e-5)
  # And the model's own pure predict_batch, jitted by the caller, decodes the same.
  predict = jax.jit(model.predict_batch, static_argnames=("num_decodes",))
  tokens = np.asarray(predict(params, batch, num_decodes=num_decodes))
  assert [t for _, t in sorted(a)] == tokens.tolist()
  assert (tokens > 1).sum() > 8 * 4  # real decodes, not EOS at once


def _decoding_loop_hlo(runner, params) -> str:
  """The optimized HLO of the decoding loop as `runner` compiles it (its own jit and options)."""
  batch = {k: jnp.asarray(v) for k, v in _batch().items()}
  encoded = jax.eval_shape(runner._encode, params, batch)
  return runner._decode.lower(params, batch, *encoded, np.int32(0)).compile().as_text()


def test_the_cpu_decoding_option_keeps_xlas_tree_reduction_rewrite_out_of_the_loop(params):
  """What the option is for, seen in the program: without it XLA:CPU splits the loop's
  reductions into reduce-window + reduce (the tree rewrite); with it they stay whole.
  A renamed pass would leave the option silently inert and this test failing."""
  cpu = _runner(_model(), params, platform.PROFILES["cpu"], devices=jax.devices()[:1])
  xla = _runner(_model(), params, platform.profile("cpu", decode_compiler_options={}),
                devices=jax.devices()[:1])
  with_option, without = _decoding_loop_hlo(cpu, params), _decoding_loop_hlo(xla, params)
  assert "reduce-window(" in without
  assert "reduce-window(" not in with_option
  assert " reduce(" in with_option  # the reductions are still there, unsplit


def test_a_wrong_decoding_option_names_the_binding(params):
  bad = platform.profile("cpu", decode_compiler_options={"xla_cpu_no_such_flag": "1"})
  runner = _runner(_model(), params, bad, devices=jax.devices()[:1])
  with pytest.raises(ValueError, match=r"platform\.profile\.decode_compiler_options=.*"
                                       r"xla_cpu_no_such_flag"):
    runner.predict(params, _dataset(_batch()))


def test_decode_compiler_options_bind_from_gin():
  gin.parse_config(["platform.profile.decode_compiler_options = "
                    "{'xla_cpu_enable_fast_math': False}"])
  chosen = platform.profile()
  for program in platform.DECODING_PROGRAMS:
    assert chosen.decoding_compiler_options(program) == {"xla_cpu_enable_fast_math": False}
  assert chosen.train_compiler_options == platform.PROFILES["cpu"].train_compiler_options


@pytest.mark.skipif(len(jax.devices()) < 2, reason="needs a mesh of more than one device")
def test_inference_keeps_the_batch_split_over_the_data_axis_between_its_programs(params):
  runner = _runner(_model(), params)
  from crosstask.runtime.data import batching
  sharded = batching.to_device(_batch(), runner.partitioner.data_sharding)
  with runner.partitioner.context():
    encoded, cache = runner._encode(params, sharded)
    tokens, aux = runner._decode(params, sharded, encoded, cache, np.int32(0))
  data = runner.partitioner.data_sharding
  assert encoded.sharding.is_equivalent_to(data, encoded.ndim)
  assert tokens.sharding.is_equivalent_to(data, tokens.ndim)
  assert aux["scores"].sharding.is_equivalent_to(data, aux["scores"].ndim)


def test_libtpu_without_a_tpu_pins_jax_to_the_cpu(monkeypatch):
  import importlib.util  # pylint: disable=g-import-not-at-top
  if not importlib.util.find_spec('libtpu'):
    pytest.skip('the libtpu wheel (crosstask[tpu]) is not installed')
  monkeypatch.delenv('JAX_PLATFORMS', raising=False)
  monkeypatch.setattr(platform, '_has_tpu_chips', lambda: False)
  monkeypatch.setattr(jax.config, 'update', lambda *a: None)  # this process keeps its CPU
  monkeypatch.setenv('CROSSTASK_MALLOC', 'system')
  platform.prepare_host('infer')
  assert os.environ['JAX_PLATFORMS'] == 'cpu'
  monkeypatch.setenv('JAX_PLATFORMS', 'cuda')  # a choice already made is left alone
  platform.prepare_host('infer')
  assert os.environ['JAX_PLATFORMS'] == 'cuda'
