"""The Run: resolved once per job, it decides the model's platform choices and the batch."""

import dataclasses

import pytest

from crosstask.models import config as config_lib
from crosstask.models import model as model_lib
from crosstask.models import network
from crosstask.runtime.config import platform
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import optimizers
from crosstask.runtime.state import trainer as trainer_lib
from crosstask.vocabularies import get as get_vocabulary

LENGTHS = {'inputs': 16, 'targets': 8}


def _model(**overrides):
  cfg = config_lib.TransformerConfig(vocab_size=264, d_model=16, d_ff=16, num_heads=2, d_kv=8,
                                     num_encoder_layers=1, num_decoder_layers=1,
                                     attention='auto', remat_policy='auto')
  vocab = get_vocabulary()
  return model_lib.EncoderDecoderModel(
      network.Transformer(dataclasses.replace(cfg, **overrides)), vocab, vocab)


def test_the_model_takes_the_meshs_platform_choices():
  model = _model()
  run = run_lib.resolve(model, batch_size=8, lengths=LENGTHS)
  cpu = platform.PROFILES['cpu']
  assert run.profile == cpu
  config = run.model.module.config
  assert (config.attention, config.remat_policy) == (cpu.attention, cpu.remat)
  assert model.module.config.attention == 'auto'  # The caller's model is left as it was.


def test_a_batch_is_checked_once_or_padded_for_jobs_that_pad():
  part = partitioning.Partitioner()  # 8 devices: 8 batch shards.
  with pytest.raises(ValueError, match=r'BATCH_SIZE=12 .* 8 batch shards'):
    run_lib.resolve(_model(), part, batch_size=12, lengths=LENGTHS)
  with pytest.raises(ValueError, match=r'NUM_MICROBATCHES=4 .* microbatches of 4 rows'):
    run_lib.resolve(_model(), part, batch_size=16, lengths=LENGTHS, num_microbatches=4)
  # Eval, infer and embed pad their last batch: the batch is rounded up instead.
  assert run_lib.resolve(_model(), part, batch_size=12, lengths=LENGTHS,
                         pads_batch=True).batch_size == 16


def test_the_trainer_of_a_run_is_shaped_by_it():
  run = run_lib.resolve(_model(), batch_size=16, lengths=LENGTHS, num_microbatches=2)
  tx, schedule = optimizers.create_optimizer(
      optimizers.adamw, 1e-3, param_axes=run.param_axes)
  trainer = trainer_lib.Trainer(run, tx, schedule)
  assert trainer.input_shapes == {'encoder_input_tokens': (16, 16),
                                  'decoder_input_tokens': (16, 8)}
  assert trainer.num_microbatches == 2 and trainer.profile == run.profile
  abstract, _ = run.abstract_params()
  assert abstract.keys() == trainer.abstract_params().keys()


def test_a_run_traces_its_parameters_once(monkeypatch):
  traced = []
  trace = run_lib.boxed_params
  monkeypatch.setattr(run_lib, 'boxed_params', lambda *a: traced.append(a) or trace(*a))
  run = run_lib.resolve(_model(), batch_size=16, lengths=LENGTHS)
  tx, schedule = optimizers.create_optimizer(
      optimizers.adafactor, 1e-3, param_axes=run.param_axes)
  trainer = trainer_lib.Trainer(run, tx, schedule)
  run.abstract_params()
  assert len(traced) == 1 and trainer.abstract_params().keys() == run.param_axes.keys()
