"""Guards against training on the data a FewCLUE or CSLDCP score is reported on.

FewCLUE's evaluation sets are carved from CLUE's train/dev (FewCLUE OCNLI
test_public lies inside OCNLI dev), and CSLDCP's abstracts come from the CSL
corpus, whose full file holds CSLDCP test abstracts with their discipline. So:

* `check_run` refuses a run that trains on `clue_<t>` (any split) or on a
  CSL-corpus task and reports `fewclue_<t>` / `fewclue_csldcp` on test_public;
* `check_mixture` refuses such a mixture outright (it trains and evaluates on
  the same task list);
* the runtime calls `check_run` as a job starts, with the task names the run
  trains on (or its checkpoint was trained on) and the task and split it reports:
  this module reads no configuration;
* `shared_texts` / `exclude_shared` find and drop records by normalised-text
  hash when data has to be mixed anyway.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Iterable, Sequence

from crosstask import vocabularies

# FewCLUE task -> prefixes of the task names whose data it was carved from.
SOURCES = {
    "tnews": ("clue_tnews",), "iflytek": ("clue_iflytek",), "ocnli": ("clue_ocnli",),
    "csl": ("clue_csl",), "cluewsc": ("clue_cluewsc2020",), "chid": ("clue_chid",),
    # The CSL corpus: CLUE's keyword task and the 360 `csl_*` arrow tasks.
    "csldcp": ("csl_", "clue_csl"),
}
REPORT_SPLITS = ("test_public",)


class LeakageError(ValueError):
  """A run or mixture would train on the data it reports."""


def _fewclue_task(name: str) -> str | None:
  if not name.startswith("fewclue_"):
    return None
  rest = name[len("fewclue_"):]
  return next((t for t in sorted(SOURCES, key=len, reverse=True)
               if rest == t or rest.startswith(t + "_")), None)


def _trains_on(name: str, prefix: str) -> bool:
  if prefix.endswith("_"):
    return name.startswith(prefix)
  return name == prefix or name.startswith(prefix + "_")


def conflicts(train_tasks: Iterable[str], report_tasks: Iterable[str]) -> list[tuple[str, str]]:
  """(training task, reported task) pairs that share data."""
  train_tasks = list(train_tasks)
  out = []
  for reported in report_tasks:
    task = _fewclue_task(reported)
    for prefix in SOURCES.get(task, ()):
      out += [(t, reported) for t in train_tasks if _trains_on(t, prefix)]
  return out


def task_names(mixture_or_tasks: str | Sequence[str]) -> list[str]:
  """Task names of a registered mixture (recursively), a task name, or a list of them."""
  names = [mixture_or_tasks] if isinstance(mixture_or_tasks, str) else list(mixture_or_tasks)
  out = []
  for name in names:
    try:
      import seqio  # pylint: disable=g-import-not-at-top
      mixture = seqio.MixtureRegistry.get(name) if name in seqio.MixtureRegistry.names() else None
    except ImportError:
      mixture = None
    out += [t.name for t in mixture.tasks] if mixture is not None else [name]
  # A task registered for another vocabulary reads the same data as its plain name.
  return [vocabularies.base_task_name(n) for n in out]


def check_run(train: str | Sequence[str], report: str | Sequence[str],
              report_split: str) -> None:
  """Raises LeakageError when `report` on `report_split` would score data `train` saw."""
  if report_split not in REPORT_SPLITS:
    return
  found = conflicts(task_names(train), task_names(report))
  if found:
    pairs = ", ".join(f"{a} -> {b}" for a, b in found[:5])
    raise LeakageError(
        f"refusing to report {report_split} after training on the data it was carved from "
        f"({len(found)} pairs): {pairs}. Train on the FewCLUE splits only (FewCLUE protocol), "
        "or drop shared texts with leakage.exclude_shared.")


def check_mixture(name: str, tasks: Sequence[str]) -> None:
  """A mixture trains and evaluates on the same tasks, so it must not hold a conflict."""
  found = conflicts(tasks, tasks)
  if found:
    raise LeakageError(f"mixture {name!r} mixes FewCLUE tasks with the data their "
                       f"test_public comes from: {found[:5]}")


def text_key(text: str) -> str:
  """Hash of the NFKC text without whitespace (robust to spacing and width variants)."""
  norm = "".join(unicodedata.normalize("NFKC", text).split())
  return hashlib.sha1(norm.encode("utf-8")).hexdigest()


def shared_texts(a: Iterable[str], b: Iterable[str]) -> set[str]:
  """Keys of the texts occurring (normalised) in both `a` and `b`."""
  return {text_key(t) for t in a} & {text_key(t) for t in b}


def exclude_shared(records: Iterable[dict], against: Iterable[str],
                   text_of: Callable[[dict], str]) -> list[dict]:
  """`records` without those whose text occurs in `against` (e.g. CSL full file vs CSLDCP)."""
  banned = {text_key(t) for t in against}
  return [r for r in records if text_key(text_of(r)) not in banned]
