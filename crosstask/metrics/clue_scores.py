"""The CLUE and FewCLUE aggregate scores, as their leaderboards compute them.

* CLUE score (paper Table 2 "Avg"): the unweighted mean of nine task scores,
  accuracy everywhere except CMRC 2018, which contributes its EM.
* The CLUE README splits it in two boards: the classification score (AFQMC,
  TNEWS', IFLYTEK', CMNLI, CLUEWSC2020, CSL; the "v1" board with CMNLI where the
  current one has OCNLI) and the MRC score (CMRC 2018 EM, ChID, C3).
* FewCLUE score: the unweighted mean over its nine tasks of each task's mean
  over the five splits k = 0..4 (few_all is reported beside it, not in it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

CLUE_TASKS = ("afqmc", "tnews", "iflytek", "ocnli", "cluewsc2020", "csl",
              "cmrc2018", "chid", "c3")
CLASSIFICATION_TASKS = ("afqmc", "tnews", "iflytek", "cmnli", "cluewsc2020", "csl")
MRC_TASKS = ("cmrc2018", "chid", "c3")
FEWCLUE_TASKS = ("eprstmt", "bustm", "ocnli", "csldcp", "tnews", "cluewsc", "iflytek",
                 "csl", "chid")
FEWCLUE_SPLITS = 5


def _mean_of(scores: Mapping[str, float], tasks: Sequence[str], what: str) -> float:
  missing = [t for t in tasks if t not in scores]
  if missing:
    raise ValueError(f"{what} needs a score for every one of {list(tasks)}; missing {missing}")
  values = [float(scores[t]) for t in tasks]
  bad = [t for t, v in zip(tasks, values) if math.isnan(v) or not 0 <= v <= 100]
  if bad:
    raise ValueError(f"{what}: scores must be on a 0-100 scale; got "
                     + ", ".join(f"{t}={scores[t]!r}" for t in bad))
  return sum(values) / len(values)


def clue_score(scores: Mapping[str, float], tasks: Sequence[str] = CLUE_TASKS) -> float:
  """Mean of the task scores (CMRC 2018: EM); `tasks` picks a board."""
  return _mean_of(scores, tasks, "clue_score")


def classification_score(scores: Mapping[str, float]) -> float:
  """The CLUE README classification board (with CMNLI)."""
  return _mean_of(scores, CLASSIFICATION_TASKS, "classification_score")


def mrc_score(scores: Mapping[str, float]) -> float:
  """The CLUE README MRC board: CMRC 2018 EM, ChID and C3 accuracy."""
  return _mean_of(scores, MRC_TASKS, "mrc_score")


def split_mean(values: float | Sequence[float], task: str = "") -> float:
  """A task's FewCLUE number: the mean over k = 0..4, or an already averaged float."""
  if isinstance(values, (int, float)):
    return float(values)
  values = [float(v) for v in values]
  if len(values) != FEWCLUE_SPLITS:
    raise ValueError(f"fewclue_score: {task or 'a task'} has {len(values)} split scores; "
                     f"the protocol averages exactly {FEWCLUE_SPLITS} (k = 0..4)")
  return sum(values) / len(values)


def fewclue_score(scores: Mapping[str, float | Sequence[float]]) -> float:
  """Mean over the nine FewCLUE tasks of each task's k = 0..4 mean."""
  return _mean_of({t: split_mean(v, t) for t, v in scores.items()}, FEWCLUE_TASKS,
                  "fewclue_score")
