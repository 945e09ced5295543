"""`arrow_task`: a schema, a reader and a field choice make a registered seqio.Task.

Each task holds one concrete vocabulary (bytes unless given). The same tasks and
mixtures for another vocabulary are registered on demand under names that carry it
(`register_for_vocabulary`, `vocabularies.task_name`), so a registered name always
tokenizes the same way.

The task's text, postprocessor and metric are `plain.arrow`'s (the same task without
SeqIO): its source lays records out with `layout.example` (prompt + labelled
inputs -> target fields), its postprocessor parses text back into fields
leniently, and its metric scores each output field with the field's own
`metric_fn`, keyed `<field>/<metric>` when there are several outputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import seqio

from crosstask import vocabularies
from crosstask.tasks.common import plain
from crosstask.tasks.common import prompts as prompt_variants
from crosstask.tasks.common.schema import Schema


TOKENIZE = (seqio.preprocessors.tokenize, seqio.preprocessors.append_eos_after_trim)


def text_features(vocabulary: seqio.Vocabulary | None = None, *, targets_eos: bool = True
                  ) -> dict[str, seqio.Feature]:
  """`inputs` and `targets` over one vocabulary (bytes for None), both ending in EOS unless
  `targets_eos` is False (targets that are a decoder prompt, continued by the model)."""
  vocab = vocabulary if vocabulary is not None else vocabularies.get(vocabularies.BYTES)
  return {"inputs": seqio.Feature(vocab, add_eos=True),
          "targets": seqio.Feature(vocab, add_eos=targets_eos)}


def get_or_register_task(name: str, *, source: seqio.DataSource,
                         preprocessors: Sequence[Callable] = TOKENIZE,
                         output_features: Mapping[str, seqio.Feature] | None = None,
                         postprocess_fn: Callable | None = None,
                         metric_fns: Sequence[Callable] = (),
                         shuffle_buffer_size: int | None = seqio.SHUFFLE_BUFFER_SIZE,
                         register: bool = True) -> seqio.Task:
  """The task registered as `name`; else a new seqio.Task, registered unless told not to.

  Registration is idempotent: whatever else is passed, a registered name gives the
  registered task. `output_features` None: `text_features()` (bytes, both with EOS).
  """
  if register and name in seqio.TaskRegistry.names():
    return seqio.TaskRegistry.get(name)
  task = seqio.Task(
      name, source=source,
      output_features=dict(output_features) if output_features is not None else text_features(),
      preprocessors=list(preprocessors), postprocess_fn=postprocess_fn,
      metric_fns=list(metric_fns), shuffle_buffer_size=shuffle_buffer_size)
  if register:
    seqio.TaskRegistry.add_provider(name, task)
  return task


def arrow_task(name: str, *, schema: Schema, inputs: Sequence[str], outputs: Sequence[str],
               lang: str, read_split: Callable[[str], object], splits: Sequence[str],
               vocabulary: seqio.Vocabulary | None = None,
               metric_fns: Sequence[Callable] | None = None,
               postprocess_fn: Callable | None = None,
               to_example: Callable[[dict], dict] | None = None,
               extra_features: Sequence[str] = (),
               preprocessors_after_tokenize: Sequence[Callable] = (),
               shuffle_buffer_size: int | None = 10_000,
               register: bool = True,
               prompt: str | None = None) -> seqio.Task:
  """The task `inputs -> outputs` over `schema` records; registered unless told not to.

  Registering a name that is already registered returns the registered task.
  `vocabulary=None` means bytes, the vocabulary of every plain task name; the same
  task for another vocabulary comes from `register_for_vocabulary`.
  `prompt` replaces the arrow prompt in front of the labelled inputs.
  """
  spec = plain.arrow(name, schema=schema, inputs=inputs, outputs=outputs, lang=lang,
                    read_split=read_split, splits=splits, metric_fns=metric_fns,
                    postprocess_fn=postprocess_fn, to_example=to_example,
                    extra_features=extra_features, prompt=prompt)
  return get_or_register_task(
      name,
      # The plain form's source function: one function, whichever form reads the task.
      source=seqio.FunctionDataSource(spec.source.dataset_fn, splits=list(spec.splits)),
      output_features=text_features(vocabulary),
      preprocessors=[*TOKENIZE, *preprocessors_after_tokenize],
      postprocess_fn=spec.postprocess_fn,
      metric_fns=spec.metric_fns,
      # Seeded by get_dataset(seed=...), so a training order is reproducible.
      shuffle_buffer_size=shuffle_buffer_size,
      register=register)


def arrow_task_prompts(name: str, *, prompts: Sequence[str], **task_kwargs
                       ) -> tuple[list[str], str]:
  """Registers `<name>.p0`, `<name>.p1`, ... (one per prompt) and the mixture `<name>.prompts`.

  The variants share everything but the prompt text (`task_kwargs` go to
  `arrow_task`), so their scores differ only by the wording. Returns (variant
  names, mixture name).
  """
  prompts = prompt_variants.check_prompts(prompts, name)
  names = [arrow_task(prompt_variants.variant_name(name, k), prompt=text, **task_kwargs).name
           for k, text in enumerate(prompts)]
  return names, register_mixture(prompt_variants.mixture_name(name), names)


def register_mixture(name: str, tasks: Sequence[str], default_rate: float = 1.0) -> str:
  """Registers a mixture of registered tasks (idempotent); returns its name."""
  if name not in seqio.MixtureRegistry.names():
    seqio.MixtureRegistry.add(name, list(tasks), default_rate=default_rate)
  return name


def _variant(name: str, vocabulary: seqio.Vocabulary) -> str:
  """Registers `name` (a task or mixture) for `vocabulary` unless it is; returns the name."""
  new = vocabularies.task_name(name, vocabulary)
  if new in seqio.TaskRegistry.names() or new in seqio.MixtureRegistry.names():
    return new
  if name in seqio.MixtureRegistry.names():
    mixture = seqio.MixtureRegistry.get(name)
    seqio.MixtureRegistry.add(new, [(_variant(child, vocabulary), rate)
                                    for child, rate in mixture.rate_per_task_name.items()])
    return new
  task = seqio.TaskRegistry.get(name)
  features = {k: dataclasses.replace(f, vocabulary=vocabulary)
              for k, f in task.output_features.items()}
  seqio.TaskRegistry.add_provider(new, task.replace(name=new, output_features=features))
  return new


def register_for_vocabulary(names: Sequence[str], vocabulary: seqio.Vocabulary | None
                            ) -> list[str]:
  """The registered tasks and mixtures `names`, registered again for `vocabulary`.

  Each copy is the task with only its features' vocabulary changed, named
  `vocabularies.task_name(name, vocabulary)`; bytes (or None) keeps the plain names.
  Idempotent; returns the names in the order given.
  """
  if vocabulary is None or vocabularies.is_bytes(vocabulary):
    return [vocabularies.base_task_name(n) for n in names]
  return [_variant(vocabularies.base_task_name(n), vocabulary) for n in names]
