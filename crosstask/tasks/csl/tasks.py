"""The 360 CSL arrow-prompt tasks, built by `common.factory.arrow_task`.

A task maps an input field set to a disjoint, non-empty output field set
(`摘要+学科->关键词`); 3^5 - 2·2^5 + 1 = 180 such pairs, each in Chinese and
English prompts. Names: `csl_<lang>_<in>_and_<in>_to_<out>_and_<out>` with
fields in canonical order, e.g. `csl_zh_abstract_and_discipline_to_keywords`,
`csl_en_abstract_to_title_and_category`. Identity tasks (`摘要->摘要`, for
rewriting at inference) come from `csl_task(..., register=False)` on demand.

Splits: `train`, `validation` (benchmark `dev`), `test`, `full` (full-dataset
file), and the episode splits of `sampling` (`s<seed>_k<k>`, `s<seed>_meta`,
`s<seed>_validation`, `s<seed>_test`). Nothing is read until a dataset is built.

`plain_task` is the same task without SeqIO (`common.plain`); this module imports
SeqIO only when a SeqIO task is built, so the readers and `plain_task` work without it.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from crosstask.tasks.common import layout
from crosstask.tasks.common import plain
from crosstask.tasks.csl import readers
from crosstask.tasks.csl import sampling
from crosstask.tasks.csl import schema as S

if TYPE_CHECKING:
  import seqio

# Larger than the bundled sample and a CSL episode, so those are shuffled whole.
SHUFFLE_BUFFER_SIZE = 10_000
SPLIT_FILES = {"train": "train", "validation": "dev", "test": "test",
               readers.FULL_SPLIT: readers.FULL_SPLIT}
LANGS = S.LANGS


def task_name(inputs: Sequence[str], outputs: Sequence[str], lang: str) -> str:
  inputs, outputs = S.SCHEMA.check(inputs, "inputs"), S.SCHEMA.check(outputs, "outputs")
  return f"csl_{lang}_{'_and_'.join(inputs)}_to_{'_and_'.join(outputs)}"


def io_pairs() -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
  """All (inputs, outputs) pairs: disjoint, both non-empty; 180 of them."""
  pairs = []
  for assign in itertools.product((0, 1, 2), repeat=len(S.FIELDS)):  # 0 unused, 1 in, 2 out
    ins = tuple(f for f, a in zip(S.FIELDS, assign) if a == 1)
    outs = tuple(f for f, a in zip(S.FIELDS, assign) if a == 2)
    if ins and outs:
      pairs.append((ins, outs))
  return sorted(pairs, key=lambda p: (len(p[0]), len(p[1]), p))


# ------------------------------------------------------------------------ episodes


def episode_pool(root=None) -> list[dict]:
  """Records sampled by episodes: every split whose four benchmark files exist.

  Read once per root and file state (why: each of a mixture's ~160 tasks builds
  its episode datasets from this same pool); a rewritten file is read again.
  """
  root = readers.data_root() if root is None else readers.common.as_path(root)
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
  rest = len(records) - sampling.N_VAL - sampling.N_TEST  # what the two pools share
  if rest >= 2:  # fewer: `split_records` refuses
    few, meta = rest // 2, rest - rest // 2
    why = (f"the {len(records)} CSL records under {root} leave each seed a few-shot pool of "
           f"{few} and a meta pool of {meta} (the paper's data: thousands)")
    if meta < sampling.META_SIZE:
      sampling.warn_cut("each CSL task's meta set (s<seed>_meta)", meta, sampling.META_SIZE, why)
    k = max(sampling.K_SHOTS)
    if few < k:
      sampling.warn_cut(f"each CSL task's {k}-shot set (s<seed>_k{k})", few, k, why)
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
  if all(f in S.LABEL_FIELDS for f in outputs):
    classes = ["\t".join(r[f] for f in outputs) for r in records]
  return sampling.few_shot_indices(split, int(part[1:]), seed, key, classes)


def read_split(split: str, *, inputs, outputs) -> list[dict]:
  """Records of a split: episode splits are sampled from the pool, file splits read."""
  episode = sampling.parse_episode_split(split)
  if episode is not None:
    pool = episode_pool()
    return [pool[i] for i in episode_indices(pool, inputs, outputs, *episode)]
  if split not in SPLIT_FILES:
    raise ValueError(f"unknown CSL split {split!r}; use one of {sorted(SPLIT_FILES)} or an "
                     "episode split like 's0_k4'")
  return list(readers.read_records(SPLIT_FILES[split]))


# --------------------------------------------------------------------------- tasks


def _arrow_arguments(inputs: Sequence[str], outputs: Sequence[str], lang: str) -> dict:
  """What `csl_task` and `plain_task` of (inputs, outputs, lang) are both built from."""
  if lang not in LANGS:
    raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
  inputs = S.SCHEMA.check(inputs, "inputs")
  outputs = S.SCHEMA.check(outputs, "outputs")
  if inputs != outputs and set(inputs) & set(outputs):
    raise ValueError(f"inputs {inputs} and outputs {outputs} overlap; use disjoint sets "
                     "(or equal sets for an identity task)")
  return dict(name=task_name(inputs, outputs, lang), schema=S.SCHEMA, inputs=inputs,
              outputs=outputs, lang=lang,
              read_split=functools.partial(read_split, inputs=inputs, outputs=outputs),
              splits=list(SPLIT_FILES) + sampling.episode_splits())


def csl_task(inputs: Sequence[str], outputs: Sequence[str], lang: str = "zh", *,
             prompt: str | None = None, name: str | None = None,
             register: bool = True) -> seqio.Task:
  """The SeqIO task `inputs -> outputs` (identity when inputs == outputs).

  With `prompt`, the same task (records, fields, metrics) under a prompt of your own in
  place of the arrow prompt, registered as `name`: every plain name is taken by the
  paper's prompt's task.
  """
  from crosstask.tasks.common import factory  # pylint: disable=g-import-not-at-top
  arguments = _arrow_arguments(inputs, outputs, lang)
  if prompt is not None:
    if not name or name == arguments["name"]:
      raise ValueError(f"a prompt of your own needs a task name of your own (name=...): "
                       f"{arguments['name']!r} is the paper's prompt's task")
    arguments.update(name=name, prompt=prompt)
  elif name is not None:
    raise ValueError("name= names a task with a prompt of your own (prompt=...); without "
                     f"one the task is {arguments['name']!r}")
  return factory.arrow_task(**arguments, shuffle_buffer_size=SHUFFLE_BUFFER_SIZE,
                            register=register)


def plain_task(inputs: Sequence[str], outputs: Sequence[str], lang: str = "zh"
               ) -> plain.PlainTask:
  """`csl_task(inputs, outputs, lang)` without SeqIO: the same records, text and metrics."""
  return plain.arrow(**_arrow_arguments(inputs, outputs, lang))


def plain_tasks() -> dict[str, Callable[[], plain.PlainTask]]:
  """`register()`'s 360 task names -> a function building that task's `plain_task`."""
  return {task_name(i, o, lang): functools.partial(plain_task, i, o, lang)
          for lang in LANGS for i, o in io_pairs()}


# Prompt variants (`<task>.p<k>`, see common/prompts.py). p0 is the paper's arrow
# prompt; the CSL paper defines one prompt per task, so p1 and p2 are crosstask's
# natural-language wordings of the same request, to measure how much a score owes
# to the prompt. Inputs after the prompt stay labelled as in every CSL task.
PROMPT_VARIANTS = {
    (("abstract",), ("title",)): ("为下面的论文摘要写一个标题", "这篇摘要对应的论文标题是什么？"),
    (("abstract",), ("category",)): ("这篇论文属于哪个学科门类？", "判断下面的论文摘要所属的门类"),
    (("abstract",), ("discipline",)): ("这篇论文属于哪个学科？", "判断下面的论文摘要所属的学科"),
}


def register_prompt_variants(lang: str = "zh") -> tuple[list[str], list[str]]:
  """Registers `<task>.p0..p2` and `<task>.prompts` for each task of PROMPT_VARIANTS.

  Returns (variant task names, mixture names).
  """
  from crosstask.tasks.common import factory  # pylint: disable=g-import-not-at-top
  names, mixtures = [], []
  for (inputs, outputs), wordings in PROMPT_VARIANTS.items():
    base = task_name(inputs, outputs, lang)
    variants, mixture = factory.arrow_task_prompts(
        base, prompts=[layout.prompt(S.SCHEMA, inputs, outputs, lang), *wordings],
        schema=S.SCHEMA, inputs=inputs, outputs=outputs, lang=lang,
        read_split=functools.partial(read_split, inputs=inputs, outputs=outputs),
        splits=list(SPLIT_FILES) + sampling.episode_splits(),
        shuffle_buffer_size=SHUFFLE_BUFFER_SIZE)
    names += variants
    mixtures.append(mixture)
  return names, mixtures


def register() -> list[str]:
  """Registers the 360 arrow-prompt tasks (no data read); returns their names."""
  return [csl_task(i, o, lang).name for lang in LANGS for i, o in io_pairs()]
