"""One factory for every CSL arrow-prompt task, and registration of all 360.

A task maps an input field set to a disjoint, non-empty output field set
(`摘要+学科->关键词`); 3^5 - 2·2^5 + 1 = 180 such pairs, each in Chinese and
English prompts. Names: `csl_<lang>_<in>_and_<in>_to_<out>_and_<out>` with
fields in canonical order, e.g. `csl_zh_abstract_and_discipline_to_keywords`,
`csl_en_abstract_to_title_and_category`. Identity tasks (`摘要->摘要`, for
rewriting at inference) come from `csl_task(..., register=False)` on demand.

Splits: `train`, `validation` (benchmark `dev`), `test`, `full` (full-dataset
file), and the episode splits of `sampling` (`s<seed>_k<k>`, `s<seed>_meta`,
`s<seed>_validation`, `s<seed>_test`). Nothing is read until a dataset is built.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import seqio
import tensorflow as tf

from crosstask.tasks.csl import fields as F
from crosstask.tasks.csl import readers
from crosstask.tasks.csl import sampling

# Larger than the bundled sample and a CSL episode, so those are shuffled whole.
SHUFFLE_BUFFER_SIZE = 10_000
SPLIT_FILES = {"train": "train", "validation": "dev", "test": "test",
               readers.FULL_SPLIT: readers.FULL_SPLIT}


def _vocabulary() -> seqio.Vocabulary:
  from crosstask.tasks.vocabularies import default_vocabulary  # pylint: disable=g-import-not-at-top
  return default_vocabulary()


def task_name(inputs: Sequence[str], outputs: Sequence[str], lang: str) -> str:
  inputs, outputs = F.check_fields(inputs, "inputs"), F.check_fields(outputs, "outputs")
  return f"csl_{lang}_{'_and_'.join(inputs)}_to_{'_and_'.join(outputs)}"


def io_pairs() -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
  """All (inputs, outputs) pairs: disjoint, both non-empty; 180 of them."""
  pairs = []
  for assign in itertools.product((0, 1, 2), repeat=len(F.FIELDS)):  # 0 unused, 1 in, 2 out
    ins = tuple(f for f, a in zip(F.FIELDS, assign) if a == 1)
    outs = tuple(f for f, a in zip(F.FIELDS, assign) if a == 2)
    if ins and outs:
      pairs.append((ins, outs))
  return sorted(pairs, key=lambda p: (len(p[0]), len(p[1]), p))


# ----------------------------------------------------------------------------- source


def episode_pool(root=None) -> list[dict]:
  """Records sampled by episodes: every split whose four benchmark files exist.

  Read once per root and file state (why: each of a mixture's ~160 tasks builds
  its episode datasets from this same pool); a rewritten file is read again.
  """
  root = root or readers.data_root()
  stamps = []
  for split in ("train", "dev", "test"):
    files = readers.benchmark_files(split, root).values()
    if all(p.is_file() for p in files):
      stamps.append((split, tuple((p.stat().st_mtime_ns, p.stat().st_size) for p in files)))
  return list(_read_pool(root, tuple(stamps)))


@functools.lru_cache(maxsize=4)
def _read_pool(root, stamps) -> tuple[dict, ...]:
  records = tuple(r for split, _ in stamps for r in readers.read_benchmark(split, root))
  if not records:
    raise FileNotFoundError(f"no complete CSL benchmark split under {root} "
                            "(looked for train, dev and test with all four task files)")
  return records


def episode_indices(records: Sequence[dict], inputs, outputs, seed: int, part: str):
  """Record indices of one episode part for the task (inputs, outputs)."""
  split = sampling.split_records(len(records), seed)
  key = task_name(inputs, outputs, "zh")  # same episode for zh and en prompts
  if part == "validation":
    return split.validation
  if part == "test":
    return split.test
  if part == "meta":
    return sampling.meta_indices(split, seed, key)
  classes = None
  if all(f in F.LABEL_FIELDS for f in outputs):
    classes = ["\t".join(r[f] for f in outputs) for r in records]
  return sampling.few_shot_indices(split, int(part[1:]), seed, key, classes)


def _records_for(split: str, inputs, outputs):
  """Records of a split: episode splits are sampled now, file splits stream lazily."""
  episode = sampling.parse_episode_split(split)
  if episode is not None:
    pool = episode_pool()
    return [pool[i] for i in episode_indices(pool, inputs, outputs, *episode)]
  if split not in SPLIT_FILES:
    raise ValueError(f"unknown CSL split {split!r}; use one of {sorted(SPLIT_FILES)} or an "
                     "episode split like 's0_k4'")
  readers.check_split(SPLIT_FILES[split])  # a missing file fails here, not inside tf.data
  return functools.partial(readers.read_records, SPLIT_FILES[split])


def _dataset_fn(split: str, shuffle_files: bool = False, seed=None, *, inputs, outputs):
  del shuffle_files, seed  # one file per split; order is the data's order
  records = _records_for(split, inputs, outputs)

  def gen():
    for r in (records() if callable(records) else records):
      yield {f: F.value_text(f, r[f]) for f in F.FIELDS}

  sig = {f: tf.TensorSpec((), tf.string) for f in F.FIELDS}
  return tf.data.Dataset.from_generator(gen, output_signature=sig)


# ------------------------------------------------------------------ preprocess / metrics


def format_preprocessor(dataset: tf.data.Dataset, *, inputs, outputs, lang) -> tf.data.Dataset:
  """Fields -> {'inputs', 'targets'} text in the layout of `fields` (TF ops only)."""
  head = F.prompt(inputs, outputs, lang) + " "

  def labelled(ex, names):
    parts = []
    for i, f in enumerate(names):
      parts += [F.marker(f, lang, i == 0), ex[f]]
    return parts

  def fn(ex):
    target = ex[outputs[0]] if len(outputs) == 1 else tf.strings.join(labelled(ex, outputs))
    return {"inputs": tf.strings.join([head] + labelled(ex, inputs)), "targets": target}

  return dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE)


def postprocess(output, example=None, is_target=False, *, outputs, lang) -> dict:
  """Generated (or target) text -> {field: value}; lenient on malformed text."""
  del example, is_target
  return F.parse_fields(output, outputs, lang)


def field_metrics(field: str, targets: Sequence, predictions: Sequence) -> dict:
  """The metrics that fit one output field (0-100)."""
  from crosstask import eval as ev  # pylint: disable=g-import-not-at-top
  if field in F.TEXT_FIELDS:
    return {**ev.rouge(targets, predictions), **ev.bleu(targets, predictions)}
  if field == "keywords":
    return {**ev.keyword_f1(targets, predictions), **ev.bpref(targets, predictions)}
  labels = F.CATEGORIES if field == "category" else F.DISCIPLINES
  return {**ev.accuracy(targets, predictions),
          **ev.macro_f1(targets, predictions, label_set=labels)}


def csl_metric(targets: Sequence[dict], predictions: Sequence[dict], *, outputs) -> dict:
  """Per-field metrics; keys prefixed `<field>/` when there are several fields."""
  result = {}
  for f in outputs:
    scores = field_metrics(f, [t[f] for t in targets], [p.get(f, "") for p in predictions])
    prefix = f"{f}/" if len(outputs) > 1 else ""
    result.update({prefix + k: v for k, v in scores.items()})
  return result


# --------------------------------------------------------------------------- factory


def csl_task(inputs: Sequence[str], outputs: Sequence[str], lang: str = "zh", *,
             register: bool = True) -> seqio.Task:
  """The SeqIO task `inputs -> outputs` (identity when inputs == outputs)."""
  if lang not in F.LANGS:
    raise ValueError(f"lang must be one of {F.LANGS}, got {lang!r}")
  inputs, outputs = F.check_fields(inputs, "inputs"), F.check_fields(outputs, "outputs")
  if inputs != outputs and set(inputs) & set(outputs):
    raise ValueError(f"inputs {inputs} and outputs {outputs} overlap; use disjoint sets "
                     "(or equal sets for an identity task)")
  name = task_name(inputs, outputs, lang)
  if name in seqio.TaskRegistry.names():
    return seqio.TaskRegistry.get(name)
  vocab = _vocabulary()
  kw = dict(inputs=inputs, outputs=outputs)
  task = seqio.Task(
      name,
      source=seqio.FunctionDataSource(
          functools.partial(_dataset_fn, **kw),
          splits=list(SPLIT_FILES) + sampling.episode_splits()),
      output_features={
          "inputs": seqio.Feature(vocab, add_eos=True),
          "targets": seqio.Feature(vocab, add_eos=True),
      },
      preprocessors=[
          functools.partial(format_preprocessor, lang=lang, **kw),
          seqio.preprocessors.tokenize,
          seqio.preprocessors.append_eos_after_trim,
      ],
      postprocess_fn=functools.partial(postprocess, outputs=outputs, lang=lang),
      metric_fns=[functools.partial(csl_metric, outputs=outputs)],
      # Seeded by get_dataset(seed=...), so a training order is reproducible.
      shuffle_buffer_size=SHUFFLE_BUFFER_SIZE)
  if register:
    seqio.TaskRegistry.add_provider(name, task)
  return task


def register_all() -> list[str]:
  """Registers the 360 arrow-prompt tasks (no data read); returns their names."""
  return [csl_task(i, o, lang).name for lang in F.LANGS for i, o in io_pairs()]
