"""SeqIO input pipelines: deterministic for a seed, sharded per host, resumable by count.

SeqIO (and TensorFlow) are imported inside functions so the trainer and the
models import on machines without them.
"""

import dataclasses
import difflib
from typing import Any, Iterator, Mapping, Sequence

import gin
import jax
import numpy as np

from crosstask.runtime import partitioning


@gin.configurable(module='utils')
@dataclasses.dataclass(frozen=True)
class DatasetConfig:
  """What T5X's `utils.DatasetConfig` holds; `batch_size` is the global batch."""
  mixture_or_task_name: str
  task_feature_lengths: Mapping[str, int]
  split: str
  batch_size: int
  shuffle: bool
  seed: int | None
  use_cached: bool = False
  pack: bool = False
  module: str | Sequence[str] | None = None


def import_tasks(module: str | Sequence[str] | None = None) -> None:
  """Imports the module(s) that register the run's tasks (T5X's DatasetConfig.module).

  Nothing else is imported: registration is opt-in, e.g. 'crosstask.tasks.<benchmark>'.
  """
  import importlib
  # A task module may register gin configurables (CSL's scenario helpers); it is
  # often first imported here, after the run's config was parsed and locked.
  with gin.unlock_config():
    for name in [module] if isinstance(module, str) else (module or ()):
      importlib.import_module(name)


def get_mixture_or_task(name: str):
  """The registered task or mixture, or an error listing the closest names."""
  import seqio
  try:
    return seqio.get_mixture_or_task(name)
  except ValueError:
    known = sorted(set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names()))
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    hint = f' Did you mean: {", ".join(close)}?' if close else ''
    raise ValueError(
        f"No SeqIO task or mixture named '{name}' (MIXTURE_OR_TASK_NAME / "
        f"DatasetConfig.mixture_or_task_name).{hint} {len(known)} are registered; "
        "the module that registers it goes in MIXTURE_OR_TASK_MODULE (e.g. "
        "'crosstask.tasks.<benchmark>', or 'crosstask.tasks.all' for every benchmark)."
    ) from None


def check_split(task_or_mixture, split: str) -> None:
  """A clear error when a task of the mixture lacks the split."""
  tasks = getattr(task_or_mixture, 'tasks', None) or [task_or_mixture]
  for task in tasks:
    splits = list(task.splits)
    if splits and split not in splits:
      raise ValueError(f"Task '{task.name}' has no split '{split}'; it has {splits}.")


def check_vocabulary_fits(model, task_or_mixture=None) -> None:
  """Refuses a run whose vocabularies have more ids than the model's embedding rows.

  Both the model's vocabularies and those of the task features are checked,
  and the error names both numbers.
  """
  config = getattr(getattr(model, 'module', None), 'config', None)
  rows = getattr(config, 'vocab_size', None)
  if rows is None:
    return
  from crosstask.tasks import vocabularies
  vocabs = [('the model\'s input vocabulary', getattr(model, 'input_vocabulary', None)),
            ('the model\'s output vocabulary', getattr(model, 'output_vocabulary', None))]
  tasks = getattr(task_or_mixture, 'tasks', None) or (
      [task_or_mixture] if task_or_mixture is not None else [])
  for task in tasks:
    for key, feature in task.output_features.items():
      vocabs.append((f"the vocabulary of task '{task.name}' feature '{key}'",
                     feature.vocabulary))
  for what, vocab in vocabs:
    size = getattr(vocab, 'vocab_size', None)
    if size is not None:
      vocabularies.embedding_check(int(size), int(rows), what)


def check_run_vocabulary(model, cfg: DatasetConfig) -> None:
  """`check_vocabulary_fits` for the task or mixture a run's DatasetConfig names."""
  import_tasks(cfg.module)
  check_vocabulary_fits(model, get_mixture_or_task(cfg.mixture_or_task_name))


@gin.configurable(module='utils', allowlist=['packer'])
def feature_converter(pack: bool, packer: str = 'first_fit'):
  """SeqIO's EncDecFeatureConverter; packed rows are filled first-fit-decreasing.

  `packer='seqio'` (gin: `utils.feature_converter.packer = 'seqio'`) gives
  SeqIO's own next-fit packing, batch for batch what T5X would feed.
  """
  import seqio
  from crosstask.runtime import packing
  if packer not in packing.PACKERS:
    raise ValueError(f'utils.feature_converter: packer={packer!r}; '
                     f'expected one of {packing.PACKERS}')
  if pack and packer == 'first_fit':
    return packing.FirstFitEncDecFeatureConverter(pack=True)
  return seqio.EncDecFeatureConverter(pack=pack)


def per_host_batch_size(global_batch: int) -> int:
  n = jax.process_count()
  if global_batch % n:
    raise ValueError(f'batch_size {global_batch} does not divide over {n} hosts.')
  return global_batch // n


def get_dataset(cfg: DatasetConfig, *, num_epochs: int | None = None,
                skip_batches: int = 0, drop_remainder: bool = True,
                host_input: partitioning.HostInput | None = None):
  """Batched, feature-converted tf.data for this host; skips `skip_batches` batches.

  `host_input` (from `Partitioner.host_input`) says which shard of the examples this
  host reads and how many rows a step: those its devices hold in the mesh. Without
  it, each process reads its own 1/process_count of the examples and batch.
  The order depends only on `cfg.seed`, so skipping the batches a run has already
  consumed puts a resumed run at exactly the same place in the stream.
  """
  if host_input is None:
    shard, num_shards = jax.process_index(), jax.process_count()
    batch_size = per_host_batch_size(cfg.batch_size)
  else:
    shard, num_shards = host_input.shard_index, host_input.num_shards
    batch_size = host_input.batch_size
  import seqio
  import_tasks(cfg.module)
  task = get_mixture_or_task(cfg.mixture_or_task_name)
  check_split(task, cfg.split)
  try:
    ds = seqio.get_dataset(
        cfg.mixture_or_task_name,
        task_feature_lengths=dict(cfg.task_feature_lengths),
        dataset_split=cfg.split,
        shuffle=cfg.shuffle,
        num_epochs=num_epochs,
        feature_converter=feature_converter(cfg.pack),
        shard_info=seqio.ShardInfo(index=shard, num_shards=num_shards),
        use_cached=cfg.use_cached,
        seed=cfg.seed)
  except ValueError as e:
    if 'Shuffling is disallowed' in str(e):
      raise ValueError(f'{e} Set --gin.SHUFFLE=False (DatasetConfig.shuffle) for '
                       f"'{cfg.mixture_or_task_name}'.") from e
    raise
  ds = ds.batch(batch_size, drop_remainder=drop_remainder)
  if skip_batches:
    ds = ds.skip(skip_batches)
  return ds


def model_input_shapes(cfg: DatasetConfig) -> dict[str, tuple[int, int]]:
  """Shapes the model is initialised with: the global batch at the converted lengths."""
  lengths = feature_converter(False).get_model_feature_lengths(dict(cfg.task_feature_lengths))
  return {k: (cfg.batch_size, v) for k, v in lengths.items()
          if k in ('encoder_input_tokens', 'decoder_input_tokens')}


def numpy_batches(ds) -> Iterator[dict[str, np.ndarray]]:
  for batch in ds.as_numpy_iterator():
    yield {k: np.asarray(v) for k, v in batch.items()}


def to_numpy(batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
  """A batch from a tf.data iterator (whose position can be checkpointed) as numpy."""
  return {k: np.asarray(v) for k, v in batch.items()}


def pad_batch(batch: Mapping[str, Any], size: int) -> tuple[dict[str, np.ndarray], int]:
  """Zero-pads the leading dimension to `size`; returns the real row count too."""
  n = len(next(iter(batch.values())))
  out = {}
  for k, v in batch.items():
    v = np.asarray(v)
    if n < size:
      v = np.concatenate([v, np.zeros((size - n,) + v.shape[1:], v.dtype)])
    out[k] = v
  return out, n
