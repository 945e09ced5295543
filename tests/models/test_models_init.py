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


@pytest.mark.slow(seconds=5)  # the speed options' check, not the inner loop's
def test_speed_settings_never_change_the_initial_parameters():
  assert set(VARIANTS) == set(config_lib.SPEED_SETTINGS)
  # Scanned: an unscanned init's forward pass is dead code jax drops before lowering, a
  # scanned one's stays inside the scan, settings and all.
  base = dataclasses.replace(CFG, scan_layers=True)
  # Every variant's init is one program (a compilation cache compiles it once).
  programs = set()
  for name, value in [*VARIANTS.items(), ("all", None)]:
    variant = (dataclasses.replace(base, **VARIANTS) if value is None
               else dataclasses.replace(base, **{name: value}))
    model = EncoderDecoderModel(Transformer(variant), VOCAB, VOCAB)
    init = jax.jit(lambda rng, m=model: m.get_initial_variables(rng, SHAPES))
    programs.add(init.lower(jax.random.key(3)).as_text())
  assert len(programs) == 1
  # And it draws what the network's own init draws with every setting on at once (one
  # compile a side: a setting that moved a parameter would move the joint variant's).
  tokens = np.ones(SHAPES["encoder_input_tokens"], np.int32)
  want = init(jax.random.key(3))["params"]
  got = jax.jit(Transformer(variant).init)(jax.random.key(3), tokens, tokens)["params"]
  assert jax.tree.structure(got) == jax.tree.structure(want)
  for a, b in zip(_values(got), _values(want)):
    np.testing.assert_array_equal(a, b)
