"""Prompt variants of one task: the `<base>.p<k>` names, and the summary over them.

Why: one prompt's score says little about a model when another wording of the
same request scores differently. A task that has several prompts registers one
task per prompt, `<base>.p0`, `<base>.p1`, ... (same data, postprocessor and
metrics; only the prompt text differs) and the mixture `<base>.prompts` over
them; a results table groups the columns by `<base>` and reports the mean and
the spread over prompts. Imports no TensorFlow or SeqIO.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from crosstask.tasks.common import report

_VARIANT = re.compile(r"^(?P<base>.+)\.p(?P<index>0|[1-9]\d*)$")
MIXTURE_SUFFIX = ".prompts"


def variant_name(base: str, index: int) -> str:
  """`<base>.p<index>`, the name of prompt `index` of task `base`."""
  if not isinstance(index, int) or isinstance(index, bool) or index < 0:
    raise ValueError(f"prompt index must be an int >= 0, got {index!r}")
  return f"{base}.p{index}"


def mixture_name(base: str) -> str:
  """`<base>.prompts`, the mixture of all prompt variants of `base`."""
  return base + MIXTURE_SUFFIX


def split_variant(name: str) -> tuple[str, int | None]:
  """(`base`, k) for a name `<base>.p<k>`, else (name, None)."""
  match = _VARIANT.match(name)
  if match is None:
    return name, None
  return match["base"], int(match["index"])


def check_prompts(prompts: Sequence[str], task: str) -> tuple[str, ...]:
  """The prompts as a tuple; a clear error for an empty list or a bad prompt.

  A prompt must be non-empty, one line (SentencePiece drops newlines, and a
  prompt that decodes differently would not be the prompt that was trained)
  and distinct from the others (two equal prompts would count one wording twice).
  """
  if isinstance(prompts, str) or not prompts:
    raise ValueError(f"task {task!r}: prompts must be a non-empty list of strings, "
                     f"got {prompts!r}")
  prompts = tuple(prompts)
  for k, text in enumerate(prompts):
    if not isinstance(text, str) or not text.strip() or "\n" in text or text != text.strip():
      raise ValueError(f"task {task!r}: prompt {k} must be a non-empty single line without "
                       f"leading or trailing spaces, got {text!r}")
  for k, text in enumerate(prompts):
    if prompts.index(text) != k:
      raise ValueError(f"task {task!r}: prompt {k} repeats prompt {prompts.index(text)} "
                       f"({text!r})")
  return prompts


def summarize(scores: Mapping[str, float]) -> dict[str, dict[str, float]]:
  """Scores keyed by task name -> {base: {mean, std, min, max, prompts}} over prompt variants.

  Only names of the form `<base>.p<k>` are grouped; `std` is the population
  standard deviation, as `report.mean_std` gives over seeds.
  """
  groups: dict[str, list[float]] = {}
  for name, value in scores.items():
    base, index = split_variant(name)
    if index is not None:
      groups.setdefault(base, []).append(float(value))
  out = {}
  for base, values in groups.items():
    mean, std = report.mean_std(values)
    out[base] = {"mean": mean, "std": std, "min": min(values),
                 "max": max(values), "prompts": float(len(values))}
  return out
