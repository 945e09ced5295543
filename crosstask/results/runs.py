"""A run folder as the results table sees it: its records, its model and its seed.

A run's number for a task is its latest step's (or a chosen step's), per task and
split; a task is named without its vocabulary (`vocabularies.base_task_name`), so a
SentencePiece run's `clue_afqmc.spiece` is CLUE's AFQMC in the table and its scores.
What model and seed made it comes from the configuration saved beside the records
(`saved_run.CONFIG_FILES`; an eval run's config names the checkpoint, the training
config beside that names the seed): runs whose config lines differ only in seeds and
paths are seeds of one model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib
import re
from collections.abc import Mapping, Sequence

import numpy as np

from crosstask import records as R
from crosstask import vocabularies
from crosstask.runtime.config import saved_run

# A run without a saved config is keyed by its folder: it pools with no other run.
_NO_CONFIG = "path:"
# Lines of a run's config that do not make it a different model: where it lives, its seed.
_NOT_MODEL = re.compile(r"seed|MODEL_DIR|OUTPUT_DIR|CHECKPOINT_PATH|model_dir|output_dir|"
                        r"^\s*path = ", re.I)


@dataclasses.dataclass
class Run:
  """One RUN_DIR: its chosen records per (task, split), and what model and seed made them."""
  path: pathlib.Path
  records: dict[tuple[str, str], R.Record]
  seed: str | None
  model: str
  config_key: str
  macros: dict[str, str] = dataclasses.field(default_factory=dict)
  # Per (task, split): each metric on the bootstrap resamples of the record's examples
  # (`intervals.with_intervals`), what a benchmark aggregate's joint interval is drawn from.
  replicates: dict[tuple[str, str], dict[str, np.ndarray]] = dataclasses.field(
      default_factory=dict)
  # Records of one (task, split) and step that give other numbers (a beam-search eval of
  # the step training evaluated greedily): the table shows the newest, and says so.
  disagreements: list[str] = dataclasses.field(default_factory=list)
  # Every step the run's files hold, whichever `step` was chosen: what a step that matches
  # nothing is told it could have been.
  steps: set[int] = dataclasses.field(default_factory=set)
  # Per (task, split): why its saved predictions could not be resampled, where they were
  # found (its task module cannot be imported here).
  no_ci95: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)

  @property
  def has_config(self) -> bool:
    """Whether a saved configuration says what made the records (a baseline's has none)."""
    return not self.config_key.startswith(_NO_CONFIG)


def _config_texts(run_dir: pathlib.Path) -> list[str]:
  folders = sorted({p.parent for name in saved_run.CONFIG_FILES for p in run_dir.rglob(name)})
  texts = [saved_run.config_file(f).read_text(encoding="utf-8", errors="replace")
           for f in folders]
  # An eval run's config names the checkpoint, a fine-tuning run's its start: the
  # training config beside that names the seed (and the model started from).
  for text in list(texts):
    macros = saved_run.macros(text)
    for name in ("CHECKPOINT_PATH", "INITIAL_CHECKPOINT_PATH"):
      path = saved_run.bound(macros, name)
      if path is None:
        continue
      ckpt = pathlib.Path(path)
      model_dir = ckpt.parent if ckpt.name.startswith("checkpoint_") else ckpt
      found = saved_run.config_file(model_dir)
      if found is not None and model_dir.resolve() != run_dir.resolve():
        texts.append(found.read_text(encoding="utf-8", errors="replace"))
  return texts


def _int_binding(texts: Sequence[str], *names: str) -> int | None:
  for name in names:
    for text in texts:
      match = re.search(rf"^\s*(?:[\w./]+\.)?{name} = (-?\d+)\s*$", text, re.M)
      if match:
        return int(match[1])
  return None


def _config_macros(texts: Sequence[str]) -> dict[str, str]:
  """Top-level macros of the configs as plain strings, the first file's value winning."""
  out: dict[str, str] = {}
  for text in texts:
    for name, value in saved_run.macros(text).items():
      out.setdefault(name, saved_run.plain(value))
  return out


def _seed(macros: Mapping[str, str]) -> str | None:
  """The run's seed(s): every *SEED macro (CSL episodes: EPISODE_SEED beside RANDOM_SEED)."""
  seeds = {k: v for k, v in macros.items() if k.endswith("SEED") and re.fullmatch(r"-?\d+", v)}
  if not seeds:
    return None
  if len(seeds) == 1:
    return next(iter(seeds.values()))
  return " ".join(f"{k.lower()}={v}" for k, v in sorted(seeds.items()))


def _model_line(line: str) -> str | None:
  """A config line as it identifies the model, or None for lines that do not (seeds, paths)."""
  if not line.strip() or line.lstrip().startswith("#"):
    return None
  if "INITIAL_CHECKPOINT_PATH" in line:  # seeds of a +meta run start from their own meta run
    return re.sub(r"\d+", "#", line)
  return None if _NOT_MODEL.search(line) else line


def _model_label(texts: Sequence[str]) -> str:
  d_model = _int_binding(texts, "d_model")
  enc = _int_binding(texts, "num_encoder_layers")
  dec = _int_binding(texts, "num_decoder_layers")
  if d_model is None:
    return "-"
  label = f"T5 d{d_model} {enc}+{dec}L" if enc is not None else f"T5 d{d_model}"
  for text in texts:
    match = re.search(r"^INITIAL_CHECKPOINT_PATH = ['\"]([^'\"]+)['\"]", text, re.M)
    if match:  # A T5X checkpoint names its run's folder; a Hugging Face folder, itself.
      start = pathlib.Path(match[1])
      name = start.parent.name if re.fullmatch(r"checkpoint_\d+", start.name) else start.name
      return f"{label} from {name or match[1]}"
  return label


def run_folders(path: str | os.PathLike) -> list[pathlib.Path]:
  """The runs a RUN_DIR argument holds: itself, or for a folder that saved no config of
  its own but holds several runs that did (`runs/seed0/`, `runs/seed1/`), each of them.

  Why: read as one run, a parent's seeds were one row whose newest file won each cell,
  under the seed of whichever config was read first. A folder is split only when every
  metrics.jsonl under it lies in one of its runs, so no record is left out of the table.
  """
  path = pathlib.Path(os.fspath(path))
  if not path.is_dir() or saved_run.config_file(path) is not None:
    return [path]
  found = sorted({p.parent for name in saved_run.CONFIG_FILES for p in path.rglob(name)})
  top = [f for f in found if not any(other in f.parents for other in found)]
  runs = [f for f in top if next(f.rglob(R.FILENAME), None) is not None]
  files = list(path.rglob(R.FILENAME))
  if len(runs) < 2 or not all(any(run in f.parents for run in runs) for f in files):
    return [path]
  return runs


def load_run(run_dir: str | os.PathLike, step: int | None = None) -> Run:
  """A run's records (latest step per task and split, or `step`) and its config."""
  path = pathlib.Path(os.fspath(run_dir))
  if not path.exists():
    raise FileNotFoundError(f"run directory {path} does not exist")
  files = [path] if path.is_file() else sorted(path.rglob(R.FILENAME))
  if not files:
    raise FileNotFoundError(f"no {R.FILENAME} under {path}")
  # Oldest file first, so that at one step the newest measurement is the one kept (and,
  # within a file, its last line: a re-score).
  files.sort(key=lambda f: (f.stat().st_mtime, str(f)))
  chosen: dict[tuple[str, str], R.Record] = {}
  by_file: dict[tuple[str, str], dict[str, R.Record]] = {}  # the chosen step's, per file
  steps: set[int] = set()
  for file in files:
    for record in R.read(file):
      # A task read with a SentencePiece vocabulary is registered as `<task>.<vocabulary>`;
      # its column, aggregates and paper rows are the task's own (its `record.task` keeps
      # the full name its inference logs are filed under).
      key = (vocabularies.base_task_name(record.task), record.split or "?")
      steps.add(record.step)
      if step is not None and record.step != step:
        continue
      if key not in chosen or record.step > chosen[key].step:
        by_file[key] = {}
      elif record.step < chosen[key].step:
        continue
      chosen[key] = record
      by_file[key][file] = record
  differing = [list(kept.values()) for kept in by_file.values()
               if len({tuple(sorted(r.metrics.items())) for r in kept.values()}) > 1]
  folder = path.parent if path.is_file() else path
  texts = _config_texts(folder)
  model_lines = [m for text in texts for line in text.splitlines()
                 if (m := _model_line(line)) is not None]
  config_key = (hashlib.sha256("\n".join(model_lines).encode()).hexdigest()[:12]
                if texts else f"{_NO_CONFIG}{folder.resolve()}")
  macros = _config_macros(texts)
  seed = _seed(macros)
  if seed is None:
    found = _int_binding(texts, "random_seed")
    seed = None if found is None else str(found)
  return Run(folder, chosen, seed, _model_label(texts), config_key, macros,
             disagreements=[_disagreement(records, folder) for records in differing],
             steps=steps)


def _disagreement(records: Sequence[R.Record], folder: pathlib.Path) -> str:
  """"task (split) @step: metric 4.71 (eval/metrics.jsonl:3) vs 5.15 (...), newest shown"
  for one step's last record in each file, oldest file first (within a file a later
  line is a re-score and replaces the earlier)."""
  shown = records[-1]
  metric = next((m for m in shown.metrics
                 if any(r.metrics.get(m) != shown.metrics[m] for r in records)),
                next(iter(shown.metrics), "?"))

  def where(r: R.Record) -> str:
    file, _, line = r.where.rpartition(":")
    try:
      file = str(pathlib.Path(file).relative_to(folder))
    except ValueError:
      pass
    return f"{file}:{line}" if line else file
  values = " vs ".join(f"{r.metrics.get(metric, float('nan')):.2f} ({where(r)})"
                       for r in reversed(records))
  return (f"{shown.task} ({shown.split or '?'}) @{shown.step}: {metric} {values}; "
          "the first, the newest, is shown")


def label_of(paths: Sequence[pathlib.Path]) -> str:
  """A row's name: the folder's, or the common prefix of its seeds' folders (no seed suffix)."""
  names = [p.name or str(p) for p in paths]
  if len(names) == 1:
    return names[0]
  prefix = os.path.commonprefix(names).rstrip("_-.=")
  prefix = re.sub(r"(?:[_\-.]?seed|[_\-.]s)$", "", prefix, flags=re.I).rstrip("_-.=")
  return prefix or " + ".join(names)


def merge_runs(runs: Sequence[Run]) -> Run:
  """Runs that together make one model's results (FewCLUE's k = 0..4 trainings) as one."""
  chosen: dict[tuple[str, str], R.Record] = {}
  replicates: dict[tuple[str, str], dict[str, np.ndarray]] = {}
  no_ci95: dict[tuple[str, str], str] = {}
  for run in runs:
    for key, record in run.records.items():
      if key not in chosen or record.step >= chosen[key].step:
        chosen[key] = record
        replicates.pop(key, None)
        no_ci95.pop(key, None)
        if key in run.replicates:
          replicates[key] = run.replicates[key]
        if key in run.no_ci95:
          no_ci95[key] = run.no_ci95[key]
  seeds = {run.seed for run in runs}
  return Run(pathlib.Path(label_of([run.path for run in runs])), chosen,
             seeds.pop() if len(seeds) == 1 else None, runs[0].model, runs[0].config_key,
             runs[0].macros, replicates, [d for run in runs for d in run.disagreements],
             {s for run in runs for s in run.steps}, no_ci95)
