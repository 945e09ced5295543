"""numpy_params draws what the network's own init would: the same tree, shapes, dtypes,
logical axis names, and each weight at its initializer's scale (so the tests that use it
compute on weights like the real ones)."""

import dataclasses

import flax.linen as nn
import jax
import numpy as np
import pytest

import numpy_params
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer

CFG = TransformerConfig(vocab_size=512, d_model=64, d_ff=96, num_heads=4, d_kv=16,
                        num_encoder_layers=2, num_decoder_layers=2, activations=("gelu", "linear"),
                        logits_via_embedding=False, dtype="float32")


@pytest.mark.slow  # compiles the real init (the cost numpy_params spares the other tests)
@pytest.mark.parametrize("scan_layers", [False, True])
def test_the_draw_has_the_inits_tree_names_and_scales(scan_layers):
  model = Transformer(dataclasses.replace(CFG, scan_layers=scan_layers))
  tokens = np.ones((2, 8), np.int32)
  drawn = numpy_params.random_variables(model, tokens, tokens)
  real = jax.jit(model.init)(jax.random.key(0), tokens, tokens)
  assert jax.tree.structure(drawn) == jax.tree.structure(real)
  names = lambda tree: jax.tree.map(lambda b: b.names, tree["params"],
                                    is_leaf=lambda x: isinstance(x, nn.Partitioned))
  assert names(drawn) == names(real)
  flat_real = dict(jax.tree_util.tree_flatten_with_path(nn.meta.unbox(real))[0])
  for path, leaf in jax.tree_util.tree_flatten_with_path(nn.meta.unbox(drawn))[0]:
    want = flat_real[path]
    assert (leaf.shape, leaf.dtype) == (want.shape, want.dtype), path
    if path[-1].key == "scale":
      np.testing.assert_array_equal(leaf, want)  # ones
    else:  # 128 draws or more each: the sample deviations agree within 15%
      assert 0.85 < np.std(leaf) / np.std(want) < 1.15, (jax.tree_util.keystr(path),
                                                       np.std(leaf), np.std(want))
  # Another seed, other weights.
  other = numpy_params.random_params(model, tokens, tokens, seed=1)
  assert not np.array_equal(other["token_embedder"]["embedding"],
                            nn.meta.unbox(drawn)["params"]["token_embedder"]["embedding"])
