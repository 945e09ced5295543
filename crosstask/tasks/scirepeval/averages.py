"""The paper's averages: 27 numbers, 7 in-train and 20 out-of-train.

Inferred from the paper (no code publishes it): per-task scores are averaged
plainly; few-shot tasks score mean(full, k1, k2); Paper-Reviewer Matching the
mean of its P@5/P@10 numbers; the four SciDocs citation tasks contribute MAP and
nDCG as two numbers each. Out-of-train = CLF 4 + RGN 3 + PRX 11 + SRCH 2 (the
PRX composition — 4 SciDocs x 2 + RELISH + PRM + S2AND — is the one guess).
In-train = MeSH, FoS, Citation Count, Publication Year, Same Author, HIC, Search.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crosstask.tasks.scirepeval import benchmark as B

IN_TRAIN_COUNT, OUT_OF_TRAIN_COUNT = 7, 20
FORMAT_COUNTS = {"in_train": {"CLF": 2, "RGN": 2, "PRX": 2, "SRCH": 1},
                 "out_of_train": {"CLF": 4, "RGN": 3, "PRX": 11, "SRCH": 2}}
TWO_NUMBER_TASKS = ("SciDocs Cite", "SciDocs CoCite", "SciDocs CoView", "SciDocs CoRead")

# Table 2 (In-Train, Out-of-Train, Average). The last row's label is lost in the
# paper's text; the body calls it the Adapters + MTL CTRL ensemble.
TABLE_2 = {
    "E5-base-v2": (55.7, 71.2, 67.2), "MPNet": (53.0, 72.8, 67.7),
    "Instructor-base": (52.7, 69.0, 64.8), "OpenAI Ada 002": (56.3, 71.9, 67.8),
    "SciBERT": (51.5, 60.2, 58.0), "SPECTER": (54.7, 72.0, 67.5), "SciNCL": (55.6, 73.4, 68.8),
    "SPECTER2 Base": (56.3, 73.6, 69.1), "MTL CLS": (60.2, 72.1, 69.0),
    "MTL CTRL": (62.4, 73.1, 70.4), "Adapters": (62.4, 73.9, 70.9), "PALs": (61.8, 72.6, 69.9),
    "Fusion": (62.4, 73.9, 70.9), "Adapters + MTL CTRL": (62.9, 74.1, 71.2),
}
# Appendix D (other base models), same columns.
APPENDIX_D = {
    "SPECTER + MTL CLS": (60.0, 71.6, 68.6), "SPECTER + MTL CTRL": (61.9, 72.7, 69.9),
    "SPECTER + Adapters": (61.5, 73.2, 70.2), "SPECTER + ensemble": (62.2, 73.6, 70.6),
    "SciNCL + MTL CLS": (60.1, 71.9, 68.8), "SciNCL + MTL CTRL": (62.1, 72.9, 70.1),
    "SciNCL + Adapters": (61.9, 73.8, 70.7), "SciNCL + ensemble": (62.5, 74.0, 71.0),
}


def combined_average(in_train: float, out_of_train: float) -> float:
  """The overall average from the two parts: all 27 numbers weigh the same."""
  return (IN_TRAIN_COUNT * in_train + OUT_OF_TRAIN_COUNT * out_of_train) / (
      IN_TRAIN_COUNT + OUT_OF_TRAIN_COUNT)


def from_format_averages(formats: Mapping[str, float], part: str) -> float:
  """A part's average from its per-format averages, weighted by numbers per format."""
  counts = FORMAT_COUNTS[part]
  return sum(counts[f] * formats[f] for f in counts) / sum(counts.values())


def task_numbers(spec: B.TaskSpec, result: Mapping) -> dict[str, float]:
  """The number(s) a task contributes to the averages, from its official-shape result."""
  if spec.name in TWO_NUMBER_TASKS:
    return {f"{spec.name}/{m}": float(result[m]) for m in ("map", "ndcg")}
  if spec.name == "Paper-Reviewer Matching":
    return {spec.name: float(np.mean([float(v) for v in result.values()]))}
  metric = spec.metrics[0]
  if spec.few_shot:
    parts = [result["complete"][metric]] + [r["results"][metric] for r in result["few_shot"]]
    if len(parts) != 1 + len(spec.few_shot):
      raise ValueError(f"{spec.name}: expected {len(spec.few_shot)} few-shot results, got "
                       f"{len(parts) - 1}")
    return {spec.name: float(np.mean(parts))}
  return {spec.name: float(result[metric])}


def aggregate(results: Mapping[str, Mapping]) -> dict:
  """Per-number, per-format and per-part averages of an official results JSON.

  Tasks absent from `results` (or marked `not_run`, e.g. S2AND) are listed under
  `missing`; the averages then cover fewer than 27 numbers and `complete` is False.
  A few-shot task scored without its few-shot runs (`score --no_few_shot`) has no
  paper number (the mean over the complete and few-shot results): it is listed under
  `missing` too, and by name under `without_few_shot`.
  """
  numbers: dict[str, dict[str, float]] = {"in_train": {}, "out_of_train": {}}
  by_format: dict[str, dict[str, list[float]]] = {"in_train": {}, "out_of_train": {}}
  missing, without_few_shot = [], []
  for spec in B.TASKS:
    if not spec.evaluated:
      continue
    part = "in_train" if spec.in_train else "out_of_train"
    result = results.get(spec.name)
    if result is None or (isinstance(result, Mapping) and result.get("not_run")):
      missing.append(spec.name)
      continue
    if spec.few_shot and "complete" not in result:
      missing.append(spec.name)
      without_few_shot.append(spec.name)
      continue
    for label, value in task_numbers(spec, result).items():
      numbers[part][label] = value
      by_format[part].setdefault(spec.format, []).append(value)
  out = {"numbers": numbers, "missing": missing, "without_few_shot": without_few_shot}
  for part in ("in_train", "out_of_train"):
    values = list(numbers[part].values())
    out[part] = float(np.mean(values)) if values else float("nan")
    out[f"{part}_count"] = len(values)
    out[f"{part}_formats"] = {f: float(np.mean(v)) for f, v in by_format[part].items()}
  all_values = [v for part in numbers.values() for v in part.values()]
  out["average"] = float(np.mean(all_values)) if all_values else float("nan")
  out["complete"] = len(all_values) == IN_TRAIN_COUNT + OUT_OF_TRAIN_COUNT
  return out
