"""Published numbers beside ours: rows for the columns the papers and READMEs report."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from crosstask.results.columns import Column, Row

# A published number has no examples here to resample: its cells say so (`no_ci95`).
QUOTED = "quoted from a paper: no examples to resample"
# Reference rows printed by default, per benchmark (all of them with --paper all).
DEFAULT_PAPER_ROWS = {"clue": ("BERT-base", "RoBERTa-wwm-large"), "fewclue": ("PET", "Human"),
                      "scirepeval": ("SPECTER2 Base", "Adapters + MTL CTRL"),
                      "csl": ("T5-small", "T5-base")}


def paper_rows(columns: Iterable[Column], which: str = "default") -> list[Row]:
  """Published numbers for the columns that have them (CLUE/FewCLUE READMEs, SciRepEval
  Table 2, LOT's pretraining Table 9, CSL's Δ_m from its Table 9)."""
  if which == "none":
    return []
  columns = list(columns)
  names = {c.name for c in columns}
  out: dict[str, dict[Column, dict]] = {}

  def put(row: str, column: Column, value: float) -> None:
    out.setdefault(row, {})[column] = {"mean": float(value), "std": None, "ci95": None, "n": 1,
                                       "step": None, "prompts": 0, "prompt_std": None,
                                       "spread_of": "", "no_ci95": QUOTED}

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
    from crosstask.tasks.scirepeval import averages  # pylint: disable=g-import-not-at-top
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
  if any(n.startswith("CSL Δ_m ") for n in names):
    from crosstask.tasks.csl import paper_tables  # pylint: disable=g-import-not-at-top
    models = {m: m for m in paper_tables.MODELS}
    for model in pick(models, "csl"):
      for c in columns:
        match = re.match(r"^CSL Δ_m (.+) k=(\d+)$", c.name)
        cell = paper_tables.TABLE_9.get((int(match[2]), model)) if match else None
        if cell and match[1] in cell["delta_m"]:
          put(f"{model} (CSL Table 9)", c, cell["delta_m"][match[1]])
  return [Row(label, "paper", [], cells, paper=True) for label, cells in out.items()]
