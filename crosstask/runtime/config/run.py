"""The Run: what a job runs with, resolved once where its entry point starts.

Every fact the train, eval, infer, embed and compile jobs share is settled here, in
one call, before any data is read or program compiled: the model with the platform
profile's choices filled in, each dataset naming the task registered for the model's
vocabulary, a Partitioner that has checked the batch divides over its data axes,
and the abstract parameters (traced once, with the logical axes the optimizer
factors by) and PRNG key that restoring and compiling start from.
The jobs then take the Run rather than deciding any of this again.
"""

import dataclasses
import functools
from typing import Any, Mapping

import flax.linen as nn
import jax

from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import platform
from crosstask.runtime.data import batching
from crosstask.runtime.data import pipeline as data
from crosstask.runtime.report import console
from crosstask.runtime.sharding import partitioning


@dataclasses.dataclass(frozen=True)
class Run:
  """A resolved run. `datasets` maps a role ('train', 'train_eval', 'infer_eval',
  'eval', 'infer') to its DatasetConfig, each naming the task for the model's
  vocabulary; `batch_size` is the global batch the programs compile for and
  `lengths` the task feature lengths ({'inputs': N, 'targets': M}); `train_steps`
  the steps a run file sets, where a job that runs none still reports on them (the
  compile's predicted hours; None: not set to a number)."""
  model: Any
  partitioner: partitioning.Partitioner
  profile: platform.Profile
  batch_size: int
  lengths: Mapping[str, int]
  num_microbatches: int = 1
  pack: bool = False
  datasets: Mapping[str, data.DatasetConfig] = dataclasses.field(default_factory=dict)
  train_steps: int | None = None

  def dataset(self, role: str) -> data.DatasetConfig | None:
    return self.datasets.get(role)

  @property
  def vocabularies(self) -> tuple[Any, Any]:
    """The model's input and output vocabularies (None where it has none): a checkpoint
    that carries its own tokenizer is loaded only into a model that reads the same."""
    return (getattr(self.model, 'input_vocabulary', None),
            getattr(self.model, 'output_vocabulary', None))

  @property
  def model_config(self) -> Any:
    """The network's TransformerConfig (None for a model without one): what a Hugging
    Face checkpoint's config.json must describe to be loaded into it."""
    return getattr(getattr(self.model, 'module', None), 'config', None)

  @property
  def input_shapes(self) -> dict[str, tuple[int, int]]:
    """The model's input shapes: the global batch at the converted feature lengths."""
    return {'encoder_input_tokens': (self.batch_size, self.lengths['inputs']),
            'decoder_input_tokens': (self.batch_size, self.lengths['targets'])}

  @functools.cached_property
  def boxed(self) -> Any:
    """`boxed_params` of the run's model, traced once for the optimizer, the Trainer
    and restoring alike rather than by each."""
    return boxed_params(self.model, self.input_shapes)

  @functools.cached_property
  def param_axes(self) -> Any:
    """Each parameter's logical axes, which the optimizer factors by
    (`optimizers.create_optimizer(param_axes=run.param_axes)`)."""
    return nn.get_partition_spec(self.boxed)

  def abstract_params(self) -> tuple[Any, Any]:
    """(abstract parameters carrying their shardings, the shardings) to restore into.

    Shapes come from `jax.eval_shape` of the initializer and placements from the
    parameters' logical axes: nothing is allocated or compiled, no optimizer involved.
    """
    with self.partitioner.context():
      shardings = self.partitioner.logical_to_sharding(self.boxed)
    abstract = jax.tree.map(lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh),
                            nn.unbox(self.boxed), shardings)
    return abstract, shardings


def abstract_key(impl: str | None = None) -> jax.ShapeDtypeStruct:
  """A key of PRNG implementation `impl` (None: the configured default), as shapes
  only, never a buffer: lowering on an eager key would place it on a device."""
  return jax.eval_shape(lambda: jax.random.key(0, impl=impl))


def boxed_params(model: Any, input_shapes: Mapping[str, tuple[int, ...]]) -> Any:
  """The parameters' shapes with their logical axes (`nn.Partitioned`), from shapes only.

  Parameter shapes do not depend on `input_shapes`; the initializer needs some.
  """
  return jax.eval_shape(lambda rng: model.get_initial_variables(rng, input_shapes)['params'],
                        abstract_key())


# The roles whose split a job always reads. A train run's evaluation datasets may be
# configured and never read (no eval period), or read only where a mixture's task has the
# split (CSL's cross-task meta mixtures: 's0_validation' in some of their tasks).
_ALWAYS_READ = frozenset({'train', 'eval', 'infer'})


def resolve(model: Any, partitioner: partitioning.Partitioner | None = None, *,
            datasets: Mapping[str, data.DatasetConfig | None] | None = None,
            batch_size: int | None = None, lengths: Mapping[str, int] | None = None,
            num_microbatches: int = 1, pack: bool | None = None,
            pads_batch: bool = False, train_steps: int | None = None,
            profile: platform.Profile | None = None) -> Run:
  """The Run of `model` on `partitioner` (None: the gin-configured default).

  `batch_size`, `lengths` and `pack` default to the first dataset's. A job that
  pads its last batch (eval, infer, embed: `pads_batch`) rounds the batch up to
  the data axes; any other has it checked, microbatches included. `profile` is the
  platform profile of the mesh's devices (or the one gin names) unless given: a
  benchmark compares XLA options by naming one.
  """
  partitioner = partitioner or partitioning.Partitioner()
  profile = platform.for_mesh(partitioner.mesh) if profile is None else profile
  model = platform.resolve_model(model, profile)
  given = {role: cfg for role, cfg in (datasets or {}).items() if cfg is not None}
  for cfg in given.values():
    _check_lengths(cfg.task_feature_lengths)
  matched = {role: data.check_run_dataset(model, cfg, split_read=role in _ALWAYS_READ)
             for role, cfg in given.items()}
  _say_renamed(given, matched)
  first = next(iter(matched.values()), None)
  if batch_size is None:
    batch_size = first.batch_size
  if lengths is None:
    lengths = dict(first.task_feature_lengths)
  _check_lengths(lengths)
  if pack is None:
    pack = bool(first.pack) if first is not None else False
  gin_utils.check_count('BATCH_SIZE', batch_size, 1)
  if pads_batch:
    batch_size = batching.global_batch_size(batch_size, partitioner.data_size)
  else:
    partitioner.check_batch(batch_size, num_microbatches=num_microbatches)
  return Run(model=model, partitioner=partitioner, profile=profile, batch_size=batch_size,
             lengths=dict(lengths), num_microbatches=num_microbatches, pack=pack,
             datasets=matched, train_steps=train_steps)


_FEATURES = ('inputs', 'targets')


def _check_lengths(lengths: Any) -> None:
  """An encoder-decoder run needs a whole positive length for both of its features; a
  mistake is named before anything is read (a bare 64 or a misspelt key failed deep in
  the job, a quoted '64' as "no positive length")."""
  example = "an encoder-decoder run needs both, e.g. {'inputs': 512, 'targets': 64}"
  if not isinstance(lengths, Mapping):
    raise gin_utils.GinConfigError(
        f"TASK_FEATURE_LENGTHS={lengths!r}: expected each feature's length; {example}")
  problems = []
  for feature in _FEATURES:
    value = lengths.get(feature)
    if feature not in lengths:
      problems.append(f'no length for {feature!r}')
    elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
      problems.append(f'{feature!r} is {value!r}, not a whole number of at least 1'
                      + (' (write it unquoted)' if isinstance(value, str) else ''))
  if problems:
    others = [k for k in lengths if k not in _FEATURES]
    if others:
      problems.append(f'{", ".join(map(repr, others))} is no feature of this run (its '
                      "features: 'inputs', 'targets')")
    raise gin_utils.GinConfigError(
        f'TASK_FEATURE_LENGTHS={dict(lengths)}: {"; ".join(problems)}; {example}')


def _say_renamed(given: Mapping[str, data.DatasetConfig],
                 matched: Mapping[str, data.DatasetConfig]) -> None:
  """Says once per task (not once per role that reads it) where the run reads the copy
  registered for the model's vocabulary instead of the task named."""
  renamed = {(given[role].mixture_or_task_name, cfg.mixture_or_task_name)
             for role, cfg in matched.items()}
  for name, copy in sorted(renamed):
    if name != copy:
      console.say(f"Task '{name}' is read as '{copy}', its copy tokenized with the model's "
                  'vocabulary.')
