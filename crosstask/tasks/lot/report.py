"""Held-out pretraining report in the shape of LOT Table 9, and the LOT Overall.

Table 9 gives, on 1,000 held-out texts, perplexity and BLEU-3/4 of text
infilling (greedy) and conditional continuation (top-k 40, T 0.7). Ours come
from `crosstask.eval` on `longlm_pretrain_demo` (split validation, every 20th
demo document):

  python -m crosstask.results /tmp/eval --all_metrics --paper all \
      --tasks '^(longlm_infilling_demo|longlm_continuation_demo)$'
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from crosstask import vocabularies
from crosstask.metrics import lot as lot_metrics
from crosstask import records

INFILL = "longlm_infilling_demo"
CONTINUATION = "longlm_continuation_demo"
COLUMNS = ("infill/perplexity", "infill/bleu-3", "infill/bleu-4",
           "continuation/perplexity", "continuation/bleu-3", "continuation/bleu-4")
PAPER_TABLE9 = {
    "LongLM-small (paper)": (11.61, 73.80, 68.96, 22.91, 5.30, 2.43),
    "LongLM-base (paper)": (8.24, 75.65, 71.05, 17.03, 5.73, 2.64),
    "LongLM-large (paper)": (6.50, 77.08, 72.65, 14.08, 8.91, 5.97),
}


def latest_metrics(eval_dir: str | os.PathLike) -> dict[str, dict[str, float]]:
  """task -> metrics of the latest step in `<eval_dir>/metrics.jsonl`."""
  return {vocabularies.base_task_name(task): dict(r.metrics)  # one row per task, any vocabulary
          for task, r in records.latest(records.read(eval_dir)).items()}


def table9_row(metrics: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
  """Our Table 9 columns from per-task metrics (missing ones are NaN)."""
  row = {}
  for prefix, task in (("infill", INFILL), ("continuation", CONTINUATION)):
    for name in ("perplexity", "bleu-3", "bleu-4"):
      row[f"{prefix}/{name}"] = float(metrics.get(task, {}).get(name, float("nan")))
  return row


def table9_markdown(ours: Mapping[str, float], name: str = "ours (demo corpus)") -> str:
  """Our row under the paper's three LongLM rows."""
  header = "| model | " + " | ".join(COLUMNS) + " |"
  lines = [header, "|" + "---|" * (len(COLUMNS) + 1)]
  for model, values in PAPER_TABLE9.items():
    lines.append(f"| {model} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
  lines.append(f"| {name} | " + " | ".join(f"{ours[c]:.2f}" for c in COLUMNS) + " |")
  return "\n".join(lines)


def lot_overall_report(metrics: Mapping[str, Mapping[str, float]], split: str) -> dict:
  """LOT's two Overall scores from per-task metrics, where the tasks were evaluated."""
  flat = {}
  for task, prefix in (("lot_zh_clozet_rank", "clozet"), ("lot_zh_senpos", "senpos"),
                       ("lot_zh_plotcom", "plotcom"), ("lot_zh_outgen", "outgen")):
    for k, v in metrics.get(task, {}).items():
      flat[f"{prefix}/{k}"] = v
  out = {}
  for kind in ("understanding", "generation"):
    try:
      out[kind] = lot_metrics.lot_overall(flat, kind, split)
    except KeyError:
      continue
  return out
