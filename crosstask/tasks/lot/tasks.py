"""LOT's four tasks and NLPCC-2021 OutGen as Chinese arrow-prompt SeqIO tasks.

Layouts, e.g. `故事+候选一+候选二->缺句 故事：…<mask>…；候选一：…；候选二：…`:

| task | prompt | target | metrics |
|---|---|---|---|
| lot_zh_clozet | 故事+候选一+候选二->缺句 | the right plot | accuracy (prediction mapped to a candidate) |
| lot_zh_clozet_rank | same | each candidate, scored | accuracy of the best-scored candidate |
| lot_zh_senpos | 故事+句子->位置 | the 1-based position | accuracy of the first integer |
| lot_zh_plotcom | 故事->缺句 | the removed sentence | BLEU-n, Distinct-n |
| lot_zh_outgen | 标题+大纲->故事 | the story | BLEU-n, Distinct-n, Coverage, Order, NLPCC overall |
| lot_zh_outgen_notitle | 大纲->故事 | the story (NLPCC data) | same |

Predictions are cleaned as LongLM's generation script does (special tokens
and whitespace removed, ASCII punctuation back to full width) before scoring.
The paper's understanding numbers come from a classifier over decoder states,
not from text: these text-to-text scores are comparable in kind, not equal.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from crosstask.metrics import lot as lot_metrics
from crosstask.tasks.common import layout, rank
from crosstask.tasks.common.schema import Field
from crosstask.tasks.common.schema import Schema
from crosstask.tasks.lot import readers

LANG = "zh"
SPLITS = ("train", "validation", "test")
NLPCC_SPLITS = ("train", "validation", "test")  # test: outlines only, for predictions

SCHEMA = Schema("lot", (
    Field("title", {"zh": "标题", "en": "Title"}),
    Field("outline", {"zh": "大纲", "en": "Outline"}, separator="#", kind="list"),
    Field("story", {"zh": "故事", "en": "Story"}),
    Field("plot0", {"zh": "候选一", "en": "Candidate 1"}),
    Field("plot1", {"zh": "候选二", "en": "Candidate 2"}),
    Field("sentence", {"zh": "句子", "en": "Sentence"}),
    Field("position", {"zh": "位置", "en": "Position"}, kind="number"),
    Field("plot", {"zh": "缺句", "en": "Missing sentence"}),
))

# Feature lengths for the 32,596-id Chinese SentencePiece vocabulary (~1 id per character).
FEATURE_LENGTHS = {
    "clozet": {"inputs": 512, "targets": 64},
    "senpos": {"inputs": 512, "targets": 8},
    "plotcom": {"inputs": 512, "targets": 64},
    "outgen": {"inputs": 128, "targets": 512},
}


def _example(record: dict, *, inputs, outputs, extras=()) -> dict[str, str]:
  from crosstask.tasks.common import layout  # pylint: disable=g-import-not-at-top
  ex = layout.example(SCHEMA, record, inputs, outputs, LANG)
  for key in extras:
    value = record[key]
    ex[key] = "#".join(value) if isinstance(value, list) else str(value)
  return ex


# ------------------------------------------------------------------ ClozeT


def clozet_record(record: dict) -> dict:
  """Adds the layout's target: `plot` = the right candidate."""
  return {**record, "plot": record[f"plot{record['label']}"]}


def _normalised(text: str) -> str:
  return lot_metrics.strb2q("".join(text.split()))


def _lcs_length(a: str, b: str) -> int:
  prev = [0] * (len(b) + 1)
  for ca in a:
    cur = [0]
    for j, cb in enumerate(b):
      cur.append(prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j]))
    prev = cur
  return prev[-1]


def choose_candidate(prediction: str, candidates: list[str]) -> str:
  """"0"/"1" for the candidate the generated text is; "-1" (wrong) on a tie.

  Exact match after normalisation first, else the longer character LCS.
  """
  pred = _normalised(lot_metrics.clean_prediction(prediction))
  cands = [_normalised(c) for c in candidates]
  exact = [i for i, c in enumerate(cands) if c == pred and pred]
  if len(exact) == 1:
    return str(exact[0])
  lengths = [_lcs_length(pred, c) for c in cands]
  best = max(lengths)
  return str(lengths.index(best)) if lengths.count(best) == 1 and best > 0 else "-1"


def clozet_postprocess(output, example=None, is_target=False) -> str:
  """Targets -> gold label; predictions -> the chosen candidate's label."""
  example = example or {}
  if is_target:
    return layout.feature_text(example["label"])
  candidates = [layout.feature_text(example.get(f"plot{i}", b"")) for i in (0, 1)]
  return choose_candidate(layout.feature_text(output), candidates)


def clozet_rank_records(split: str) -> list[dict]:
  """One record per (story, candidate): the candidate is the target to score.

  The train split keeps only the right candidates (training on the wrong one
  would teach it), i.e. it trains like `lot_zh_clozet`.
  """
  out = []
  for i, rec in enumerate(readers.read_split("clozet", split)):
    for option in (0, 1):
      if split == "train" and rec["label"] != str(option):
        continue
      out.append({**rec, "plot": rec[f"plot{option}"],
                  **rank.features(i, option, rec["label"] == str(option))})
  return out


# ------------------------------------------------------------------ SenPos

_INTEGER = re.compile(r"\d+")


def senpos_record(record: dict) -> dict:
  return {**record, "position": str(record["label"])}


def senpos_postprocess(output, example=None, is_target=False) -> str:
  """The first integer of the text (NFKC, so full-width digits count); "" if none."""
  del example, is_target
  found = _INTEGER.search(unicodedata.normalize("NFKC", layout.feature_text(output)))
  return str(int(found.group())) if found else ""


# ------------------------------------------------------- PlotCom / OutGen


def story_postprocess(output, example=None, is_target=False) -> str:
  """Predictions cleaned as LongLM's `pro()`; targets (references) left as they are."""
  del example
  text = layout.feature_text(output)
  return text if is_target else lot_metrics.clean_prediction(text)


def outgen_postprocess(output, example=None, is_target=False):
  """Targets -> {"story", "outline"} for Coverage/Order; predictions -> clean text."""
  if not is_target:
    return lot_metrics.clean_prediction(layout.feature_text(output))
  return {"story": layout.feature_text(output),
          "outline": layout.feature_text(example["outline"]).split("#")}


def _accuracy(targets, predictions):
  from crosstask import metrics as ev  # pylint: disable=g-import-not-at-top
  return ev.accuracy(targets, predictions)


# ------------------------------------------------------------------ tasks


def _read(task: str, transform=None):
  def read_split(split: str):
    records = readers.read_split(task, split)
    return [transform(r) for r in records] if transform else records
  return read_split


def register() -> list[str]:
  """Registers the six LOT tasks and the `lot_zh_generation` mixture (no data read)."""
  from crosstask.tasks.common import factory  # pylint: disable=g-import-not-at-top
  task = functools.partial(factory.arrow_task, schema=SCHEMA, lang=LANG)
  clozet_io = dict(inputs=("story", "plot0", "plot1"), outputs=("plot",))
  names = [
      task("lot_zh_clozet", **clozet_io, read_split=_read("clozet", clozet_record),
           splits=SPLITS, to_example=functools.partial(
               _example, **clozet_io, extras=("plot0", "plot1", "label")),
           extra_features=("plot0", "plot1", "label"), postprocess_fn=clozet_postprocess,
           metric_fns=[_accuracy]).name,
      task("lot_zh_clozet_rank", **clozet_io, read_split=clozet_rank_records, splits=SPLITS,
           to_example=functools.partial(
               _example, **clozet_io, extras=rank.FEATURES),
           extra_features=rank.FEATURES, postprocess_fn=rank.postprocess,
           metric_fns=[rank.accuracy]).name,
      task("lot_zh_senpos", inputs=("story", "sentence"), outputs=("position",),
           read_split=_read("senpos", senpos_record), splits=SPLITS,
           postprocess_fn=senpos_postprocess, metric_fns=[_accuracy]).name,
      task("lot_zh_plotcom", inputs=("story",), outputs=("plot",), read_split=_read("plotcom"),
           splits=SPLITS, postprocess_fn=story_postprocess,
           metric_fns=[lot_metrics.lot_story_metrics]).name,
  ]
  for name, kind, inputs, splits in (
      ("lot_zh_outgen", "outgen", ("title", "outline"), SPLITS),
      ("lot_zh_outgen_notitle", "nlpcc", ("outline",), NLPCC_SPLITS)):
    io = dict(inputs=inputs, outputs=("story",))
    names.append(task(
        name, **io, read_split=_read(kind), splits=splits,
        to_example=functools.partial(_example, **io, extras=("outline",)),
        extra_features=("outline",), postprocess_fn=outgen_postprocess,
        metric_fns=[lot_metrics.lot_outgen_metrics]).name)
  names.append(factory.register_mixture("lot_zh_generation",
                                        ["lot_zh_plotcom", "lot_zh_outgen"]))
  names.append(factory.register_mixture("lot_zh_understanding",
                                        ["lot_zh_clozet", "lot_zh_senpos"]))
  return names
