"""The runtime's model FLOP count against the matmuls a traced train step really holds.

The gradient of the loss is traced (no compile) for every remat policy, with the
layer stacks unrolled and scanned; a scan's body counts once per layer, as it runs.
"""

import math

import flax.linen as nn
import jax
import jax.extend as jex
import numpy as np
import pytest

from crosstask.models.config import TransformerConfig
from crosstask.models.model import EncoderDecoderModel
from crosstask.models.network import Transformer
from crosstask.runtime.sharding import model_flops

B, S, T = 2, 11, 5


def _dot_general_flops(eqn) -> int:
  (contracting, _), _ = eqn.params['dimension_numbers']
  depth = math.prod(eqn.invars[0].aval.shape[i] for i in contracting)
  return 2 * depth * math.prod(eqn.outvars[0].aval.shape)


def _matmul_flops(jaxpr) -> int:
  """2 x multiply-adds of the jaxpr's dot products; a scan's body times its length."""
  own = sum(_dot_general_flops(e) for e in jaxpr.eqns if e.primitive.name == 'dot_general')
  return own + sum((e.params['length'] if e.primitive.name == 'scan' else 1) * _matmul_flops(sub)
                   for e in jaxpr.eqns for sub in jex.core.jaxprs_in_params(e.params))


def _config(remat: str, scan: bool) -> TransformerConfig:
  # Odd, unequal sizes so that a swapped term in the count shows.
  return TransformerConfig(vocab_size=53, d_model=24, d_ff=40, num_heads=3, d_kv=7,
                           num_encoder_layers=2, num_decoder_layers=3,
                           activations=('gelu', 'linear'), logits_via_embedding=False,
                           dropout_rate=0.0, dtype='float32', remat_policy=remat,
                           scan_layers=scan)


def _traced_train_step_flops(cfg: TransformerConfig) -> int:
  model = EncoderDecoderModel(Transformer(cfg), None, None)
  # Shapes only: the gradient is traced, never run.
  params = jax.eval_shape(lambda: nn.unbox(model.get_initial_variables(
      jax.random.key(0), {'encoder_input_tokens': (B, S), 'decoder_input_tokens': (B, T)}
  )['params']))
  batch = {'encoder_input_tokens': np.ones((B, S), np.int32),
           'decoder_input_tokens': np.ones((B, T), np.int32),
           'decoder_target_tokens': np.ones((B, T), np.int32),
           'decoder_loss_weights': np.ones((B, T), np.float32)}
  grad = jax.grad(lambda p: model.loss_fn(p, batch, None)[0])
  return _matmul_flops(jax.make_jaxpr(grad)(params).jaxpr)


# Each policy once, scanned or not; scanned or not, the count is the same.
@pytest.mark.parametrize('remat,scan', [('none', False), ('full', True), ('full', False),
                                        ('dots', True), ('minimal', True)])
def test_executed_count_equals_the_traced_gradients_matmuls(remat, scan):
  cfg = _config(remat, scan)
  assert _traced_train_step_flops(cfg) == model_flops.executed_train_step(cfg, B, S, T)


def test_model_flops_ignore_remat_and_recompute_only_where_the_policy_says():
  counts = {p: model_flops.executed_train_step(_config(p, False), B, S, T)
            for p in ('none', 'dots', 'minimal', 'full')}
  model = model_flops.train_step(_config('full', True), B, S, T)
  assert model == 3 * model_flops.forward(_config('none', False), B, S, T)
  assert counts['none'] == counts['dots'] == model
  assert model < counts['minimal'] < counts['full'] < 4 / 3 * model
  # What the training console's MFU counts: the model wrapper at its input shapes.
  shapes = {'encoder_input_tokens': (B, S), 'decoder_input_tokens': (B, T)}
  wrapper = EncoderDecoderModel(Transformer(_config('full', True)), None, None)
  assert model_flops.of_input_shapes(wrapper, shapes) == model
  assert model_flops.of_input_shapes(object(), shapes) is None
  with pytest.raises(ValueError, match="remat_policy 'most'"):
    model_flops.remat_recompute(_ConfigWith('most'), B, S, T)


class _ConfigWith:
  """A config-shaped object whose remat policy the model would refuse."""

  def __init__(self, remat_policy: str):
    self.remat_policy = remat_policy
