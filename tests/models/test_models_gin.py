"""Gin model files: LongLM sizes match LOT Table 8; every file builds a working model."""

import jax
import numpy as np
import pytest

from crosstask.runtime.config import model_gin

# LOT (Guan et al., 2022) Table 8 parameter counts.
LONGLM = {"small": 60e6, "base": 223e6, "large": 1e9}
SIZES = {  # d_model, d_ff, heads, enc layers, dec layers, activations, tied, vocab
    "t5_1_1/tiny": (64, 128, 4, 2, 2, ("gelu", "linear"), False, 32128),
    "t5_1_1/small": (512, 1024, 6, 8, 8, ("gelu", "linear"), False, 32128),
    "t5_1_1/base": (768, 2048, 12, 12, 12, ("gelu", "linear"), False, 32128),
    "t5_1_1/large": (1024, 2816, 16, 24, 24, ("gelu", "linear"), False, 32128),
    "mt5/small": (512, 1024, 6, 8, 8, ("gelu", "linear"), False, 250112),
    "mt5/base": (768, 2048, 12, 12, 12, ("gelu", "linear"), False, 250112),
    "longlm/small": (512, 2048, 8, 6, 6, ("relu",), True, 32128),
    "longlm/base": (768, 3072, 12, 12, 12, ("relu",), True, 32128),
    "longlm/large": (1536, 3072, 12, 24, 32, ("relu",), True, 32128),
}


@pytest.mark.parametrize("size", sorted(LONGLM))
def test_longlm_param_counts_match_lot_table_8(size):
  count = model_gin.param_count(model_gin.config_from_gin(f"crosstask/gin/longlm/{size}.gin"))
  assert abs(count - LONGLM[size]) / LONGLM[size] < 0.02, count


@pytest.mark.parametrize("name", sorted(SIZES))
def test_model_files_bind_the_published_shapes(name):
  cfg = model_gin.config_from_gin(f"crosstask/gin/{name}.gin")
  d_model, d_ff, heads, enc, dec, acts, tied, vocab = SIZES[name]
  assert (cfg.d_model, cfg.d_ff, cfg.num_heads, cfg.num_encoder_layers, cfg.num_decoder_layers,
          cfg.activations, cfg.logits_via_embedding, cfg.vocab_size) == SIZES[name]
  tiny = name.endswith("tiny")  # the tests' and demos' model: small and float32 for the CPU
  assert cfg.d_kv == (16 if tiny else 64) and cfg.dtype == ("float32" if tiny else "bfloat16")


def test_tiny_model_trains_and_decodes_from_gin():
  model = model_gin.model_from_gin(["crosstask/gin/t5_1_1/tiny.gin", "crosstask/gin/longlm/sampling.gin"],
                                 ["DROPOUT_RATE = 0.0", "NUM_EMBEDDINGS = 512",
                                  "LOSS_NORMALIZING_FACTOR = 'NUM_REAL_TARGET_TOKENS'"])
  assert model.module.config.dropout_rate == 0.0
  assert model.default_decoder_params == {"temperature": 0.7, "topk": 40}
  assert model.output_vocabulary.eos_id == 1
  # Under jit: one compile instead of one per operation of an eager init (~270 cold).
  params = jax.jit(lambda rng: model.get_initial_variables(rng, {
      "encoder_input_tokens": (2, 8), "decoder_input_tokens": (2, 4)})["params"])(
          jax.random.PRNGKey(0))
  tokens = model.input_vocabulary.encode("hello")
  enc = np.array([tokens + [1] + [0] * (7 - len(tokens))] * 2, np.int32)
  batch = {"encoder_input_tokens": enc, "decoder_input_tokens": np.array([[0, 5, 6, 7]] * 2),
           "decoder_target_tokens": np.array([[5, 6, 7, 1]] * 2),
           "decoder_loss_weights": np.ones((2, 4), np.float32)}
  loss, metrics = jax.jit(lambda p, b: model.loss_fn(p, b, None))(params, batch)
  assert np.isfinite(loss) and 4 < float(metrics["cross_ent_loss"]) < 12  # ~log(512)
  out = jax.jit(model.predict_batch)(params, batch, jax.random.PRNGKey(1))
  assert out.shape == (2, 4)


def test_reading_a_config_leaves_gin_open_for_more_configurables():
  import gin
  model_gin.config_from_gin("crosstask/gin/t5_1_1/tiny.gin")
  assert not gin.config_is_locked()

  @gin.configurable
  def added_after_reading_a_config(x=1):  # Raised "config was locked" before.
    return x
  assert added_after_reading_a_config() == 1
