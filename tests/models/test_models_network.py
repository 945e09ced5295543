"""The flax T5 network: packing, kv-cache decoding, partitioning, dropout, validation."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding

import numpy_params
from crosstask.models import layers
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer

CFG = TransformerConfig(vocab_size=64, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=2, num_decoder_layers=2, activations=("gelu", "linear"),
                        logits_via_embedding=False, dropout_rate=0.1, dtype="float32",
                        relative_attention_num_buckets=8, relative_attention_max_distance=16)


def _init(cfg=CFG, enc_len=8, dec_len=8):
  model = Transformer(cfg)
  variables = numpy_params.random_variables(model, np.ones((2, enc_len), np.int32),
                                            np.ones((2, dec_len), np.int32))
  return model, variables


@jax.jit
def _token_loss(logits, targets):
  logp = jax.nn.log_softmax(logits, -1)
  return -jnp.take_along_axis(logp, targets[..., None], -1)[..., 0]


def test_packed_equals_unpacked_per_token_loss():
  model, variables = _init()
  rng = np.random.default_rng(0)
  ea, eb = rng.integers(2, 64, 5), rng.integers(2, 64, 3)
  ta, tb = rng.integers(2, 64, 4), rng.integers(2, 64, 3)

  def pad(x, n):
    return np.pad(x, (0, n - len(x)))

  unpacked = dict(
      encoder_input_tokens=np.stack([pad(ea, 8), pad(eb, 8)]),
      decoder_target_tokens=np.stack([pad(ta, 8), pad(tb, 8)]),
      decoder_input_tokens=np.stack([pad(np.r_[0, ta[:-1]], 8), pad(np.r_[0, tb[:-1]], 8)]))
  # As seqio.EncDecFeatureConverter(pack=True) lays them out.
  packed = dict(
      encoder_input_tokens=np.r_[ea, eb][None],
      encoder_segment_ids=np.array([[1] * 5 + [2] * 3]),
      encoder_positions=np.array([list(range(5)) + list(range(3))]),
      decoder_target_tokens=pad(np.r_[ta, tb], 8)[None],
      decoder_input_tokens=pad(np.r_[0, ta[:-1], 0, tb[:-1]], 8)[None],
      decoder_segment_ids=np.array([[1] * 4 + [2] * 3 + [0]]),
      decoder_positions=np.array([list(range(4)) + list(range(3)) + [0]]))
  apply = jax.jit(model.apply)
  lu = apply(variables, unpacked["encoder_input_tokens"], unpacked["decoder_input_tokens"],
             unpacked["decoder_target_tokens"])
  lp = apply(variables, packed["encoder_input_tokens"], packed["decoder_input_tokens"],
             packed["decoder_target_tokens"], packed["encoder_segment_ids"],
             packed["decoder_segment_ids"], packed["encoder_positions"],
             packed["decoder_positions"])
  loss_u = _token_loss(lu, unpacked["decoder_target_tokens"])
  loss_p = _token_loss(lp, packed["decoder_target_tokens"])[0]
  np.testing.assert_allclose(loss_p[:4], loss_u[0, :4], atol=1e-5)
  np.testing.assert_allclose(loss_p[4:7], loss_u[1, :3], atol=1e-5)


@pytest.mark.parametrize("tied", [True, False])
def test_cached_decoding_equals_full_forward(tied):
  cfg = TransformerConfig(**{**CFG.__dict__, "logits_via_embedding": tied,
                             "activations": ("relu",) if tied else ("gelu", "linear")})
  model, variables = _init(cfg)
  rng = np.random.default_rng(1)
  enc = rng.integers(2, 64, (2, 6)).astype(np.int32)  # 6 encoder tokens, 8 decoder
  enc[1, 4:] = 0
  dec = rng.integers(2, 64, (2, 8)).astype(np.int32)
  dec[:, 0] = 0
  # Under jit: eagerly each step's operations compiled one by one.
  apply = jax.jit(model.apply, static_argnames=("method", "decode", "max_decode_length",
                                                "mutable"))
  full = apply(variables, enc, dec)
  encoded = apply(variables, enc, method="encode")
  # A single dummy token sizes the cache (max_decode_length) and stores encoder keys/values.
  _, cache = apply(variables, encoded, enc, dec[:, :1], decode=True, max_decode_length=8,
                   method="decode", mutable=("cache",))
  cache = cache["cache"]
  # Heads-first [batch, heads, length, d_kv], as the attention products read them; the
  # encoder keys keys-last [batch, heads, d_kv, length].
  assert cache["decoder"]["layers_0"]["self_attention"]["cached_key"].shape == (2, 4, 8, 8)
  cross = cache["decoder"]["layers_0"]["encoder_decoder_attention"]
  assert cross["cross_key"].shape == (2, 4, 8, 6) and cross["cross_value"].shape == (2, 4, 6, 8)
  steps = []
  for i in range(dec.shape[1]):
    logits, mutated = apply({**variables, "cache": cache}, encoded, enc, dec[:, i:i + 1],
                            decode=True, max_decode_length=8, method="decode",
                            mutable=("cache",))
    cache = mutated["cache"]
    steps.append(logits[:, 0])
  np.testing.assert_allclose(np.stack(steps, 1), full, atol=1e-5)


def test_every_param_has_logical_axes_and_shards():
  model, variables = _init()
  specs = nn.get_partition_spec(variables)["params"]
  leaves = jax.tree_util.tree_leaves(variables["params"], is_leaf=lambda x: isinstance(x, nn.Partitioned))
  assert all(isinstance(x, nn.Partitioned) and len(x.names) == x.value.ndim for x in leaves)
  assert tuple(specs["token_embedder"]["embedding"]) == ("vocab", "embed")
  assert tuple(specs["encoder"]["relpos_bias"]["rel_embedding"]) == ("heads", "relpos_buckets")
  assert tuple(specs["decoder"]["layers_0"]["mlp"]["wi_0"]) == ("embed", "mlp")
  # Shard through logical rules on the 8 virtual devices: data x model = 2 x 4.
  rules = (("batch", "data"), ("vocab", "model"), ("mlp", "model"), ("heads", "model"),
           ("embed", None), ("kv", None), ("length", None), ("relpos_buckets", None))
  mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
  mesh_specs = nn.logical_to_mesh(specs, rules)
  shardings = jax.tree_util.tree_map(lambda s: NamedSharding(mesh, s), mesh_specs)
  params = jax.device_put(nn.meta.unbox(variables["params"]), shardings)
  assert params["decoder"]["logits_dense"].sharding.spec == jax.sharding.PartitionSpec(None, "model")
  enc = jnp.ones((4, 8), jnp.int32)

  @jax.jit
  def run(p, e):
    with nn.logical_axis_rules(rules):
      return model.apply({"params": p}, e, e)
  with mesh:
    sharded = run(params, enc)
  np.testing.assert_allclose(sharded, jax.jit(model.apply)(variables, enc, enc), atol=1e-5)


def test_dropout_only_when_enabled_and_bfloat16_runs():
  model, variables = _init()
  enc = jnp.arange(2, 18, dtype=jnp.int32).reshape(2, 8)
  a = model.apply(variables, enc, enc)
  b = model.apply(variables, enc, enc)
  c = model.apply(variables, enc, enc, enable_dropout=True, rngs={"dropout": jax.random.PRNGKey(1)})
  np.testing.assert_array_equal(a, b)
  assert float(jnp.abs(a - c).max()) > 1e-3
  bf = Transformer(TransformerConfig(**{**CFG.__dict__, "dtype": "bfloat16"}))
  out = bf.apply(variables, enc, enc)
  assert out.dtype == jnp.float32
  assert float(jnp.abs(out - a).max()) < 0.5 * float(jnp.abs(a).max())


@pytest.mark.parametrize("tied", [False, True])
def test_bfloat16_logits_are_float32_products_with_bfloat16_gradients(tied):
  # As T5X computes them: the product of bfloat16 operands, not rounded to bfloat16 after.
  cfg = TransformerConfig(**{**CFG.__dict__, "dtype": "bfloat16", "dropout_rate": 0.0,
                             "logits_via_embedding": tied})
  model, variables = _init(cfg)
  enc = jnp.arange(2, 18, dtype=jnp.int32).reshape(2, 8)
  def hidden(params):  # the decoder's output before the logits, as the network computes it
    state = {}

    def keep(next_fun, args, kwargs, context):
      out = next_fun(*args, **kwargs)
      if context.module.name == "decoder_norm":
        state["x"] = out
      return out
    with nn.intercept_methods(keep):
      model.apply({"params": params}, enc, enc)
    return state["x"]

  params = nn.unbox(variables["params"])
  logits = model.apply({"params": params}, enc, enc)
  x = hidden(params)
  if tied:
    x, kernel = x * cfg.d_model ** -0.5, params["token_embedder"]["embedding"].T
  else:
    kernel = params["decoder"]["logits_dense"]
  exact = (x.astype(jnp.bfloat16).astype(jnp.float32)
           @ kernel.astype(jnp.bfloat16).astype(jnp.float32))
  assert logits.dtype == jnp.float32
  np.testing.assert_allclose(logits, exact, rtol=0, atol=1e-5)
  assert float(jnp.abs(logits.astype(jnp.bfloat16).astype(jnp.float32) - exact).max()) > 1e-4
  grads = jax.grad(lambda p: model.apply({"params": p}, enc, enc).sum())(params)
  assert all(np.isfinite(g).all() for g in jax.tree.leaves(grads))


@pytest.mark.parametrize("shared", [True, False])
def test_dropout_masks_are_shared_along_the_sequence_as_t5x_draws_them(shared):
  # T5X's network draws one mask per feature for all positions (embeddings, residual
  # branches, the MLP's hidden layer, the decoder's output) and one for all queries over
  # attention probabilities; only the encoder's output is masked per element.
  cfg = TransformerConfig(**{**CFG.__dict__, "dropout_rate": 0.5,
                             "dropout_shared_along_length": shared})
  model, variables = _init(cfg)
  enc = jnp.arange(2, 18, dtype=jnp.int32).reshape(2, 8)
  sites = []

  def record(next_fun, args, kwargs, context):
    out = next_fun(*args, **kwargs)
    if isinstance(context.module, nn.Dropout) and context.method_name == "__call__":
      kept, valid = np.asarray(out != 0), np.asarray(args[0] != 0)  # causal zeros: either
      along = not np.any((kept & valid).any(-2) & (~kept & valid).any(-2))
      sites.append(("/".join(context.module.scope.path), args[0].ndim, bool(along)))
    return out

  with nn.intercept_methods(record):
    model.apply(variables, enc, enc, enc, enable_dropout=True,
                rngs={"dropout": jax.random.PRNGKey(3)})
  assert len(sites) == 4 + 2 * 4 + 2 * 6  # embeddings and outputs; 4 a layer, 6 a decoder one
  per_element = [path for path, _, along in sites if not along]
  if shared:
    assert len(per_element) == 1 and per_element[0].startswith("encoder")
    assert {ndim for path, ndim, _ in sites if "attention" in path} >= {4}  # probabilities
  else:
    assert len(per_element) == len(sites)


def test_relative_buckets_match_transformers():
  torch = pytest.importorskip("torch")
  from transformers.models.t5.modeling_t5 import T5Attention
  rel = np.arange(-300, 301)
  for bidirectional in (True, False):
    for buckets, distance in ((32, 128), (8, 16)):
      want = T5Attention._relative_position_bucket(
          torch.tensor(rel), bidirectional=bidirectional, num_buckets=buckets,
          max_distance=distance).numpy()
      got = layers.relative_position_bucket(jnp.asarray(rel, jnp.int32), bidirectional=bidirectional,
                                            num_buckets=buckets, max_distance=distance)
      np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("field,value", [("d_model", 0), ("activations", ("swish",)),
                                         ("dtype", "float64"), ("dropout_rate", 1.0),
                                         ("num_heads", 2.5)])
def test_config_errors_name_the_field(field, value):
  with pytest.raises(ValueError, match=field):
    TransformerConfig(**{field: value})


def test_attention_output_projection_reads_the_stored_weight_in_place():
  # Contracting (heads, d_kv) as two axes let XLA:CPU reorder them and copy every
  # `out` weight into [d_kv, heads, d_model] on each call (each decoding step).
  model, variables = _init()
  enc = jnp.full((2, 8), 3, jnp.int32)
  hlo = jax.jit(lambda v: model.apply(v, enc, enc)).lower(variables).compile().as_text()
  h, d, dm = CFG.num_heads, CFG.d_kv, CFG.d_model
  assert f"f32[{h},{d},{dm}]" in hlo  # the stored weights are there...
  assert f"f32[{d},{h},{dm}]" not in hlo  # ...and never copied into the swapped order


def test_weight_gradients_read_activations_in_place():
  # With batch and length as two contracted axes, XLA:CPU wrote the gated MLP's
  # backward activations transposed ([d_ff, tokens]) inside the elementwise fusion,
  # and the residual stream as [d_model, tokens]: strided writes that cost ~0.6 s of
  # the T5 small step. `layers.dense` contracts one token axis, which XLA takes as is.
  cfg = TransformerConfig(**{**CFG.__dict__, "d_ff": 80, "dropout_rate": 0.0})
  model, variables = _init(cfg, enc_len=24, dec_len=24)
  tokens = jnp.full((2, 24), 3, jnp.int32)

  def loss(params):
    logits = model.apply({"params": params}, tokens, tokens)
    return jnp.mean(_token_loss(logits, tokens))

  hlo = jax.jit(jax.grad(loss)).lower(variables["params"]).compile().as_text()
  tokens_total = 2 * 24
  assert f"f32[{cfg.d_ff},{tokens_total}]" not in hlo
  assert f"f32[{cfg.d_model},{tokens_total}]" not in hlo
  assert f"f32[{tokens_total},{cfg.d_ff}]" in hlo  # the shapes are what the check reads
