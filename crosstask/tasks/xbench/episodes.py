"""Episode datasets of a scenario's members, and the leakage check run before any is read.

A member's source task is read through its own source (its layout and extra
features, not yet tokenized), then sampled by index with `common.sampling`'s
seeded streams: meta sets and k-shot sets are prefixes of one order per
(seed, task), so 1-shot ⊂ 2-shot ⊂ 4-shot, and the same seed always picks the
same examples. The wrapped task keeps the source's preprocessors,
postprocessor and metrics, so a score means the same as the source task's.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import numpy as np
import seqio
import tensorflow as tf

from crosstask import paths
from crosstask.tasks.common import factory
from crosstask.tasks.common import sampling
from crosstask import tracing
from crosstask.tasks.xbench import scenarios as S

# Stream purposes beside common.sampling's (0 permutation, 1 few-shot, 2 meta, 3 k_shot).
_EVAL_PURPOSE = 4
# A text segment shorter than this (after normalisation) is a label or a stock
# phrase, not an example's content, and is not compared.
MIN_SEGMENT_CHARS = 16
_SEGMENT_BREAKS = re.compile(r"[:;\n]")


class LeakageError(ValueError):
  """An evaluation example of a scenario occurs in its meta-training set."""


@functools.lru_cache(maxsize=64)
def _read_source(task_name: str, split: str, data_dir: str | None) -> tuple[dict, ...]:
  del data_dir  # part of the cache key: readers resolve the root at read time
  task = seqio.get_mixture_or_task(task_name)
  if split not in task.splits:
    raise ValueError(f"xbench: source task {task_name!r} has no split {split!r} "
                     f"(it has {sorted(task.splits)})")
  ds = tracing.without_autograph(task.source.get_dataset, split=split, shuffle=False)
  return tuple({k: bytes(v).decode("utf-8") if isinstance(v, bytes) else str(v)
                for k, v in ex.items()} for ex in ds.as_numpy_iterator())


def source_examples(task_name: str, split: str) -> tuple[dict, ...]:
  """The source task's examples of `split` (text features), read once per data root."""
  root = paths.data_dir()
  return _read_source(task_name, split, None if root is None else str(root))


def _stream_key(scenario: S.Scenario, member: S.Member) -> str:
  return f"{scenario.name}/{member.task}/{member.train_split}"


def _warn_if_cut(scenario: S.Scenario, member: S.Member, part: str, split: str, got: int,
                 wanted: int, per_class: bool = False) -> None:
  if got < wanted:
    sampling.warn_cut(
        f"xbench scenario {scenario.name!r}: {member.task}'s {part} set", got, wanted,
        f"its source split {split!r} has fewer than {part[1:]} examples of some class"
        if per_class else f"its source split {split!r} holds {got}")


def _select(scenario: S.Scenario, member: S.Member, seed: int, part: str) -> tuple[str, list[int]]:
  """(source split, indices of its examples) of one episode part."""
  key = _stream_key(scenario, member)
  if part == "meta":
    pool = source_examples(member.task, member.train_split)
    _warn_if_cut(scenario, member, part, member.train_split, len(pool), S.META_SIZE)
    order = sampling.rng(seed, 2, key).permutation(len(pool))
    return member.train_split, [int(i) for i in order[:S.META_SIZE]]
  if part in ("validation", "test"):
    split = member.validation_split if part == "validation" else member.test_split
    pool = source_examples(member.task, split)
    size = S.N_VAL if part == "validation" else S.N_TEST
    _warn_if_cut(scenario, member, part, split, len(pool), size)
    order = sampling.rng(seed, _EVAL_PURPOSE, f"{key}/{part}").permutation(len(pool))
    return split, sorted(int(i) for i in order[:size])
  k = int(part[1:])
  pool = source_examples(member.task, member.train_split)
  classes = [ex["targets"] for ex in pool] if member.per_class else None
  split = sampling.RecordSplit(test=np.zeros(0, int), validation=np.zeros(0, int),
                               few_pool=np.arange(len(pool)), meta_pool=np.zeros(0, int))
  chosen = [int(i) for i in sampling.few_shot_indices(split, k, seed, key, classes)]
  _warn_if_cut(scenario, member, part, member.train_split, len(chosen),
               k * len(set(classes)) if classes else k, per_class=bool(classes))
  return member.train_split, chosen


def normalised_segments(example: dict) -> set[str]:
  """The content of an example as comparable text: NFKC, no whitespace, split at field marks.

  Inputs and targets are cut at colons, semicolons (the layout's field markers,
  in either width) and newlines, so a value laid out under different labels
  and prompts by two benchmarks still yields the same segment; the inputs' first
  piece (arrow prompt and first label) is dropped, as every example of a task shares it.
  """
  out = set()
  for feature in ("inputs", "targets"):
    text = unicodedata.normalize("NFKC", example.get(feature, ""))
    pieces = _SEGMENT_BREAKS.split(text)
    if feature == "inputs" and len(pieces) > 1:
      pieces = pieces[1:]  # the prompt and the first label: the same for every example
    for piece in pieces:
      piece = "".join(piece.split())
      if len(piece) >= MIN_SEGMENT_CHARS:
        out.add(piece)
  return out


@functools.lru_cache(maxsize=32)
def _checked(scenario_name: str, seed: int, data_dir: str | None) -> bool:
  del data_dir
  check_episode(S.scenario(scenario_name), seed)
  return True


def check_episode(scenario: S.Scenario, seed: int) -> None:
  """Raises LeakageError naming the example when a validation or test example of a
  few-shot task shares a text segment with the seed's meta-training set."""
  seen: dict[str, tuple[str, str, int]] = {}
  for member in scenario.meta:
    split, indices = _select(scenario, member, seed, "meta")
    pool = source_examples(member.task, split)
    for i in indices:
      for segment in normalised_segments(pool[i]):
        seen.setdefault(segment, (member.task, split, i))
  for member in scenario.few:
    for part in ("validation", "test"):
      split, indices = _select(scenario, member, seed, part)
      pool = source_examples(member.task, split)
      for i in indices:
        for segment in sorted(normalised_segments(pool[i])):
          if segment in seen:
            task, meta_split, j = seen[segment]
            raise LeakageError(
                f"xbench scenario {scenario.name!r}, seed {seed}: evaluation example {i} of "
                f"task {member.task!r} split {split!r} (episode split "
                f"{sampling.episode_split_name(seed, part)!r}) shares text with meta-training "
                f"example {j} of task {task!r} split {meta_split!r}: {segment[:80]!r}. "
                "Choose meta tasks whose data does not contain the evaluation set.")


def episode_examples(scenario: S.Scenario, stage: str, member: S.Member, split: str
                     ) -> list[dict]:
  """The examples of one episode split of a member (checked for leakage first)."""
  name = scenario.task_name(stage, member.task)
  episode = sampling.parse_episode_split(split)
  if episode is None:
    raise ValueError(f"xbench task {name!r}: split {split!r} is not an episode split like "
                     "'s0_meta', 's0_k4', 's0_validation', 's0_test'")
  seed, part = episode
  if (part == "meta") != (stage == "meta"):
    raise ValueError(f"xbench task {name!r} is a {stage} task of scenario {scenario.name!r}; "
                     f"split {split!r} belongs to the other stage")
  root = paths.data_dir()
  _checked(scenario.name, seed, None if root is None else str(root))
  source_split, indices = _select(scenario, member, seed, part)
  pool = source_examples(member.task, source_split)
  return [pool[i] for i in indices]


def _dataset_fn(split: str, shuffle_files: bool = False, seed=None, *, scenario: str,
                stage: str, index: int) -> tf.data.Dataset:
  del shuffle_files, seed  # episodes are seeded by their split name; task shuffling is seeded
  sc = S.scenario(scenario)
  member = sc.members(stage)[index]
  examples = episode_examples(sc, stage, member, split)
  # Feature names from the source's training pool, so an empty (0-shot) episode has them too.
  pool = source_examples(member.task, member.train_split)
  if not pool:
    raise ValueError(f"xbench task {sc.task_name(stage, member.task)!r}: source task "
                     f"{member.task!r} split "
                     f"{member.train_split!r} has no examples")
  keys = tuple(pool[0])
  return tf.data.Dataset.from_tensor_slices(
      {k: tf.constant([ex[k] for ex in examples], dtype=tf.string, shape=[len(examples)])
       for k in keys})


def stage_splits(stage: str) -> list[str]:
  """The episode splits a stage's tasks have: `s<seed>_meta` for meta, the rest for few."""
  return [split for split in S.episode_splits()
          if (sampling.parse_episode_split(split)[1] == "meta") == (stage == "meta")]


def register_member(scenario: S.Scenario, stage: str, index: int) -> str:
  """Registers `xbench_<scenario>_<stage>_<task>` over a member's source task (no data read)."""
  member = scenario.members(stage)[index]
  name = scenario.task_name(stage, member.task)
  source = seqio.get_mixture_or_task(member.task)
  return factory.get_or_register_task(
      name,
      source=seqio.FunctionDataSource(
          functools.partial(_dataset_fn, scenario=scenario.name, stage=stage, index=index),
          splits=stage_splits(stage)),
      preprocessors=source.preprocessors,
      output_features=source.output_features,
      postprocess_fn=source.postprocess_fn,
      metric_fns=[*source.predict_metric_fns, *source.score_metric_fns],
      shuffle_buffer_size=source.shuffle_buffer_size).name
