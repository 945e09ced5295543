"""SeqIO input pipelines: deterministic for a seed, sharded per host, resumable by count.

SeqIO (and TensorFlow) are imported inside functions so the trainer and the
models import on machines without them; there a run's task is named for the model's
vocabulary all the same, and `plain_task` gives a task module's SeqIO-free form.
"""

import dataclasses
import difflib
from typing import Any, Iterable, Iterator, Mapping, Sequence

import gin
import jax
import numpy as np

from crosstask import task_modules
from crosstask import tracing
# Re-exported: the runtime's callers name them as pipeline's (`data.import_tasks`).
from crosstask.task_modules import (  # pylint: disable=unused-import
    TaskConfigError, import_tasks, module_names)
from crosstask.runtime.sharding import partitioning


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


def first_examples(examples: Iterable[Mapping], count: int) -> tuple[list, bool]:
  """The first `count` of a split's `examples` (NUM_EXAMPLES), and whether it holds more:
  a split of exactly `count` is read whole, and labelled so (`records.subset_split`).

  A rank classification task's examples are (question, option) pairs, each naming its
  question (`rank_question`, `tasks.common.rank`): the last question's remaining options
  are taken too, or a subset would answer that question among some of its options only.
  """
  taken = []
  for example in examples:
    if len(taken) >= count and not _same_question(example, taken[-1]):
      return taken, True
    taken.append(example)
  return taken, False


def _same_question(a: Mapping, b: Mapping) -> bool:
  return 'rank_question' in a and 'rank_question' in b and a['rank_question'] == b['rank_question']


def get_mixture_or_task(name: str):
  """The registered task or mixture, or an error listing the closest names."""
  import seqio
  try:
    return seqio.get_mixture_or_task(name)
  except ValueError:
    known = set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names())
    raise TaskConfigError(
        f"No SeqIO task or mixture named '{name}' (MIXTURE_OR_TASK_NAME / "
        f"DatasetConfig.mixture_or_task_name).{task_modules.close_names(name)} "
        f"{len(known)} are registered; "
        "the module that registers it goes in MIXTURE_OR_TASK_MODULE (e.g. "
        "'crosstask.tasks.<benchmark>', or 'crosstask.tasks.all' for every benchmark)."
    ) from None


def check_split(task_or_mixture, split: str) -> None:
  """A clear error when a task of the mixture lacks the split."""
  tasks = getattr(task_or_mixture, 'tasks', None) or [task_or_mixture]
  for task in tasks:
    splits = list(task.splits)
    if splits and split not in splits:
      raise TaskConfigError(f"Task '{task.name}' has no split '{split}'; it has {splits}.")


def _model_vocabularies(model) -> dict[str, Any]:
  """{'inputs': ..., 'targets': ...}: the vocabularies the model was built with (or None)."""
  return {'inputs': getattr(model, 'input_vocabulary', None),
          'targets': getattr(model, 'output_vocabulary', None)}


def check_vocabulary_fits(model, task_or_mixture=None) -> None:
  """Refuses a run whose tasks tokenize with another vocabulary than the model's.

  Each task feature must use the model's vocabulary for that side (an error names
  both), and no vocabulary may have more ids than the model's embedding rows (an
  error names both numbers).
  """
  from crosstask import vocabularies
  model_vocabs = _model_vocabularies(model)
  members = getattr(task_or_mixture, 'tasks', None)
  tasks = members or ([task_or_mixture] if task_or_mixture is not None else [])
  # What the run names: a mixture's copy for the vocabulary is the one to name, not its
  # task's (the run would train on that task alone).
  mixture = task_or_mixture if members else None
  for task in tasks:
    for key, feature in task.output_features.items():
      ours = model_vocabs.get(key)
      if ours is not None and feature.vocabulary != ours:
        where = f"Mixture '{mixture.name}': task" if mixture else 'Task'
        named = mixture.name if mixture else task.name
        raise TaskConfigError(
            f"{where} '{task.name}' feature '{key}' is tokenized with "
            f"{vocabularies.describe(feature.vocabulary)}, but the model's "
            f"{'input' if key == 'inputs' else 'output'} vocabulary is "
            f"{vocabularies.describe(ours)}. Set VOCABULARY_PATH to the task's vocabulary, "
            f"or use '{vocabularies.task_name(named, ours)}' (the "
            f"{'mixture' if mixture else 'task'} registered for the model's vocabulary by a "
            "register_vocabulary(vocabulary) in the module that defines it, one of "
            "MIXTURE_OR_TASK_MODULE" + (f": factory.register_for_vocabulary(['{named}'], "
                                        "vocabulary) there; README 'Your own task')"
                                        if mixture else ")") + ".")
  config = getattr(getattr(model, 'module', None), 'config', None)
  rows = getattr(config, 'vocab_size', None)
  if rows is None:
    return
  vocabs = [("the model's input vocabulary", model_vocabs['inputs']),
            ("the model's output vocabulary", model_vocabs['targets'])]
  for task in tasks:
    for key, feature in task.output_features.items():
      vocabs.append((f"the vocabulary of task '{task.name}' feature '{key}'",
                     feature.vocabulary))
  for what, vocab in vocabs:
    size = getattr(vocab, 'vocab_size', None)
    if size is not None:
      try:
        vocabularies.embedding_check(int(size), int(rows), what)
      except ValueError as e:
        raise TaskConfigError(str(e)) from None


def task_for_model(model, cfg: DatasetConfig) -> str:
  """The registered name of the run's task or mixture for the model's vocabulary.

  Plain names are tokenized with bytes. For another model vocabulary the name is
  `vocabularies.task_name(name, vocabulary)`, which `register_vocabulary` asks the
  modules of `cfg.module` to register. A name already registered with the model's
  vocabulary is kept.
  """
  import seqio
  import_tasks(cfg.module)
  name = cfg.mixture_or_task_name
  vocab = _model_vocabularies(model)['targets'] or _model_vocabularies(model)['inputs']
  wanted = _name_for_vocabulary(name, vocab)
  if wanted is None:
    return name
  registered = lambda n: n in seqio.TaskRegistry.names() or n in seqio.MixtureRegistry.names()
  if registered(wanted):
    return wanted
  if registered(name) and all(f.vocabulary == vocab for t in _tasks_of(name)
                              for f in t.output_features.values()):
    return name
  register_vocabulary(cfg.module, vocab)
  return wanted if registered(wanted) else name


def _name_for_vocabulary(name: str, vocab: Any) -> str | None:
  """`vocabularies.task_name(name, vocab)`; None for no vocabulary or one with no name."""
  from crosstask import vocabularies
  if vocab is None:
    return None
  try:
    return vocabularies.task_name(name, vocab)
  except ValueError:  # A vocabulary with no name (not bytes, not a model file).
    return None


def register_vocabulary(module: str | Sequence[str] | None, vocabulary: Any) -> None:
  """Registers the tasks of each module of `module` again for `vocabulary`.

  The contract: a task module that can provide its tasks for another vocabulary
  defines `register_vocabulary(vocabulary)` (every crosstask benchmark package
  does), registering each as `vocabularies.task_name(name, vocabulary)`. A module
  without one provides its tasks with their own vocabulary only.
  """
  import importlib
  for name in module_names(module):
    register = getattr(importlib.import_module(name), 'register_vocabulary', None)
    if register is not None:
      register(vocabulary)


PLAIN_TASKS_HOOK = 'plain_tasks'


def plain_task(module: str | Sequence[str] | None, name: str) -> Any:
  """Task `name` (any vocabulary's copy of it) without SeqIO, from the module(s) of
  MIXTURE_OR_TASK_MODULE.

  The contract: a task module whose tasks run without SeqIO defines `plain_tasks()`,
  {plain task name: a function building its `tasks.common.plain.PlainTask`} (CSL's
  arrow tasks). A ValueError names the task and the tasks that do have a plain form.
  """
  import importlib
  from crosstask import vocabularies
  found, unreadable = {}, []
  for module_name in module_names(module):
    try:
      imported = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
      if e.name not in ('seqio', 'tensorflow'):
        raise
      unreadable.append(module_name)
      continue
    found.update(getattr(imported, PLAIN_TASKS_HOOK, dict)())
  build = found.get(vocabularies.base_task_name(name))
  if build is not None:
    return build()
  modules = ', '.join(module_names(module)) or 'None'
  close = difflib.get_close_matches(vocabularies.base_task_name(name), found, n=3, cutoff=0.5)
  listed = (f'{len(found)} of {modules}, e.g. {", ".join(close or sorted(found)[:3])}.' if found
            else f"none of {modules} lists any (crosstask's: the CSL arrow tasks, "
            "csl_<zh|en>_<inputs>_to_<outputs>, of 'crosstask.tasks.csl').")
  if unreadable:
    listed += f' {", ".join(unreadable)} needs SeqIO even to import.'
  raise ValueError(
      f"Task '{name}' has no form that runs without SeqIO and TensorFlow, and neither is "
      f'installed here. Without them crosstask.infer runs the tasks that the '
      f'`{PLAIN_TASKS_HOOK}()` of MIXTURE_OR_TASK_MODULE lists: {listed}')


def _tasks_of(name: str) -> list:
  task = get_mixture_or_task(name)
  return list(getattr(task, 'tasks', None) or [task])


def check_run_dataset(model, cfg: DatasetConfig, *, split_read: bool = False) -> DatasetConfig:
  """The run's DatasetConfig naming the task for the model's vocabulary, checked.

  Raises when the task's vocabulary differs from the model's (naming both) or
  does not fit its embedding table, and, for a dataset the job will read
  (`split_read`), when a task lacks the split: every job calls this before it
  restores or compiles anything. Without SeqIO there is no registry: the name is the
  one SeqIO's would give (`vocabularies.task_name`), only the model's vocabularies are
  checked, and the split against the task's plain form where it has one.
  """
  from crosstask import vocabularies
  if not vocabularies.seqio_installed():
    vocab = _model_vocabularies(model)['targets'] or _model_vocabularies(model)['inputs']
    name = _name_for_vocabulary(cfg.mixture_or_task_name, vocab) or cfg.mixture_or_task_name
    check_vocabulary_fits(model)
    if split_read:
      try:
        task = plain_task(cfg.module, name)
      except ValueError:  # No plain form: the job that reads it says what it needs.
        task = None
      if task is not None:
        check_split(task, cfg.split)
    return dataclasses.replace(cfg, mixture_or_task_name=name)
  cfg = dataclasses.replace(cfg, mixture_or_task_name=task_for_model(model, cfg))
  task = get_mixture_or_task(cfg.mixture_or_task_name)
  check_vocabulary_fits(model, task)
  if split_read:
    check_split(task, cfg.split)
  return cfg


@gin.configurable(module='utils')
def epoch_steps(mixture_or_task_name: str = gin.REQUIRED, split: str = gin.REQUIRED,
                batch_size: int = gin.REQUIRED, epochs: float = 1,
                module: str | Sequence[str] | None = None) -> int:
  """Steps for `epochs` passes over a split at `batch_size` (a short last batch counts).

  For configs that count in epochs (CSL's cross-task runs): gin calls this when the
  job starts, so the split is read by the run, not while the config is parsed. A
  mixture's split holds every example of each of its tasks.
  """
  import_tasks(module)
  n = 0
  for task in _tasks_of(mixture_or_task_name):
    if split not in task.splits:
      continue
    ds = tracing.without_autograph(task.source.get_dataset, split=split, shuffle=False)
    count = int(ds.cardinality())
    n += count if count >= 0 else sum(1 for _ in ds)
  return max(1, round(epochs * -(-n // batch_size))) if n else 0


@gin.configurable(module='utils', allowlist=['packer'])
def feature_converter(pack: bool, packer: str = 'first_fit'):
  """SeqIO's EncDecFeatureConverter; packed rows are filled first-fit-decreasing.

  `packer='seqio'` (gin: `utils.feature_converter.packer = 'seqio'`) gives
  SeqIO's own next-fit packing, batch for batch what T5X would feed.
  """
  import seqio
  from crosstask.runtime.data import packing
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
    ds = tracing.without_autograph(
        seqio.get_dataset,
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


def numpy_batches(ds) -> Iterator[dict[str, np.ndarray]]:
  for batch in ds.as_numpy_iterator():
    yield {k: np.asarray(v) for k, v in batch.items()}


def to_numpy(batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
  """A batch from a tf.data iterator (whose position can be checkpointed) as numpy."""
  return {k: np.asarray(v) for k, v in batch.items()}
