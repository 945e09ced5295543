"""Orbax checkpoints: data position saved, half-written steps ignored, shapes checked."""

import dataclasses
import re
import shutil

import jax
import numpy as np
import pytest
import seqio

import runtime_helpers
from crosstask.models import config as config_lib
from crosstask.models import model as model_lib
from crosstask.models import network
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints
from crosstask.runtime.state import optimizers
from crosstask.runtime.state import trainer as trainer_lib

LENGTHS = {'inputs': 16, 'targets': 16}


def _config(d_model: int = 32) -> config_lib.TransformerConfig:
  return config_lib.TransformerConfig(
      vocab_size=264, d_model=d_model, d_ff=64, num_heads=4, d_kv=8, num_encoder_layers=1,
      num_decoder_layers=1, activations=('gelu', 'linear'), dropout_rate=0.0, dtype='float32')


def _trainer(d_model: int = 32) -> trainer_lib.Trainer:
  cfg = _config(d_model)
  vocab = seqio.ByteVocabulary()
  model = model_lib.EncoderDecoderModel(network.Transformer(cfg), vocab, vocab)
  run = run_lib.resolve(model, partitioning.Partitioner(num_partitions=2), batch_size=8,
                        lengths=LENGTHS)
  tx, sched = optimizers.create_optimizer(optimizers.adafactor, 1e-3, param_axes=run.param_axes)
  return trainer_lib.Trainer(run, tx, sched)


@pytest.fixture(scope='module')
def saved(tmp_path_factory):
  """A model dir with complete checkpoints at steps 1 and 2."""
  model_dir = tmp_path_factory.mktemp('ckpt')
  trainer = _trainer()
  state = trainer.init_state(seed=0)
  mgr = checkpoints.manager(str(model_dir))
  checkpoints.save(mgr, 1, state, batches_consumed=1)
  checkpoints.save(mgr, 2, state, batches_consumed=2)
  mgr.wait_until_finished()
  mgr.close()
  return model_dir, trainer, jax.device_get(state)


def test_restore_gives_state_and_data_position(saved):
  model_dir, trainer, state = saved
  mgr = checkpoints.manager(str(model_dir))
  restored, consumed = checkpoints.restore(mgr, mgr.latest_step(), trainer.abstract_state())
  assert consumed == 2
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(restored), state)
  leaf = jax.tree.leaves(restored['params'])[0]
  assert leaf.sharding.mesh.shape == {'data': 4, 'fsdp': 1, 'model': 2}


def test_eval_selects_checkpoints_by_mode_and_names_their_step(saved):
  from crosstask.runtime.jobs import restoring
  model_dir, _, _ = saved

  def select(path, mode):
    return restoring.checkpoint_dirs(checkpoints.RestoreCheckpointConfig(str(path), mode=mode))
  assert select(model_dir, 'all') == [(s, checkpoints.state_item(str(model_dir), s))
                                      for s in (1, 2)]
  assert select(model_dir, 'latest') == [(2, checkpoints.state_item(str(model_dir), 2))]
  # The step comes from the checkpoint's own directory, however it is named.
  for path in (model_dir / 'checkpoint_1', model_dir / 'checkpoint_1' / 'state'):
    assert select(path, 'specific') == [(1, checkpoints.state_item(str(model_dir), 1))]
  with pytest.raises(ValueError, match=r'mode \(CHECKPOINT_MODE\) must be'):
    select(model_dir / 'checkpoint_1', 'newest')


def test_half_written_checkpoint_is_ignored(saved, tmp_path):
  model_dir, trainer, _ = saved
  copy, only_tmp = tmp_path / 'run', tmp_path / 'only_tmp'
  shutil.copytree(model_dir, copy)
  # What a kill during a save leaves: orbax's temporary directory, never finalized.
  tmp_name = 'checkpoint_3.orbax-checkpoint-tmp-1234'
  shutil.copytree(copy / 'checkpoint_2', copy / tmp_name)
  shutil.copytree(copy / 'checkpoint_2', only_tmp / tmp_name)
  assert checkpoints.steps_in(str(copy)) == [1, 2]
  assert checkpoints.resolve_state_dir(str(copy)).endswith('checkpoint_2/state')
  assert checkpoints.steps_in(str(only_tmp)) == []
  with pytest.raises(FileNotFoundError, match='No complete checkpoint'):
    checkpoints.load_params(str(only_tmp), trainer.abstract_params())
  with pytest.raises(FileNotFoundError, match='interrupted'):  # Named directly, too.
    checkpoints.load_params(str(copy / tmp_name), trainer.abstract_params())
  # A restarted run's manager resumes from step 2 and clears the leftover.
  mgr = checkpoints.manager(str(copy))
  assert mgr.latest_step() == 2
  mgr.close()


def test_params_only_load_and_shape_mismatch(saved):
  model_dir, trainer, state = saved
  params = checkpoints.load_params(str(model_dir / 'checkpoint_1'), trainer.abstract_params())
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(params), state['params'])
  wider = _trainer(d_model=64)
  with pytest.raises(ValueError, match=r"parameter '.*' has shape .*expects"):
    checkpoints.load_params(str(model_dir), wider.abstract_params())
  with pytest.raises(FileNotFoundError, match='does not exist'):
    checkpoints.load_params(str(model_dir / 'nowhere'), trainer.abstract_params())


def _without_decoder_norm(params: dict) -> dict:
  """`params` less the decoder's final norm: a model the checkpoint holds more than, as a
  shallower decoder is."""
  return {**params, 'decoder': {k: v for k, v in params['decoder'].items()
                                if k != 'decoder_norm'}}


def test_a_checkpoint_of_a_bigger_model_is_refused_not_cut_to_fit(saved, tmp_path):
  # Eval, infer and fine-tuning of a checkpoint with more decoder layers than the model
  # had loaded it, the extra layers dropped without a word, and written numbers; resuming
  # ended in orbax's tree-structure traceback.
  model_dir, trainer, state = saved
  smaller = _without_decoder_norm(trainer.abstract_params())
  expected = (r"holds 1 entries the model does not have, e.g. \['decoder/decoder_norm/scale'\]: "
              r"it was saved by a bigger or other model")
  with pytest.raises(ValueError, match=r"checkpoint_2/state " + expected):
    checkpoints.load_params(str(model_dir), smaller)
  mgr = checkpoints.manager(str(model_dir), read_only=True)
  try:
    abstract_state = trainer.abstract_state()
    with pytest.raises(ValueError, match=r"entries the model does not have, e\.g\. "
                       r"\['params/decoder/decoder_norm/scale'\]"):
      checkpoints.restore(mgr, 2, {**abstract_state, 'params': smaller})
  finally:
    mgr.close()
  from crosstask.models import hf_import  # pylint: disable=g-import-not-at-top
  folder = hf_import.save_hf_checkpoint(tmp_path / 'hf', _config(), state['params'])
  with pytest.raises(ValueError, match=expected):
    checkpoints.load_params(str(folder), smaller)


def test_params_from_a_hugging_face_folder(saved, tmp_path):
  from crosstask.models import hf_import
  _, trainer, state = saved
  folder = hf_import.save_hf_checkpoint(tmp_path / 'hf', _config(), state['params'])
  params = checkpoints.load_params(str(folder), trainer.abstract_params())
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6),
               jax.device_get(params), state['params'])
  with pytest.raises(ValueError, match=r"parameter '.*' has shape"):
    checkpoints.load_params(str(folder), _trainer(d_model=64).abstract_params())
  # The folder's config.json against the model's config: an activation of the same
  # shapes (a UL2-style gated SiLU) or a tied output layer is refused by name; both once
  # loaded without a word (the SiLU) or as a shape error that named matching dimensions.
  run = run_lib.resolve(trainer.model, trainer.partitioner, batch_size=8, lengths=LENGTHS)
  assert (run.model_config.d_model, run.model_config.activations) == (32, ('gelu', 'linear'))
  checkpoints.load_params(str(folder), trainer.abstract_params(), (), run.model_config)
  silu = dataclasses.replace(_config(), activations=('silu', 'linear'))
  with pytest.raises(ValueError, match=re.escape(
      f"{folder}: its config.json describes another model than the model gin file: "
      "activations: the checkpoint's ('gelu', 'linear'), the model's ('silu', 'linear'). "
      "Bind the checkpoint's settings (e.g. --gin.config.TransformerConfig.activations=...)")):
    checkpoints.load_params(str(folder), trainer.abstract_params(), (), silu)
  untied = dataclasses.replace(_config(), logits_via_embedding=False, layer_norm_epsilon=1e-5)
  with pytest.raises(ValueError, match=re.escape(
      "logits_via_embedding: the checkpoint's True, the model's False; layer_norm_epsilon: "
      "the checkpoint's 1e-06, the model's 1e-05.")):
    checkpoints.load_params(str(folder), trainer.abstract_params(), (), untied)


def test_export_into_a_folder_with_files_lists_only_what_it_wrote(saved, tmp_path, capsys):
  """An export into a folder that holds files lists the files it wrote, not the folder's
  others (which it leaves), and warns of a file of one of its names that it replaced."""
  from crosstask.runtime.jobs import export_lib
  model_dir, trainer, state = saved
  out = tmp_path / 'out'
  out.mkdir()
  (out / 'notes.txt').write_text('mine')
  (out / 'config.json').write_text('{"mine": true}')
  vocab = seqio.ByteVocabulary()
  model = model_lib.EncoderDecoderModel(network.Transformer(_config()), vocab, vocab)
  folder = export_lib.export(model, checkpoints.RestoreCheckpointConfig(str(model_dir)),
                             str(out), partitioning.Partitioner(num_partitions=2))
  captured = capsys.readouterr()
  assert captured.out.splitlines() == [
      f'{model_dir}/checkpoint_2 (step 2) -> {out}: config.json, model.safetensors, '
      'tokenizer_config.json', f'Also in {out}, not written by this export: notes.txt.']
  assert f'WARNING: {out} held config.json already: replaced by this export.' in captured.err
  assert (out / 'notes.txt').read_text() == 'mine'
  # What it wrote is the checkpoint's parameters.
  params = checkpoints.load_params(folder, trainer.abstract_params())
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6),
               jax.device_get(params), state['params'])


def test_a_hugging_face_folder_loads_only_into_a_model_reading_its_tokenizer(saved, tmp_path):
  from crosstask import plain_vocabularies
  from crosstask.models import hf_import
  from crosstask.runtime.jobs import restoring
  from crosstask.runtime.report import faults
  _, trainer, state = saved
  theirs = runtime_helpers.sentencepiece_model(tmp_path / 'theirs')
  folder = hf_import.save_hf_checkpoint(tmp_path / 'hf', _config(), state['params'],
                                        plain_vocabularies.get(theirs))
  assert (folder / 'spiece.model').read_bytes() == open(theirs, 'rb').read()
  # With the fast-tokenizer files AutoTokenizer reads it through (test_hf_tokenizer.py).
  assert sorted(p.name for p in folder.iterdir()) == [
      'config.json', 'model.safetensors', 'spiece.model', 'tokenizer.json',
      'tokenizer_config.json']
  # Readable as the other files are (safetensors itself writes 0600).
  assert (folder / 'model.safetensors').stat().st_mode == (folder / 'config.json').stat().st_mode
  # The same pieces from another path (here the folder's own file) load, as the
  # release's tokenizer copied elsewhere would.
  same = seqio.SentencePieceVocabulary(str(folder / 'spiece.model'))
  params = checkpoints.load_params(str(folder), trainer.abstract_params(), (same, same))
  jax.tree.map(np.testing.assert_array_equal, jax.device_get(params), state['params'])
  # The model gin file's default (bytes), or another SentencePiece model, is refused.
  other = seqio.SentencePieceVocabulary(
      runtime_helpers.sentencepiece_model(tmp_path / 'other', seed=1))
  for vocab, reads in ((seqio.ByteVocabulary(), r'bytes \(259 ids\)'),
                       (other, r'SentencePiece .*other/sp.model \(300 ids\)')):
    with pytest.raises(faults.CheckpointMismatchError,
                       match=rf"hf was trained with the SentencePiece model .*hf/spiece.model "
                             rf"\(300 pieces; the folder's own tokenizer\), but the model reads "
                             rf'{reads}: .* Set --gin.VOCABULARY_PATH="\'.*hf/spiece.model\'" and '
                             rf'--gin.NUM_EMBEDDINGS=264'):
      checkpoints.load_params(str(folder), trainer.abstract_params(), (same, vocab))
  # Eval and infer take the folder as one checkpoint, of step 0 (it records none).
  for mode in ('all', 'latest', 'specific'):
    assert restoring.checkpoint_dirs(checkpoints.RestoreCheckpointConfig(
        str(folder), mode=mode)) == [(0, str(folder))]


def test_a_run_checkpoint_loads_only_into_a_model_reading_what_its_run_read(saved, tmp_path):
  """The VOCABULARY_PATH a run saved in config.gin: an eval that left it out (bytes) is
  refused, naming it and --run_dir, at each path a checkpoint is given by."""
  from crosstask.runtime.report import faults
  model_dir, trainer, state = saved
  run = tmp_path / 'run'
  shutil.copytree(model_dir, run)
  sp = runtime_helpers.sentencepiece_model(tmp_path / 'sp')
  ours = seqio.SentencePieceVocabulary(sp)
  abstract = trainer.abstract_params()
  (run / 'config.gin').write_text(f"MODEL_DIR = '{run}'\nVOCABULARY_PATH = '{sp}'\n")
  for path in (run, run / 'checkpoint_2', run / 'checkpoint_2' / 'state'):
    with pytest.raises(faults.CheckpointMismatchError,
                       match=rf"was trained with the SentencePiece model {sp} \(300 pieces; "
                             rf"VOCABULARY_PATH in {run}/config.gin\), but the model reads "
                             rf"bytes .* --run_dir={run}, "):
      checkpoints.load_params(str(path), abstract, (seqio.ByteVocabulary(),) * 2)
    params = checkpoints.load_params(str(path), abstract, (ours, ours))
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(params), state['params'])
  (run / 'config.gin').write_text('VOCABULARY_PATH = None\n')  # bytes
  with pytest.raises(faults.CheckpointMismatchError,
                     match=r'trained with bytes \(VOCABULARY_PATH in .*\), but the model reads '
                           r'SentencePiece .*Set --gin.VOCABULARY_PATH="None"'):
    checkpoints.load_params(str(run), abstract, (ours, ours))
  # The macro says bytes, not how many sentinel ids a model gin put on top.
  checkpoints.load_params(str(run), abstract, (seqio.ByteVocabulary(extra_ids=4),) * 2)
  # Where the run does not say, or names a model file this machine lacks: not checked.
  for text in ("MODEL_DIR = 'x'\n", "VOCABULARY_PATH = '/nowhere/sp.model'\n"):
    (run / 'config.gin').write_text(text)
    checkpoints.load_params(str(run), abstract, (ours, ours))


def test_keeps_only_the_newest(saved, tmp_path):
  _, _, state = saved
  mgr = checkpoints.manager(str(tmp_path), checkpoints.SaveCheckpointConfig(keep=2))
  for step in (10, 20, 30):
    checkpoints.save(mgr, step, state, batches_consumed=step)
  mgr.wait_until_finished()
  mgr.close()
  assert checkpoints.steps_in(str(tmp_path)) == [20, 30]
