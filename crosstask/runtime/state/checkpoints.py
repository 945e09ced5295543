"""Orbax checkpoints: full train state plus data position, and parameters-only loads.

Orbax writes each step to a temporary directory and renames it when complete, so
a run killed mid-save leaves nothing the manager will mistake for a checkpoint.
"""

import contextlib
import dataclasses
import functools
import json
import os
from typing import Any, Mapping, Sequence

import gin
import jax
import numpy as np
import orbax.checkpoint as ocp

from crosstask import vocabularies
from crosstask.models import layer_stacking
from crosstask.runtime.data import input_state
from crosstask.runtime.report import faults

STEP_PREFIX = 'checkpoint'  # Step directories are named like T5X's: checkpoint_<step>.
STATE_ITEM = 'state'  # The train state's item in a step directory, beside the data position.
_TMP_MARKER = '.orbax-checkpoint-tmp'  # In the name of a save still being written.


@gin.configurable(module='utils')
@dataclasses.dataclass(frozen=True)
class SaveCheckpointConfig:
  """How often to save and how many of the newest to keep (None keeps all)."""
  period: int = 1000
  keep: int | None = None
  async_save: bool = False


@gin.configurable(module='utils')
@dataclasses.dataclass(frozen=True)
class RestoreCheckpointConfig:
  """A checkpoint (or a directory of them) to read.

  mode 'latest' takes the newest step, 'specific' exactly `path`, 'all' every step
  in the directory (for evaluating a series). With `params_only` only the
  parameters are taken (fine-tuning from a pretrained or imported model).
  """
  path: str | None = None
  mode: str = 'latest'
  params_only: bool = True


def manager(directory: str, cfg: SaveCheckpointConfig | None = None,
            read_only: bool = False) -> ocp.CheckpointManager:
  cfg = cfg or SaveCheckpointConfig()
  options = ocp.CheckpointManagerOptions(
      save_interval_steps=1,  # The train loop decides when; see `should_save`.
      max_to_keep=cfg.keep,
      step_prefix=STEP_PREFIX,
      create=not read_only,
      read_only=read_only,
      cleanup_tmp_directories=not read_only,
      enable_async_checkpointing=cfg.async_save)
  return ocp.CheckpointManager(os.path.abspath(directory), options=options,
                               item_names=(STATE_ITEM, 'data', input_state.ITEM))


def save(mgr: ocp.CheckpointManager, step: int, state: Any, batches_consumed: int,
         iterator: Any = None, input_record: Mapping[str, Any] | None = None,
         **progress: int) -> None:
  """Saves the state, the data position (JSON) and, if given, the input iterator.

  `input_record` (JSON) says which stream the position is in (task, batch, lengths),
  so a resume on another can be refused. Only arrays, JSON and tf.data's own
  checkpoint format are written: restoring never unpickles anything.
  """
  record = {'batches_consumed': int(batches_consumed), 'step': int(step),
            **{k: int(v) for k, v in progress.items()}}
  if input_record is not None:
    record['input'] = dict(input_record)
  items = dict(state=ocp.args.StandardSave(state), data=ocp.args.JsonSave(record))
  if iterator is not None:
    items[input_state.ITEM] = input_state.IteratorSave(iterator)
  mgr.save(step, args=ocp.args.Composite(**items))


def restore(mgr: ocp.CheckpointManager, step: int, abstract_state: Any) -> tuple[Any, int]:
  """The train state at `step`, laid out like `abstract_state`, and its data position."""
  state, progress = restore_with_progress(mgr, step, abstract_state)
  return state, int(progress['batches_consumed'])


def restore_with_progress(mgr: ocp.CheckpointManager, step: int, abstract_state: Any
                          ) -> tuple[Any, dict[str, int]]:
  """The train state at `step` and its JSON progress record (batches consumed, ...)."""
  check_shapes(state_item(mgr.directory, step), abstract_state)
  with _reading(f'{mgr.directory}/{STEP_PREFIX}_{step}'):
    out = mgr.restore(step, args=ocp.args.Composite(
        state=ocp.args.StandardRestore(abstract_state), data=ocp.args.JsonRestore()))
  if not isinstance(out.data, dict) or 'batches_consumed' not in out.data:
    raise ValueError(f'Checkpoint {mgr.directory}/{STEP_PREFIX}_{step}/data holds no '
                     f"'batches_consumed' record: {out.data!r:.200}")
  return out.state, dict(out.data)


def has_input_state(mgr: ocp.CheckpointManager, step: int) -> bool:
  return os.path.isdir(os.path.join(str(mgr.directory), f'{STEP_PREFIX}_{step}',
                                    input_state.ITEM))


def restore_input(mgr: ocp.CheckpointManager, step: int, iterator: Any) -> None:
  """Puts `iterator` (a fresh tf.data iterator of the same pipeline) at the saved position."""
  mgr.restore(step, args=ocp.args.Composite(
      **{input_state.ITEM: input_state.IteratorRestore(iterator)}))


def state_item(directory: str, step: int) -> str:
  """Where the train state of `step` lies under a model directory."""
  return os.path.join(str(directory), f'{STEP_PREFIX}_{step}', STATE_ITEM)


def step_of(item: str) -> int:
  """The step of a '<model dir>/checkpoint_<step>/state' item; 0 if not so named."""
  prefix, _, num = os.path.basename(os.path.dirname(item)).rpartition('_')
  return int(num) if prefix == STEP_PREFIX and num.isdigit() else 0


def steps_in(directory: str) -> list[int]:
  """The complete checkpoints under `directory` (temporary ones are not counted)."""
  if not os.path.isdir(directory):
    return []
  mgr = manager(directory, read_only=True)
  try:
    return list(mgr.all_steps())
  finally:
    mgr.close()  # Managers hold threads; these read-only ones are used once.


def resolve_state_dir(path: str) -> str:
  """The 'state' item for `path`: a step dir, a model dir (its newest step), or the item."""
  path = os.path.abspath(path)
  if not os.path.exists(path):
    raise FileNotFoundError(f'Checkpoint path {path} does not exist.')
  if _TMP_MARKER in path:  # A step dir, or an item inside one, that was never finished.
    raise FileNotFoundError(f'{path} is an interrupted (temporary) orbax save, not a '
                            'complete checkpoint.')
  if os.path.isdir(os.path.join(path, STATE_ITEM)):
    return os.path.join(path, STATE_ITEM)
  steps = steps_in(path)
  if steps:
    return state_item(path, max(steps))
  if os.path.isfile(os.path.join(path, '_METADATA')):
    return path  # Already a saved pytree item.
  raise FileNotFoundError(f'No complete checkpoint under {path} (an interrupted save leaves '
                          'only *.orbax-checkpoint-tmp-* directories, which are ignored).')


def _flat(tree: Any) -> dict[str, Any]:
  flat, _ = jax.tree_util.tree_flatten_with_path(tree)
  return {jax.tree_util.keystr(k, simple=True, separator='/'): v for k, v in flat}


def _compare_shapes(saved: dict[str, Any], want: dict[str, Any], source: str) -> None:
  missing = sorted(set(want) - set(saved))
  if missing and not set(want) & set(saved):
    raise faults.CheckpointMismatchError(
        f'Checkpoint {source} holds none of the {len(want)} entries the model needs (it '
        f'holds {len(saved)}): its metadata is missing or damaged (an incomplete copy?), '
        'or it is no checkpoint of a crosstask model.')
  if missing:
    raise faults.CheckpointMismatchError(
        f'Checkpoint {source} lacks {len(missing)} entries the model needs, '
        f'e.g. {missing[:5]}.')
  # Strict, as T5X's restore is by default: a checkpoint of a bigger model (more layers)
  # had loaded into a smaller one, its extra layers dropped without a word.
  extra = sorted(set(saved) - set(want))
  if extra:
    raise faults.CheckpointMismatchError(
        f'Checkpoint {source} holds {len(extra)} entries the model does not have, '
        f'e.g. {extra[:5]}: it was saved by a bigger or other model (more layers?).')
  for name, target in want.items():
    got = tuple(getattr(saved[name], 'shape', ()) or ())
    if got != tuple(target.shape):
      raise faults.CheckpointMismatchError(
          f"Checkpoint {source}: parameter '{name}' has shape {got}, the model expects "
          f'{tuple(target.shape)}.')


@contextlib.contextmanager
def _reading(source: str):
  """Turns a checkpoint whose arrays cannot be read (missing or damaged data files, Git
  LFS pointers in their place) into one line naming it, not TensorStore's traceback."""
  try:
    yield
  except faults.CheckpointMismatchError:
    raise
  except Exception as e:  # pylint: disable=broad-except  TensorStore raises a bare Exception.
    if not isinstance(e, OSError) and 'reading array' not in str(e):
      raise
    first = str(e).splitlines()[0].split('. See full')[0][:160] if str(e) else type(e).__name__
    raise faults.CheckpointMismatchError(
        f'Checkpoint {source} could not be read ({first}): its files are damaged or '
        'incomplete (an interrupted copy, or Git LFS pointers in place of the data).') from e


def check_shapes(state_dir: str, abstract: Any, subtree: str | None = None) -> None:
  """Fails naming the parameter when the checkpoint's shapes differ from the model's."""
  meta = ocp.StandardCheckpointer().metadata(state_dir)
  meta = getattr(meta, 'item_metadata', meta)
  meta = getattr(meta, 'tree', meta)
  _compare_shapes(_flat(meta[subtree] if subtree else meta), _flat(abstract), state_dir)


def is_hf_checkpoint(path: str) -> bool:
  return os.path.isfile(os.path.join(path, 'config.json'))


def check_vocabulary(path: str, model_vocabularies: Sequence[Any]) -> None:
  """Refuses a checkpoint trained with another vocabulary than the model reads.

  Why: the shapes agree whatever the vocabulary (bytes' 259 ids fit LongLM-base's 32,128
  embedding rows), so fine-tuning or evaluating with the model gin file's default
  (bytes), or with an eval command that left VOCABULARY_PATH out, would run, reading
  every embedding as another token. What the checkpoint was trained with: a Hugging
  Face folder's own `spiece.model`, or the VOCABULARY_PATH its run saved in config.gin.
  SentencePiece models are compared by their pieces, not their files. A checkpoint that
  says neither (ByT5's folder, a run without the macro), or names a model file this
  machine does not have, is not checked.
  """
  trained, source, fix = _trained_vocabulary(path)
  if trained is None:
    return
  for vocab in {id(v): v for v in model_vocabularies if v is not None}.values():
    if trained == vocabularies.BYTES:  # the macro names no file; extra ids it does not say
      if vocabularies.is_byte_kind(vocab):
        continue
      described = f'bytes ({source})'
    else:
      ours = getattr(vocab, 'sentencepiece_model_file', None)
      if ours is not None and _pieces(str(ours)) == _pieces(trained):
        continue
      described = f'the SentencePiece model {trained} ({len(_pieces(trained))} pieces; {source})'
    raise faults.CheckpointMismatchError(
        f'Checkpoint {path} was trained with {described}, but the model reads '
        f'{vocabularies.describe(vocab)}: each embedding would be read as another token. '
        f'{fix}')


def _trained_vocabulary(path: str) -> tuple[str | None, str, str]:
  """(the vocabulary `path` was trained with: 'bytes' or a SentencePiece model file, or
  None where it does not say; where that is said; how to read text as it did, and how
  to reuse the weights with another vocabulary on purpose)."""
  from crosstask.models import hf_import
  from crosstask.runtime.config import saved_run
  if is_hf_checkpoint(path):
    tokenizer = os.path.join(path, hf_import.TOKENIZER_FILE)
    if not os.path.isfile(tokenizer):
      return None, '', ''
    return (tokenizer, "the folder's own tokenizer",
            f'Set --gin.VOCABULARY_PATH="\'{tokenizer}\'"{_embeddings_hint(path)} (to reuse '
            f'its weights with another vocabulary on purpose, load a copy of the folder '
            f'without {hf_import.TOKENIZER_FILE}).')
  saved = saved_run.trained_vocabulary(path)
  if saved is None or (saved[0] != vocabularies.BYTES and not os.path.isfile(saved[0])):
    return None, '', ''
  trained, config = saved
  value = 'None' if trained == vocabularies.BYTES else repr(trained)
  return (trained, f'VOCABULARY_PATH in {config}',
          f'Set --gin.VOCABULARY_PATH="{value}", or give eval and infer --run_dir='
          f"{config.parent}, which reads the run's own configuration (to reuse its weights "
          f'with another vocabulary on purpose, load a copy of the checkpoint folder '
          f'without {config.name} beside it).')


def _embeddings_hint(folder: str) -> str:
  """' and --gin.NUM_EMBEDDINGS=N, ...', N the folder's config.json vocab_size, where it says."""
  try:
    with open(os.path.join(folder, 'config.json'), encoding='utf-8') as f:
      rows = json.load(f).get('vocab_size')
  except (OSError, ValueError, AttributeError):
    return ''
  return f" and --gin.NUM_EMBEDDINGS={rows}, its config.json's vocab_size," if isinstance(
      rows, int) else ''


@functools.lru_cache(maxsize=4)
def _pieces(path: str) -> tuple[str, ...]:
  import sentencepiece as spm
  processor = spm.SentencePieceProcessor(model_file=path)
  return tuple(processor.id_to_piece(i) for i in range(processor.get_piece_size()))


def load_hf_params(path: str, abstract_params: Any, model_config: Any = None) -> Any:
  """Parameters of a Hugging Face T5-family folder (config.json + safetensors), placed.

  Where `model_config` (the model's TransformerConfig) is given, a config.json that
  describes another activation, output layer, position buckets or norm epsilon
  (`hf_import.BEHAVIOUR`) is refused: those weights would load, shapes and all, into a
  model that computes something else.
  """
  from crosstask.models import hf_import
  try:
    config, params = hf_import.load_hf_checkpoint(path)
  except ValueError as e:  # a config field or tensor the folder lacks or has of another shape
    raise faults.CheckpointMismatchError(str(e)) from e
  differences = hf_import.behaviour_differences(config, model_config) if model_config else {}
  if differences:
    listed = '; '.join(f"{field}: the checkpoint's {theirs!r}, the model's {ours!r}"
                       for field, (theirs, ours) in differences.items())
    raise faults.CheckpointMismatchError(
        f'{path}: its config.json describes another model than the model gin file: '
        f'{listed}. Bind the checkpoint\'s settings (e.g. '
        f'--gin.config.TransformerConfig.{next(iter(differences))}=...) or use the '
        'model gin file of the model it was trained as.')
  params = layer_stacking.to_layout(params, layer_stacking.layout(abstract_params))
  try:
    _compare_shapes(_flat(params), _flat(abstract_params), path)
  except faults.CheckpointMismatchError as e:  # most often: another size's model gin file
    raise faults.CheckpointMismatchError(
        f'{e} Its config.json describes d_model {config.d_model}, '
        f'{config.num_encoder_layers}+{config.num_decoder_layers} layers, '
        f'{config.num_heads} heads, {config.vocab_size} embeddings: does the model gin file '
        'describe the same model?') from None
  return _place(abstract_params, params)


def _place(abstract: Any, host_tree: Any) -> Any:
  """Host arrays placed like `abstract`; each host places its own shards (device_put
  cannot reach other hosts)."""
  def place(a, x):
    x = np.asarray(x, a.dtype)
    return jax.make_array_from_callback(a.shape, a.sharding, lambda index: x[index])
  return jax.tree.map(place, abstract, host_tree)


def load_params(path: str, abstract_params: Any, model_vocabularies: Sequence[Any] = (),
                model_config: Any = None) -> Any:
  """Only the parameters of a checkpoint, placed like `abstract_params` (shape-checked).

  `path` is an orbax checkpoint (a step, a model directory, or a 'state' item)
  or a Hugging Face folder, as written by `crosstask.models.hf_import`. Layer
  stacks load whichever way they were saved: scanned (`layers`) or unscanned
  (`layers_0 ..`) parameters are converted to the layout of `abstract_params`.
  The vocabulary the checkpoint was trained with must be each of `model_vocabularies`
  (the model's, `Run.vocabularies`), where the checkpoint says (`check_vocabulary`);
  a Hugging Face folder's config.json must describe `model_config` (`Run.model_config`).
  """
  if os.path.isdir(path) and is_hf_checkpoint(path):
    check_vocabulary(path, model_vocabularies)
    return load_hf_params(path, abstract_params, model_config)
  state_dir = resolve_state_dir(path)
  check_vocabulary(state_dir, model_vocabularies)
  meta = ocp.StandardCheckpointer().metadata(state_dir)
  meta = getattr(meta, 'item_metadata', meta)
  meta = getattr(meta, 'tree', meta)
  has_params_key = isinstance(meta, dict) and 'params' in meta
  saved_layout = layer_stacking.layout(meta['params'] if has_params_key else meta)
  wanted_layout = layer_stacking.layout(abstract_params)
  if saved_layout and wanted_layout and saved_layout != wanted_layout:
    return _load_params_other_layout(state_dir, abstract_params, saved_layout, has_params_key)
  check_shapes(state_dir, abstract_params, 'params' if has_params_key else None)
  target = {'params': abstract_params} if has_params_key else abstract_params
  restore_args = jax.tree.map(
      lambda a: ocp.ArrayRestoreArgs(sharding=a.sharding, global_shape=a.shape, dtype=a.dtype),
      target)
  with _reading(state_dir):
    out = ocp.PyTreeCheckpointer().restore(
        state_dir, args=ocp.args.PyTreeRestore(item=target, restore_args=restore_args,
                                               partial_restore=True))
  return out['params'] if has_params_key else out


def _load_params_other_layout(state_dir: str, abstract_params: Any, saved_layout: str,
                              has_params_key: bool) -> Any:
  """Parameters saved with the other layer layout (scanned vs not), converted and placed.

  Read to host memory in the saved layout, restacked, then placed like
  `abstract_params` (each host places its own shards).
  """
  saved_abstract = layer_stacking.to_layout(
      jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), abstract_params),
      saved_layout)
  check_shapes(state_dir, saved_abstract, 'params' if has_params_key else None)
  target = {'params': saved_abstract} if has_params_key else saved_abstract
  restore_args = jax.tree.map(lambda a: ocp.RestoreArgs(restore_type=np.ndarray, dtype=a.dtype),
                              target)
  with _reading(state_dir):
    out = ocp.PyTreeCheckpointer().restore(
        state_dir, args=ocp.args.PyTreeRestore(item=target, restore_args=restore_args,
                                               partial_restore=True))
  params = layer_stacking.to_layout(out['params'] if has_params_key else out,
                                    layer_stacking.layout(abstract_params))
  return _place(abstract_params, params)


def to_abstract(tree: Any) -> Any:
  return jax.tree.map(
      lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=getattr(x, 'sharding', None)),
      tree)
