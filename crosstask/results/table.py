"""One table across runs and benchmarks: a row per model (seeds pooled), a column per task.

Each RUN_DIR is searched for `metrics.jsonl` files (an eval output, a training
run's `inference_eval/`, a `crosstask.score` output). A run's number for a task
is its latest step's (or `step`'s). Columns are keyed by task, split and task
fingerprint, so numbers of two task definitions land in two columns, never in
one; a column's header names its checkpoint step when every row agrees, else
each cell does. Runs whose configs differ only in the seed (and in their paths)
form one row: mean ± std over seeds (population std, as papers report). Task
variants `<base>.p<k>` (prompt k of a task) form one column for `<base>`: the
mean over prompts, with their spread. Benchmark aggregates (CLUE and FewCLUE
scores, LOT overall, SciRepEval averages) are computed per run from the same
records, then pooled over seeds; paper rows fill the columns they have numbers
for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import pathlib
import re
from collections.abc import Iterable, Mapping, Sequence

from crosstask.results import records as R
from crosstask.tasks.common import report as common_report

PROMPT_SUFFIX = re.compile(r"^(?P<base>.+)\.p(?P<k>\d+)$")
# The headline metric of a task: the first of these it reports (a key or a key's last part).
# CLUE/FewCLUE/CSL classes and LOT's understanding tasks are scored by accuracy, CMRC
# 2018 by EM, generation by the paper's first metric.
HEADLINE = ("em", "accuracy", "overall", "rougeL", "bpref", "bleu-2", "bleu-4", "bleu",
            "perplexity", "map", "ndcg", "f1", "macro_f1")
CONFIG_FILES = ("operative_config.gin", "config.gin")
# Lines of a run's config that do not make it a different model: where it lives, its seed.
_NOT_MODEL = re.compile(r"seed|MODEL_DIR|OUTPUT_DIR|CHECKPOINT_PATH|model_dir|output_dir|"
                        r"^\s*path = ", re.I)


def prompt_base(task: str) -> tuple[str, int | None]:
  """('clue_afqmc', 2) for a prompt variant `clue_afqmc.p2`; (task, None) otherwise."""
  match = PROMPT_SUFFIX.match(task)
  return (match["base"], int(match["k"])) if match else (task, None)


def headline_metric(task: str, metrics: Mapping[str, float],
                    prefer: Sequence[str] = ()) -> str | None:
  """The metric a task's column shows (see HEADLINE); `prefer` goes first."""
  if task.startswith(R_SCIREPEVAL):
    return None  # SciRepEval embedding tasks show their official number (see _scirepeval)
  for name in (*prefer, *HEADLINE):
    for key in metrics:
      if R.matches(key, name):
        return key
  return next(iter(metrics), None)


R_SCIREPEVAL = "scirepeval:"


# ------------------------------------------------------------------------ runs


@dataclasses.dataclass
class Run:
  """One RUN_DIR: its chosen records per (task, split), and what model and seed made them."""
  path: pathlib.Path
  records: dict[tuple[str, str], R.Record]
  seed: str | None
  model: str
  config_key: str
  macros: dict[str, str] = dataclasses.field(default_factory=dict)


def _config_texts(run_dir: pathlib.Path) -> list[str]:
  texts = []
  for name in CONFIG_FILES:
    for path in sorted(run_dir.rglob(name)):
      texts.append(path.read_text(encoding="utf-8", errors="replace"))
    if texts:
      break
  # An eval run's config names the checkpoint; the training config beside it names the seed.
  for text in list(texts):
    for match in re.finditer(r"CHECKPOINT_PATH = ['\"]([^'\"]+)['\"]", text):
      ckpt = pathlib.Path(match[1])
      model_dir = ckpt.parent if ckpt.name.startswith("checkpoint_") else ckpt
      for name in CONFIG_FILES:
        if (model_dir / name).is_file() and model_dir.resolve() != run_dir.resolve():
          texts.append((model_dir / name).read_text(encoding="utf-8", errors="replace"))
          break
  return texts


def _int_binding(texts: Sequence[str], *names: str) -> int | None:
  for name in names:
    for text in texts:
      match = re.search(rf"^\s*(?:[\w./]+\.)?{name} = (-?\d+)\s*$", text, re.M)
      if match:
        return int(match[1])
  return None


def _macros(texts: Sequence[str]) -> dict[str, str]:
  """Top-level macros (`NAME = value`) of the configs, the first file's value winning."""
  out: dict[str, str] = {}
  for text in texts:
    for match in re.finditer(r"^([A-Z][A-Z0-9_]*) = (.+?)\s*$", text, re.M):
      out.setdefault(match[1], match[2].strip("'\""))
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
    if match:
      return f"{label} from {pathlib.Path(match[1]).parent.name or match[1]}"
  return label


def load_run(run_dir: str | os.PathLike, step: int | None = None) -> Run:
  """A run's records (latest step per task and split, or `step`) and its config."""
  path = pathlib.Path(os.fspath(run_dir))
  if not path.exists():
    raise FileNotFoundError(f"run directory {path} does not exist")
  files = [path] if path.is_file() else sorted(path.rglob(R.FILENAME))
  if not files:
    raise FileNotFoundError(f"no {R.FILENAME} under {path}")
  chosen: dict[tuple[str, str], R.Record] = {}
  for record in R.read_many(files):
    key = (record.task, record.split or "?")
    if step is not None and record.step != step:
      continue
    if key not in chosen or record.step >= chosen[key].step:
      chosen[key] = record
  folder = path.parent if path.is_file() else path
  texts = _config_texts(folder)
  model_lines = [m for text in texts for line in text.splitlines()
                 if (m := _model_line(line)) is not None]
  config_key = (hashlib.sha256("\n".join(model_lines).encode()).hexdigest()[:12]
                if texts else f"path:{folder.resolve()}")
  macros = _macros(texts)
  seed = _seed(macros)
  if seed is None:
    found = _int_binding(texts, "random_seed")
    seed = None if found is None else str(found)
  return Run(folder, chosen, seed, _model_label(texts), config_key, macros)


def _label(paths: Sequence[pathlib.Path]) -> str:
  names = [p.name or str(p) for p in paths]
  if len(names) == 1:
    return names[0]
  prefix = os.path.commonprefix(names).rstrip("_-.=")
  prefix = re.sub(r"(?:[_\-.]?seed|[_\-.]s)$", "", prefix, flags=re.I).rstrip("_-.=")
  return prefix or " + ".join(names)


# --------------------------------------------------------------------- columns


@dataclasses.dataclass(frozen=True)
class Column:
  """A table column: a task (or prompt group, or aggregate) on one split and definition."""
  name: str
  metric: str
  split: str
  fingerprint: str

  def header(self, step: int | None) -> str:
    parts = [f"{self.name} {self.metric}".strip()]
    if self.split not in ("", "?"):
      parts.append(f"({self.split})")
    if step is not None:
      parts.append(f"@{step}")
    if self.fingerprint:
      parts.append(f"[{self.fingerprint}]")
    return " ".join(parts)


@dataclasses.dataclass
class Value:
  """A run's number in a column: the value, its checkpoint step, its spread over prompts."""
  value: float
  step: int | None = None
  prompts: int = 0
  prompt_std: float | None = None
  spread_of: str = "prompts"  # what `prompt_std` is a spread over (FewCLUE: its k splits)


def _group_fingerprint(fingerprints: Iterable[str | None]) -> str:
  fps = sorted({fp or "-" for fp in fingerprints})
  if len(fps) == 1:
    return fps[0] if fps[0] != "-" else ""
  return hashlib.sha256(",".join(fps).encode()).hexdigest()[:8]


def task_values(run: Run, prefer: Sequence[str] = (), all_metrics: bool = False
                ) -> dict[Column, Value]:
  """A run's numbers per task column; prompt variants pooled into their base task."""
  groups: dict[tuple[str, str, str], list[tuple[R.Record, str]]] = {}
  for (task, split), record in run.records.items():
    if task.startswith(R_SCIREPEVAL):
      continue
    base, _ = prompt_base(task)
    keys = (list(record.metrics) if all_metrics
            else [k for k in [headline_metric(task, record.metrics, prefer)] if k])
    for key in keys:
      groups.setdefault((base, split, key), []).append((record, task))
  out = {}
  for (base, split, key), members in groups.items():
    fingerprint = _group_fingerprint(r.fingerprint for r, _ in members)
    values = [r.metrics[key] for r, _ in members]
    steps = {r.step for r, _ in members}
    prompted = [t for _, t in members if prompt_base(t)[1] is not None]
    mean, std = common_report.mean_std(values)
    out[Column(base, key, split, fingerprint)] = Value(
        mean, steps.pop() if len(steps) == 1 else None, len(prompted),
        std if prompted else None)
  return out


# ------------------------------------------------------------------ aggregates


def _by_split(run: Run) -> dict[str, dict[str, R.Record]]:
  out: dict[str, dict[str, R.Record]] = {}
  for (task, split), record in run.records.items():
    out.setdefault(split, {})[task] = record
  return out


def _clue(tasks: Mapping[str, R.Record], split: str) -> dict[Column, Value]:
  from crosstask.metrics import clue_scores  # pylint: disable=g-import-not-at-top
  scores = {}
  for name in ("clue_{}", "clue_{}_rank"):
    for t in set(clue_scores.CLUE_TASKS) | set(clue_scores.CLASSIFICATION_TASKS):
      record = tasks.get(name.format(t))
      metric = "em" if t == "cmrc2018" else "accuracy"
      if record is not None and metric in record.metrics and t not in scores:
        scores[t] = record.metrics[metric]
  out = {}
  for label, fn, needed in (("CLUE score", clue_scores.clue_score, clue_scores.CLUE_TASKS),
                            ("CLUE classification", clue_scores.classification_score,
                             clue_scores.CLASSIFICATION_TASKS),
                            ("CLUE MRC", clue_scores.mrc_score, clue_scores.MRC_TASKS)):
    if all(t in scores for t in needed):
      out[Column(label, "", split, "")] = Value(fn(scores))
  return out


FEWCLUE_NAME = re.compile(r"^fewclue_(?P<task>[a-z0-9]+)_k(?P<k>[0-4]|all)(?:_rank)?$")


def _fewclue(tasks: Mapping[str, R.Record], split: str) -> dict[Column, Value]:
  from crosstask.metrics import clue_scores  # pylint: disable=g-import-not-at-top
  per_task: dict[str, dict[str, float]] = {}
  for name, record in tasks.items():
    match = FEWCLUE_NAME.match(name)
    if match and "accuracy" in record.metrics:
      per_task.setdefault(match["task"], {})[match["k"]] = record.metrics["accuracy"]
  out = {}
  means = {}
  for task, per_k in per_task.items():
    ks = [str(k) for k in range(clue_scores.FEWCLUE_SPLITS)]
    if all(k in per_k for k in ks):
      mean, std = common_report.mean_std([per_k[k] for k in ks])
      means[task] = mean
      out[Column(f"fewclue {task} k=0..4", "accuracy", split, "")] = Value(
          mean, None, 5, std, spread_of="splits")
  if all(t in means for t in clue_scores.FEWCLUE_TASKS):
    out[Column("FewCLUE score", "", split, "")] = Value(clue_scores.fewclue_score(means))
  return out


LOT_TASKS = {"lot_zh_clozet_rank": "clozet", "lot_zh_clozet": "clozet", "lot_zh_senpos": "senpos",
             "lot_zh_plotcom": "plotcom", "lot_zh_outgen": "outgen"}


def _lot(tasks: Mapping[str, R.Record], split: str) -> dict[Column, Value]:
  from crosstask.metrics import lot  # pylint: disable=g-import-not-at-top
  flat = {}
  for name, prefix in LOT_TASKS.items():
    if name in tasks:
      for key, value in tasks[name].metrics.items():
        flat.setdefault(f"{prefix}/{key}", value)
  out = {}
  for kind in ("understanding", "generation"):
    try:
      out[Column(f"LOT overall {kind}", "", split, "")] = Value(lot.lot_overall(flat, kind, split))
    except (KeyError, ValueError):
      continue
  return out


def _scirepeval(tasks: Mapping[str, R.Record], split: str) -> dict[Column, Value]:
  from crosstask.metrics.scirepeval import averages  # pylint: disable=g-import-not-at-top
  from crosstask.metrics.scirepeval import benchmark  # pylint: disable=g-import-not-at-top
  from crosstask.results import rescoring  # pylint: disable=g-import-not-at-top
  results = {name[len(R_SCIREPEVAL):]: rescoring.unflatten(r.metrics)
             for name, r in tasks.items() if name.startswith(R_SCIREPEVAL)}
  if not results:
    return {}
  out = {}
  for name, result in results.items():
    spec = benchmark.get(name)
    for label, value in averages.task_numbers(spec, result).items():
      out[Column(f"SciRepEval {label}", "", split, tasks[R_SCIREPEVAL + name].fingerprint or "")
          ] = Value(value, tasks[R_SCIREPEVAL + name].step)
  summary = averages.aggregate(results)
  for part in ("in_train", "out_of_train", "average"):
    count = (summary[f"{part}_count"] if part != "average"
             else summary["in_train_count"] + summary["out_of_train_count"])
    total = {"in_train": averages.IN_TRAIN_COUNT, "out_of_train": averages.OUT_OF_TRAIN_COUNT,
             "average": averages.IN_TRAIN_COUNT + averages.OUT_OF_TRAIN_COUNT}[part]
    if count:
      suffix = "" if count == total else f" ({count}/{total} numbers)"
      out[Column(f"SciRepEval {part.replace('_', '-')}{suffix}", "", split, "")] = Value(
          summary[part])
  return out


AGGREGATES = (_clue, _fewclue, _lot, _scirepeval)


def aggregate_values(run: Run) -> dict[Column, Value]:
  out = {}
  for split, tasks in _by_split(run).items():
    for fn in AGGREGATES:
      out.update(fn(tasks, split))
  return out


# ------------------------------------------------------------------- the table


@dataclasses.dataclass
class Row:
  label: str
  model: str
  seeds: list[str | None]
  cells: dict[Column, dict]  # column -> {"mean", "std", "n", "step", "prompts", "prompt_std"}
  paper: bool = False
  runs: list[Run] = dataclasses.field(default_factory=list)


def _pool(values: Sequence[Value]) -> dict:
  mean, std = common_report.mean_std([v.value for v in values])
  steps = {v.step for v in values}
  prompt_stds = [v.prompt_std for v in values if v.prompt_std is not None]
  return {"mean": mean, "std": std if len(values) > 1 else None, "n": len(values),
          "step": steps.pop() if len(steps) == 1 else None,
          "prompts": max(v.prompts for v in values),
          "prompt_std": sum(prompt_stds) / len(prompt_stds) if prompt_stds else None,
          "spread_of": values[0].spread_of}


def build_rows(runs: Sequence[Run], prefer: Sequence[str] = (), all_metrics: bool = False,
               pool_seeds: bool = True) -> list[Row]:
  """A row per model: runs with equal configs but for the seed are pooled."""
  groups: dict[str, list[Run]] = {}
  for run in runs:
    key = run.config_key if pool_seeds else str(run.path.resolve())
    groups.setdefault(key, []).append(run)
  rows = []
  for members in groups.values():
    seeds = [r.seed for r in members]
    if len(members) > 1 and len(set(seeds)) != len(seeds):
      # Same config and seed: not seeds of one model but repeated runs; keep them apart.
      for run in members:
        rows.extend(build_rows([run], prefer, all_metrics, pool_seeds=False))
      continue
    per_column: dict[Column, list[Value]] = {}
    for run in members:
      for column, value in {**task_values(run, prefer, all_metrics),
                            **aggregate_values(run)}.items():
        per_column.setdefault(column, []).append(value)
    cells = {column: _pool(values) for column, values in per_column.items()}
    rows.append(Row(_label([r.path for r in members]), members[0].model, seeds, cells,
                    runs=list(members)))
  return rows


# ------------------------------------------------------------- CSL cross-task Δ_m


def _csl_setting(run: Run) -> str | None:
  """'few' or '+meta' for a CSL few-shot run (by the stage of the run it starts from)."""
  if run.macros.get("STAGE") != "few" or "PARTITION" not in run.macros:
    return None
  start = run.macros.get("INITIAL_CHECKPOINT_PATH", "None")
  if start in ("None", ""):
    return "few"
  ckpt = pathlib.Path(start)
  model_dir = ckpt.parent if ckpt.name.startswith("checkpoint_") else ckpt
  texts = [(model_dir / n).read_text(encoding="utf-8") for n in CONFIG_FILES
           if (model_dir / n).is_file()][:1]
  return "+meta" if _macros(texts).get("STAGE") == "meta" else "few"


def _csl_episodes(row: Row):
  from crosstask.tasks.csl import report as csl_report  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.csl import scenarios  # pylint: disable=g-import-not-at-top
  out = []
  for run in row.runs:
    setting = _csl_setting(run)
    if setting is None:
      continue
    partition = run.macros["PARTITION"]
    (task,) = scenarios.partition_tasks(partition, run.macros.get("LANG", "zh"))[1]
    for (name, split), record in run.records.items():
      if name == task:
        out.append((re.sub(r"^s\d+_", "", split), csl_report.Episode(
            partition, int(run.macros.get("SHOTS", 0)), setting,
            int(run.macros.get("EPISODE_SEED", 0)), record.metrics)))
  return out


def add_csl_delta_m(rows: Sequence[Row]) -> None:
  """Δ_m (CSL's +meta − few, in points) as a column of each +meta row, per partition and k.

  A +meta row is compared with the few rows of the same architecture (from the config);
  scenario 3's partitions with the few runs of the partitions they break.
  """
  if not any(_csl_setting(run) for row in rows for run in row.runs):
    return
  from crosstask.tasks.csl import report as csl_report  # pylint: disable=g-import-not-at-top
  episodes = {id(row): _csl_episodes(row) for row in rows}
  for row in rows:
    meta = [(split, e) for split, e in episodes[id(row)] if e.setting == "+meta"]
    if not meta:
      continue
    arch = row.model.split(" from ")[0]
    few = [(split, e) for other in rows if other.model.split(" from ")[0] == arch
           for split, e in episodes[id(other)] if e.setting == "few"]
    for split in sorted({split for split, _ in meta}):
      summary = csl_report.summarize([e for s_, e in meta + few if s_ == split])
      for k, cell in summary.items():
        for partition, value in cell["delta_m"].items():
          row.cells[Column(f"CSL Δ_m {partition} k={k}", "", split, "")] = {
              "mean": value, "std": None, "n": len({e.seed for _, e in meta}), "step": None,
              "prompts": 0, "prompt_std": None, "spread_of": ""}


# Reference rows printed by default, per benchmark (all of them with --paper all).
DEFAULT_PAPER_ROWS = {"clue": ("BERT-base", "RoBERTa-wwm-large"), "fewclue": ("PET", "Human"),
                      "scirepeval": ("SPECTER2 Base", "Adapters + MTL CTRL")}


def paper_rows(columns: Iterable[Column], which: str = "default") -> list[Row]:
  """Published numbers for the columns that have them (CLUE/FewCLUE READMEs, SciRepEval
  Table 2, LOT's pretraining Table 9)."""
  if which == "none":
    return []
  columns = list(columns)
  names = {c.name for c in columns}
  out: dict[str, dict[Column, dict]] = {}

  def put(row: str, column: Column, value: float) -> None:
    out.setdefault(row, {})[column] = {"mean": float(value), "std": None, "n": 1, "step": None,
                                       "prompts": 0, "prompt_std": None, "spread_of": ""}

  def pick(table: Mapping, benchmark: str) -> list[str]:
    return list(table) if which == "all" else [r for r in DEFAULT_PAPER_ROWS[benchmark]
                                                if r in table]

  if any(n.startswith("clue_") or n.startswith("CLUE ") for n in names):
    from crosstask.tasks.clue import paper  # pylint: disable=g-import-not-at-top
    for model in pick(paper.CLUE_README, "clue"):
      for c in columns:
        task = re.sub(r"^clue_|_rank$", "", c.name)
        if c.name.startswith("clue_") and task in paper.CLUE_README[model]:
          put(f"{model} (CLUE README, test)", c, paper.CLUE_README[model][task])
        elif c.name in ("CLUE classification", "CLUE MRC"):
          put(f"{model} (CLUE README, test)", c,
              paper.CLUE_README[model][c.name.split()[1].lower()])
  if any(n.startswith("fewclue") or n == "FewCLUE score" for n in names):
    from crosstask.tasks.clue import paper  # pylint: disable=g-import-not-at-top
    for method in pick(paper.FEWCLUE_README, "fewclue"):
      for c in columns:
        match = re.match(r"^fewclue (\w+) k=0\.\.4$", c.name)
        if match and match[1] in paper.FEWCLUE_README[method]:
          put(f"{method} (FewCLUE README, test_public)", c, paper.FEWCLUE_README[method][match[1]])
        elif c.name == "FewCLUE score":
          put(f"{method} (FewCLUE README, test_public)", c, paper.FEWCLUE_README[method]["score"])
  if any(n.startswith("SciRepEval ") for n in names):
    from crosstask.metrics.scirepeval import averages  # pylint: disable=g-import-not-at-top
    table = {**averages.TABLE_2, **averages.APPENDIX_D}
    for model in pick(table, "scirepeval"):
      for c in columns:
        for i, part in enumerate(("in-train", "out-of-train", "average")):
          if c.name == f"SciRepEval {part}":
            put(f"{model} (SciRepEval Table 2)", c, table[model][i])
  if any(n.startswith("longlm_") for n in names):
    from crosstask.tasks.lot import report as lot_report  # pylint: disable=g-import-not-at-top
    tasks = {"infill": lot_report.INFILL, "continuation": lot_report.CONTINUATION}
    for model, values in lot_report.PAPER_TABLE9.items():
      for name, value in zip(lot_report.COLUMNS, values):
        prefix, metric = name.split("/")
        for c in columns:
          if c.name == tasks[prefix] and c.metric == metric:
            put(f"{model.replace(' (paper)', '')} (LOT Table 9, held-out)", c, value)
  return [Row(label, "paper", [], cells, paper=True) for label, cells in out.items()]


def _order(columns: Iterable[Column]) -> list[Column]:
  def key(c: Column):
    aggregate = c.name[:1].isupper() or c.name.startswith("fewclue ") and "k=0..4" in c.name
    return (c.split, aggregate, c.name, c.metric, c.fingerprint)
  return sorted(set(columns), key=key)


def _column_step(rows: Sequence[Row], column: Column) -> int | None:
  steps = {row.cells[column]["step"] for row in rows if not row.paper and column in row.cells}
  return steps.pop() if len(steps) == 1 else None


def format_cell(cell: dict | None, column_step: int | None, floatfmt: str = ".2f") -> str:
  if cell is None or cell["mean"] is None or math.isnan(cell["mean"]):
    return "-"
  text = format(cell["mean"], floatfmt)
  if cell["std"] is not None:
    text += f" ± {format(cell['std'], floatfmt)}"
  if cell["prompt_std"] is not None and cell["prompts"]:
    text += (f" (σ {format(cell['prompt_std'], floatfmt)} over {cell['prompts']} "
             f"{cell['spread_of']})")
  if column_step is None and cell["step"] is not None:
    text += f" @{cell['step']}"
  return text


def _duplicate_names(columns: Sequence[Column]) -> set[tuple[str, str, str]]:
  seen: dict[tuple[str, str, str], int] = {}
  for c in columns:
    seen[(c.name, c.metric, c.split)] = seen.get((c.name, c.metric, c.split), 0) + 1
  return {k for k, n in seen.items() if n > 1}


@dataclasses.dataclass
class Table:
  rows: list[Row]
  columns: list[Column]

  def headers(self) -> list[str]:
    return [c.header(_column_step(self.rows, c)) for c in self.columns]

  def conflicts(self) -> list[str]:
    """Tasks shown in more than one column because their definitions differ."""
    return [f"{name} {metric} ({split})".replace("  ", " ")
            for name, metric, split in sorted(_duplicate_names(self.columns))]

  def markdown(self, floatfmt: str = ".2f") -> str:
    headers = self.headers()
    lines = ["| run | model | seeds | " + " | ".join(h.replace("|", "\\|") for h in headers) + " |",
             "|" + "---|" * (len(headers) + 3)]
    for row in self.rows:
      cells = [format_cell(row.cells.get(c), _column_step(self.rows, c), floatfmt)
               for c in self.columns]
      seeds = ("-" if row.paper else ",".join("?" if s is None else str(s) for s in row.seeds))
      lines.append(f"| {row.label} | {row.model} | {seeds} | " + " | ".join(cells) + " |")
    notes = [f"Different task definitions, kept apart: {', '.join(self.conflicts())}."
             ] if self.conflicts() else []
    return "\n".join(lines + ([""] + notes if notes else []))

  def csv(self) -> str:
    import csv  # pylint: disable=g-import-not-at-top
    import io  # pylint: disable=g-import-not-at-top
    buf = io.StringIO()
    writer = csv.writer(buf)
    headers = self.headers()
    writer.writerow(["run", "model", "seeds", *[x for h in headers for x in (h, f"{h} std")]])
    for row in self.rows:
      values = []
      for c in self.columns:
        cell = row.cells.get(c)
        values += ["" if cell is None else cell["mean"],
                   "" if cell is None or cell["std"] is None else cell["std"]]
      writer.writerow([row.label, row.model, " ".join(str(s) for s in row.seeds), *values])
    return buf.getvalue()

  def json(self) -> dict:
    columns = [{"header": h, **dataclasses.asdict(c), "step": _column_step(self.rows, c)}
               for h, c in zip(self.headers(), self.columns)]
    rows = [{"run": r.label, "model": r.model, "seeds": r.seeds, "paper": r.paper,
             "cells": {h: r.cells[c] for h, c in zip(self.headers(), self.columns)
                       if c in r.cells}} for r in self.rows]
    return {"columns": columns, "rows": rows, "conflicts": self.conflicts()}


def merge_runs(runs: Sequence[Run]) -> Run:
  """Runs that together make one model's results (FewCLUE's k = 0..4 trainings) as one."""
  chosen: dict[tuple[str, str], R.Record] = {}
  for run in runs:
    for key, record in run.records.items():
      if key not in chosen or record.step >= chosen[key].step:
        chosen[key] = record
  seeds = {run.seed for run in runs}
  return Run(pathlib.Path(_label([run.path for run in runs])), chosen,
             seeds.pop() if len(seeds) == 1 else None, runs[0].model, runs[0].config_key,
             runs[0].macros)


def build(run_dirs: Sequence[str | os.PathLike], *, step: int | None = None,
          prefer: Sequence[str] = (), all_metrics: bool = False, paper: str = "default",
          tasks: str | None = None, merge: bool = False) -> Table:
  """The table for `run_dirs` (each a folder holding metrics.jsonl files, or one file).

  `merge` makes all of them one run (one row): the parts of one model's results.
  """
  runs = [load_run(d, step) for d in run_dirs]
  if merge:
    runs = [merge_runs(runs)]
  rows = build_rows(runs, prefer, all_metrics)
  add_csl_delta_m(rows)
  columns = [c for row in rows for c in row.cells]
  if tasks:
    pattern = re.compile(tasks)
    columns = [c for c in columns if pattern.search(c.name)]
  columns = _order(columns)
  rows += paper_rows(columns, paper)
  return Table(rows, columns)
