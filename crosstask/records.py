"""The one reader and writer of `metrics.jsonl`: a line per (step, task) of scalar metrics.

Eval runs, training-time evaluation and `crosstask.score` append these lines;
the reports, best-checkpoint selection, the demo and `crosstask.results` read
them here, so a new field (the task fingerprint) is added in one place. A line
is `{"step", "task", "metrics": {name: float}}`, plus `"fingerprint"` (a short
hash of the task's definition), `"source"` (what produced the numbers) and
`"split"` when known, `"data"` (a short hash of the examples scored), and
`"ci95": {name: [low, high]}`, each metric's 95% interval (a bootstrap over the
examples) where it was computed. Pure Python:
importing it pulls in no framework.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
from collections.abc import Iterable, Mapping

FILENAME = "metrics.jsonl"

_SUBSET = re.compile(r"^(?P<split>.+)\[:(?P<count>\d+)\]$")
# The name infer gives a task's predictions on a split: `<task>-<split>.jsonl`, and on
# its first N examples `<task>-<split>_first<N>.jsonl` (`[:N]` would be a glob to a
# shell; files of older versions carry it, and still read as the subset).
INFERENCE_FILE = re.compile(r"^(?P<task>.+)-(?P<split>[^-]+)\.jsonl$")
_FIRST = re.compile(r"^(?P<split>.+)_first(?P<count>\d+)$")


def inference_file(path: str | os.PathLike) -> tuple[str, str] | None:
  """(task, split label) from an inference output's name (`inference_filename`), else None."""
  match = INFERENCE_FILE.match(pathlib.Path(path).name)
  if not match:
    return None
  first = _FIRST.match(match["split"])
  return match["task"], (f"{first['split']}[:{first['count']}]" if first else match["split"])


def inference_filename(task: str, split: str) -> str:
  """Infer's file name for `task`'s predictions on a split label (`subset_split`):
  `<task>-validation.jsonl`, or for `validation[:8]` `<task>-validation_first8.jsonl`."""
  subset = _SUBSET.match(split)
  if subset:
    return f"{task}-{subset['split']}_first{subset['count']}.jsonl"
  return f"{task}-{split}.jsonl"


def subset_split(split: str, count: int, *, whole: bool) -> str:
  """The split's label for the first `count` examples read from it: its name where they
  are the `whole` split (NUM_EXAMPLES unset, or the split holds no more), else TFDS's
  slice notation 'validation[:N]', so a subset's numbers never pass for the whole split's
  and the whole split's are never labelled a subset."""
  return split if whole else f"{split}[:{count}]"


def base_split(label: str) -> str:
  """The split a label names: 'validation' for 'validation[:100]'."""
  match = _SUBSET.match(label)
  return match["split"] if match else label


def subset_count(label: str | None) -> int | None:
  """N of a subset's label 'validation[:N]'; None for a whole split."""
  match = _SUBSET.match(label or "")
  return int(match["count"]) if match else None


def subset_log_dir(num_examples: int) -> str:
  """The folder an eval of the first `num_examples` keeps its inference logs in (beside
  its records), so they never overwrite the whole split's."""
  return f"first_{num_examples}"


def subset_of_log_dir(name: str) -> int | None:
  """`num_examples` of a `subset_log_dir` name; None for any other folder."""
  match = re.fullmatch(r"first_(\d+)", name)
  return int(match[1]) if match else None


def log_owner(path: str | os.PathLike) -> pathlib.Path:
  """The folder whose metrics.jsonl (and run) an inference file belongs to: its own, or for
  a subset's log in `first_<N>/` (NUM_EXAMPLES, EVALUATOR_NUM_EXAMPLES) the one above."""
  folder = pathlib.Path(os.fspath(path)).parent
  return folder.parent if subset_of_log_dir(folder.name) is not None else folder


@dataclasses.dataclass(frozen=True)
class Record:
  """One line: a task's metrics at a checkpoint step; `where` is 'file:line'."""
  step: int
  task: str
  metrics: Mapping[str, float]
  fingerprint: str | None = None
  source: str | None = None
  split: str | None = None
  where: str = ""
  ci95: Mapping[str, tuple[float, float]] | None = None
  data: str | None = None  # the hash of the examples scored (`fingerprint.data_digest`)

  def to_json(self) -> dict:
    out = {"step": int(self.step), "task": self.task,
           "metrics": {k: float(v) for k, v in self.metrics.items()}}
    if self.fingerprint:
      out["fingerprint"] = self.fingerprint
    if self.source:
      out["source"] = self.source
    if self.split:
      out["split"] = self.split
    if self.data:
      out["data"] = self.data
    if self.ci95:
      out["ci95"] = {k: [float(low), float(high)] for k, (low, high) in self.ci95.items()}
    return out


def metrics_file(path: str | os.PathLike) -> pathlib.Path:
  """`path` itself, or `<path>/metrics.jsonl` when it is a folder (or names no .jsonl file)."""
  path = pathlib.Path(os.fspath(path))
  if path.is_dir() or (not path.exists() and path.suffix != ".jsonl"):
    return path / FILENAME
  return path


def _record(value, where: str) -> Record:
  if not isinstance(value, Mapping):
    raise ValueError(f"{where}: not a crosstask metrics line (expected a JSON object)")
  try:
    step, task, metrics = int(value["step"]), value["task"], value["metrics"]
  except (KeyError, TypeError, ValueError) as e:
    raise ValueError(f"{where}: not a crosstask metrics line (field {e!s} missing or bad)") from None
  if not isinstance(task, str) or not isinstance(metrics, Mapping):
    raise ValueError(f"{where}: not a crosstask metrics line ('task' must be a string, 'metrics' an "
                     "object)")
  clean = {}
  for key, v in metrics.items():
    if isinstance(v, bool) or not isinstance(v, (int, float)):
      raise ValueError(f"{where}: metric {key!r} of task {task!r} is not a number: {v!r}")
    clean[str(key)] = float(v)
  return Record(step, task, clean, value.get("fingerprint"), value.get("source"),
                value.get("split"), where, _ci95(value.get("ci95"), task, where),
                value.get("data"))


def _ci95(value, task: str, where: str) -> dict[str, tuple[float, float]] | None:
  if value is None:
    return None
  bad = not isinstance(value, Mapping) or any(
      not isinstance(v, list) or len(v) != 2
      or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v)
      for v in value.values())
  if bad:
    raise ValueError(f"{where}: 'ci95' of task {task!r} must map each metric to [low, high] "
                     f"numbers, not {value!r}")
  return {str(k): (float(v[0]), float(v[1])) for k, v in value.items()}


def read(path: str | os.PathLike) -> list[Record]:
  """Every record of a metrics.jsonl (or of the one in a folder), in file order."""
  file = metrics_file(path)
  if not file.is_file():
    raise FileNotFoundError(f"no {FILENAME} at {file} (an eval run, a training run with "
                            "EVAL_PERIOD > 0, or crosstask.score writes it)")
  out = []
  with open(file, encoding="utf-8") as f:
    for lineno, line in enumerate(f, start=1):
      if not line.strip():
        continue
      where = f"{file}:{lineno}"
      try:
        value = json.loads(line)
      except ValueError as e:
        raise ValueError(f"{where}: not JSON ({e})") from None
      out.append(_record(value, where))
  return out


def read_many(paths: Iterable[str | os.PathLike]) -> list[Record]:
  return [r for path in paths for r in read(path)]


def latest(records: Iterable[Record]) -> dict[str, Record]:
  """task -> its record of the highest step (a later line wins a tie: a re-score)."""
  out: dict[str, Record] = {}
  for r in records:
    if r.task not in out or r.step >= out[r.task].step:
      out[r.task] = r
  return out


def at_step(records: Iterable[Record], step: int) -> dict[str, Record]:
  """task -> its record at `step` (the last such line)."""
  return {r.task: r for r in records if r.step == step}


def matches(key: str, metric: str) -> bool:
  """`metric` names `key` exactly or as its last part (`rougeL` ~ `title/rougeL`)."""
  return key == metric or key.endswith("/" + metric)


def by_step(records: Iterable[Record], metric: str) -> dict[int, list[float]]:
  """{step: values of `metric` over the tasks reporting it}, steps ascending."""
  out: dict[int, list[float]] = {}
  for r in records:
    for key, value in r.metrics.items():
      if matches(key, metric):
        out.setdefault(r.step, []).append(value)
  return dict(sorted(out.items()))


def recorded(path: str | os.PathLike, record: Record) -> Record | None:
  """The line of the metrics.jsonl at `path` (a file or folder) that already says what
  `record` says: the last record of its task, step and split, where it is `record` but for
  its place. None where there is none, or it says otherwise (a metric fixed since)."""
  file = metrics_file(path)
  if not file.is_file():
    return None
  key = (record.task, record.step, record.split)
  last = next((r for r in reversed(read(file)) if (r.task, r.step, r.split) == key), None)
  return last if last is not None and last.to_json() == record.to_json() else None


def append(path: str | os.PathLike, records: Iterable[Record]) -> pathlib.Path:
  """Appends `records` to a metrics.jsonl (or the one in a folder); returns the file."""
  file = metrics_file(path)
  file.parent.mkdir(parents=True, exist_ok=True)
  lines = [json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in records]
  with open(file, "a", encoding="utf-8") as f:
    f.writelines(lines)
  return file
