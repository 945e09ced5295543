"""Cross-benchmark cross-task scenarios: meta-train on some benchmarks, k-shot on another.

CSL's cross-task protocol (meta tasks, then few-shot tasks; 100 meta instances
per task, k ∈ {0, 1, 2, 4, 8} shots, k per class for classification, 64
validation and 64 test instances, 8 seeds), with the meta tasks drawn from
other benchmarks than the few-shot tasks. Every member of a scenario is a task
another benchmark already registers (arrow prompts, postprocessor, metrics);
the scenario wraps it as `xbench_<scenario>_<stage>_<task>` (stage `meta` or
`few`) whose splits are episodes:

  s<seed>_meta         meta tasks: META_SIZE examples of the source's train split
  s<seed>_k<k>         few-shot tasks: k (per class) of the source's train split
  s<seed>_validation   few-shot tasks: N_VAL of the source's validation split
  s<seed>_test         few-shot tasks: N_TEST of the source's test split

Mixtures: `xbench_<scenario>_meta` (stage 1) and `xbench_<scenario>_few`
(stage 2 and its evaluation). Reading any episode of a scenario first checks
that no validation or test example shares text with the meta-training set of
that seed (`leakage`), so a run on leaking data fails before it trains.
"""

from __future__ import annotations

import dataclasses


from crosstask.tasks.common import sampling

META_SIZE = 100
K_SHOTS = (0, 1, 2, 4, 8)
SEEDS = tuple(range(8))
N_VAL = 64
N_TEST = 64
PREFIX = "xbench_"


@dataclasses.dataclass(frozen=True)
class Member:
  """A registered source task in a scenario, and which of its splits feed the episodes.

  `per_class`: k-shot sets hold k examples per target text (classification).
  `metrics`: the two metric keys Δ_m averages for a few-shot task, as CSL's Table 9.
  """
  task: str
  train_split: str = "train"
  validation_split: str = "validation"
  test_split: str = "test"
  per_class: bool = False
  metrics: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Scenario:
  """Meta tasks (stage 1) and few-shot tasks (stage 2), from different benchmarks."""
  name: str
  meta: tuple[Member, ...]
  few: tuple[Member, ...]
  description: str = ""

  def __post_init__(self):
    if not self.name.replace("_", "").isalnum() or self.name != self.name.lower():
      raise ValueError(f"scenario name {self.name!r} must be lower-case letters, digits, '_'")
    if not self.meta or not self.few:
      raise ValueError(f"scenario {self.name!r} needs at least one meta and one few-shot task")
    for m in self.few:
      if len(m.metrics) != 2:
        raise ValueError(f"scenario {self.name!r}: few-shot task {m.task!r} needs the two "
                         f"metric keys Δ_m averages, got {m.metrics!r}")

  def task_name(self, stage: str, source: str) -> str:
    """`xbench_<scenario>_<stage>_<source task>`."""
    return f"{self.mixture_name(stage)}_{source}"

  def mixture_name(self, stage: str) -> str:
    if stage not in ("meta", "few"):
      raise ValueError(f"stage must be 'meta' or 'few', got {stage!r}")
    return f"{PREFIX}{self.name}_{stage}"

  def members(self, stage: str) -> tuple[Member, ...]:
    self.mixture_name(stage)  # checks the stage
    return self.meta if stage == "meta" else self.few


_LABELS = ("accuracy", "macro_f1")
SCENARIOS = {s.name: s for s in (
    Scenario(
        "csl_citesum_to_fewclue",
        meta=(Member("csl_zh_abstract_to_keywords"), Member("csl_zh_abstract_to_title"),
              Member("csl_zh_title_to_category"), Member("citesum_abstract_to_tldr")),
        # FewCLUE's own k-shot pool (train_few_all / dev_few_all) feeds the episodes;
        # reported on test_public. CSLDCP is left out: its abstracts come from the CSL
        # corpus the meta tasks train on (the leakage check would refuse it).
        few=tuple(Member(f"fewclue_{t}_kall", test_split="test_public", per_class=True,
                         metrics=_LABELS) for t in ("tnews", "iflytek", "eprstmt")),
        description="CSL + CiteSum meta tasks -> FewCLUE single-sentence classification"),
    Scenario(
        "clue_csl_to_lot",
        meta=(Member("clue_tnews"), Member("clue_iflytek"), Member("csl_zh_abstract_to_title"),
              Member("csl_zh_keywords_to_abstract")),
        few=(Member("lot_zh_outgen", metrics=("bleu-2", "distinct-4")),
             Member("lot_zh_clozet", metrics=("accuracy", "accuracy"))),
        description="CLUE classification + CSL generation meta tasks -> LOT story tasks"),
)}
SOURCE_BENCHMARKS = ("csl", "citesum", "clue", "lot")


def scenario(name: str) -> Scenario:
  """The registered scenario `name` (with or without the `xbench_` prefix)."""
  key = name[len(PREFIX):] if name.startswith(PREFIX) else name
  if key not in SCENARIOS:
    raise ValueError(f"SCENARIO={name!r} is not an xbench scenario; choose from "
                     f"{sorted(SCENARIOS)}")
  return SCENARIOS[key]


def episode_splits(seeds=SEEDS, k_shots=K_SHOTS) -> list[str]:
  return sampling.episode_splits(seeds, k_shots)


# ------------------------------------------------------------------ names for gin
# Gin cannot format strings: `xbench/_names.gin` takes SCENARIO / STAGE /
# EPISODE_SEED / SHOTS as macros and calls these plain functions (dynamic
# registration) for the mixture and split names; the package registers no gin
# configurables, so importing it never needs an unlocked config.


def mixture(scenario_name: str, stage: str = "meta") -> str:
  """'xbench_clue_csl_to_lot_meta' for scenario 'clue_csl_to_lot', stage 'meta' (or 'few')."""
  return scenario(scenario_name).mixture_name(stage)


def episode_split(seed: int = 0, kind: str = "meta", shots: int | None = None) -> str:
  """s<seed>_meta, s<seed>_k<shots> (kind 'shots'), s<seed>_validation, s<seed>_test."""
  if kind == "shots":
    if shots is None:
      raise ValueError("episode_split(kind='shots') needs SHOTS (xbench/xbench_fewshot.gin)")
    return sampling.episode_split_name(seed, f"k{shots}")
  if kind not in ("meta", "validation", "test"):
    raise ValueError(f"episode_split kind must be meta, shots, validation or test, "
                     f"got {kind!r}")
  return sampling.episode_split_name(seed, kind)
