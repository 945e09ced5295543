"""A checkpoint saved with unscanned layers loads into a scanned trainer, and vice versa."""

import dataclasses

import jax
import numpy as np
import pytest
import seqio

from crosstask.models import config as config_lib
from crosstask.models import layer_stacking
from crosstask.models import model as model_lib
from crosstask.models import network
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints
from crosstask.runtime.state import optimizers
from crosstask.runtime.state import trainer as trainer_lib

LENGTHS = {'inputs': 16, 'targets': 16}
CFG = config_lib.TransformerConfig(
    vocab_size=264, d_model=32, d_ff=64, num_heads=4, d_kv=8, num_encoder_layers=2,
    num_decoder_layers=3, activations=('gelu', 'linear'), dropout_rate=0.0, dtype='float32')


def _trainer(scan_layers: bool) -> trainer_lib.Trainer:
  vocab = seqio.ByteVocabulary()
  cfg = dataclasses.replace(CFG, scan_layers=scan_layers)
  model = model_lib.EncoderDecoderModel(network.Transformer(cfg), vocab, vocab)
  run = run_lib.resolve(model, partitioning.Partitioner(num_partitions=2), batch_size=8,
                        lengths=LENGTHS)
  tx, sched = optimizers.create_optimizer(optimizers.adafactor, 1e-3, param_axes=run.param_axes)
  return trainer_lib.Trainer(run, tx, sched)


@pytest.mark.parametrize('saved_scanned', [pytest.param(False, marks=pytest.mark.slow), True])
def test_params_load_into_the_other_layer_layout(tmp_path, saved_scanned):
  writer, reader = _trainer(saved_scanned), _trainer(not saved_scanned)
  state = writer.init_state(seed=0)
  mgr = checkpoints.manager(str(tmp_path))
  checkpoints.save(mgr, 1, state, batches_consumed=1)
  mgr.wait_until_finished()
  mgr.close()
  params = checkpoints.load_params(str(tmp_path), reader.abstract_params())
  want_layout = 'unstacked' if saved_scanned else 'stacked'
  assert layer_stacking.layout(params) == want_layout
  expected = layer_stacking.to_layout(jax.device_get(state['params']), want_layout)
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(params), expected)
  for got, abstract in zip(jax.tree.leaves(params), jax.tree.leaves(reader.abstract_params())):
    assert got.sharding == abstract.sharding
