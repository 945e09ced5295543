"""The initial parameters depend on the model, never on how its steps run: the speed
settings (remat, layer-scan unrolling, attention kernel, fused projections) leave them
alone, so `get_initial_variables` traces every variant of a model as one program."""

import dataclasses
import types

import jax
import numpy as np
import pytest

from crosstask.models import config as config_lib
from crosstask.models.config import TransformerConfig
from crosstask.models.model import EncoderDecoderModel
from crosstask.models.network import Transformer

CFG = TransformerConfig(vocab_size=48, d_model=32, d_ff=64, num_heads=4, d_kv=8,
                        num_encoder_layers=2, num_decoder_layers=1,
                        activations=("gelu", "linear"), logits_via_embedding=False,
                        dtype="float32", relative_attention_num_buckets=8,
                        relative_attention_max_distance=16)
VOCAB = types.SimpleNamespace(eos_id=1, vocab_size=48)
SHAPES = {"encoder_input_tokens": (2, 8), "decoder_input_tokens": (2, 8)}
# One variant per speed setting away from its plainest value (SPEED_SETTINGS).
VARIANTS = {"remat_policy": "dots_attention", "scan_unroll": "full", "attention": "dot_product",
            "fused_qkv": True, "fused_mlp": True}


def _values(variables):
  return [np.asarray(x) for x in jax.tree.leaves(variables)]


@pytest.mark.parametrize("scan_layers", [True, False])
def test_speed_settings_never_change_the_initial_parameters(scan_layers):
  assert set(VARIANTS) == set(config_lib.SPEED_SETTINGS)
  base = dataclasses.replace(CFG, scan_layers=scan_layers)
  tokens = np.ones(SHAPES["encoder_input_tokens"], np.int32)

  def module_init(cfg):  # the network's own init, traced with its settings on
    return jax.jit(Transformer(cfg).init)(jax.random.key(3), tokens, tokens)["params"]
  # Every setting on at once draws what the plainest network draws (one compile a side:
  # a setting that moved a parameter would move the joint variant's).
  want = module_init(base)
  got = module_init(dataclasses.replace(base, **VARIANTS))
  assert jax.tree.structure(got) == jax.tree.structure(want)
  for a, b in zip(_values(got), _values(want)):
    np.testing.assert_array_equal(a, b)
  # Every variant's init is one program (a compilation cache compiles it once), and it
  # draws those parameters.
  programs = set()
  for name, value in [*VARIANTS.items(), ("all", None)]:
    variant = (dataclasses.replace(base, **VARIANTS) if value is None
               else dataclasses.replace(base, **{name: value}))
    model = EncoderDecoderModel(Transformer(variant), VOCAB, VOCAB)
    init = jax.jit(lambda rng, m=model: m.get_initial_variables(rng, SHAPES))
    programs.add(init.lower(jax.random.key(3)).as_text())
  assert len(programs) == 1
  for a, b in zip(_values(init(jax.random.key(3))["params"]), _values(want)):
    np.testing.assert_array_equal(a, b)
