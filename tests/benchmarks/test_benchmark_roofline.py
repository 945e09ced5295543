"""The decoding roofline's byte count, against a count by hand for the tiny model."""

import pytest

import gpu_crosstask
import roofline


def test_step_bytes_of_the_tiny_model_by_hand():
  cfg = gpu_crosstask.model_config("tiny")  # bf16, d 64, f 128, 4 x 16 heads, 2+2 layers
  assert (cfg.d_model, cfg.d_ff, cfg.num_heads * cfg.d_kv, cfg.num_decoder_layers,
          len(cfg.activations), cfg.vocab_size, cfg.dtype) == (
              64, 128, 64, 2, 2, 32128, "bfloat16")
  # Per layer: self q k v o 4*64*64 = 16384, cross q o 2*64*64 = 8192, gated MLP
  # 2*64*128 + 128*64 = 24576, 3 norms 192 -> 49344; 2 layers, final norm 64, output
  # layer 64*32128 = 2056192: 2154944 parameters, 2 bytes each.
  assert roofline.decoder_step_params(cfg) == 2154944
  # Keys and values of one token in all layers: 2 layers * 2 * 64 * 2 bytes = 512.
  shared = roofline.step_bytes(cfg, batch=8, inputs=32, mean_length=3, beams=2)
  assert shared.weights == 4309888
  assert shared.cross_cache == 8 * 32 * 512  # one copy per example, beams share it
  assert shared.self_cache == 8 * 2 * 3 * 512  # each beam its own
  per_beam = roofline.step_bytes(cfg, 8, 32, 3, beams=2, shared_cross=False)
  assert per_beam.cross_cache == 2 * 8 * 32 * 512 and per_beam.total == (
      4309888 + 2 * 8 * 32 * 512 + 8 * 2 * 3 * 512)


def test_roofline_ratio_is_the_measured_step_over_the_floor():
  cfg = gpu_crosstask.model_config("tiny")
  row = roofline.decode_roofline(cfg, 8, 32, new_tokens=6, beams=1, shared_cross=True,
                                 hbm_bytes_per_s=1e9, measured_s=0.6)
  total = 4309888 + 8 * 32 * 512 + 8 * 3 * 512
  assert row["step_bytes"]["total"] == total
  assert row["measured_step_s"] == pytest.approx(0.1)
  assert row["roofline_step_s"] == pytest.approx(total / 1e9)
  assert row["roofline_ratio"] == pytest.approx(0.1 / (total / 1e9))
  cpu = roofline.decode_roofline(cfg, 8, 32, 6, 1, True, None, 0.6)
  assert cpu["roofline_ratio"] is None and cpu["step_bytes"]["total"] == total
