"""The 24 SciRepEval tasks: format, metrics, few-shot runs and data configs.

Mirrors the official `scirepeval_tasks.jsonl` (22 evaluated entries) plus S2AND
(scored externally) and Citation Prediction (training only). `read_tasks_config`
reads the official file itself, so a user's copy drives the same code.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from crosstask.tasks.common import readers as common_readers
from crosstask.tasks.scirepeval import readers

CLASSIFICATION, REGRESSION, PROXIMITY, SEARCH = (
    "classification", "regression", "proximity", "adhoc_search")
FORMAT_CODES = {CLASSIFICATION: "[CLF]", REGRESSION: "[RGN]", PROXIMITY: "[PRX]",
                SEARCH: {"query": "[QRY]", "candidates": "[PRX]"}}
FORMAT_SHORT = {CLASSIFICATION: "CLF", REGRESSION: "RGN", PROXIMITY: "PRX", SEARCH: "SRCH"}


@dataclasses.dataclass(frozen=True)
class TaskSpec:
  name: str                      # official name, the key of the results JSON
  type: str                      # classification | regression | proximity | adhoc_search
  metrics: tuple[str, ...]
  meta: str                      # allenai/scirepeval config holding the texts
  test: str                      # allenai/scirepeval_test config holding labels / qrels
  in_train: bool
  few_shot: tuple[tuple[int, int], ...] = ()   # (sample_size, iterations)
  multi_label: bool = False
  fields: tuple[str, ...] = ("title", "abstract")
  simple_format: bool = False    # proximity task whose meta rows are flat papers
  external: bool = False         # scored outside crosstask (S2AND)
  evaluated: bool = True         # False: training-only (Citation Prediction)
  cached: bool = False           # officially scored from a reloaded (float16) shared cache

  @property
  def format(self) -> str:
    return FORMAT_SHORT[self.type]


def _t(name, type_, metrics, meta, test, in_train, **kw) -> TaskSpec:
  return TaskSpec(name, type_, tuple(metrics), meta, test, in_train, **kw)


TASKS: tuple[TaskSpec, ...] = (
    _t("MeSH", CLASSIFICATION, ["f1_macro"], "mesh_descriptors", "mesh_descriptors", True),
    _t("Fields of study", CLASSIFICATION, ["f1_macro"], "fos", "fos", True,
       few_shot=((10, 50), (5, 100)), multi_label=True),
    _t("Citation Count", REGRESSION, ["kendalltau"], "cite_count", "cite_count", True),
    _t("Publication Year", REGRESSION, ["kendalltau"], "pub_year", "pub_year", True),
    _t("Same Author Detection", PROXIMITY, ["map"], "same_author", "same_author", True),
    _t("Highly Influential Citations", PROXIMITY, ["map"], "high_influence_cite",
       "high_influence_cite", True),
    _t("Citation Prediction", PROXIMITY, [], "cite_prediction", "cite_prediction", True,
       evaluated=False),
    _t("Search", SEARCH, ["ndcg"], "search", "search", True,
       fields=("title", "abstract", "venue", "year")),
    _t("Biomimicry", CLASSIFICATION, ["f1"], "biomimicry", "biomimicry", False,
       few_shot=((64, 50), (16, 100))),
    _t("DRSM", CLASSIFICATION, ["f1_macro"], "drsm", "drsm", False,
       few_shot=((64, 50), (24, 100))),
    _t("SciDocs MAG", CLASSIFICATION, ["f1_macro"], "scidocs_mag_mesh", "scidocs_mag", False),
    _t("SciDocs MeSH", CLASSIFICATION, ["f1_macro"], "scidocs_mag_mesh", "scidocs_mesh", False,
       cached=True),
    _t("Peer Review Score", REGRESSION, ["kendalltau"], "peer_review_score_hIndex",
       "peer_review_score", False),
    _t("Max hIndex", REGRESSION, ["kendalltau"], "peer_review_score_hIndex", "hIndex", False,
       cached=True),
    _t("Tweet Mentions", REGRESSION, ["kendalltau"], "tweet_mentions", "tweet_mentions", False),
    _t("S2AND", PROXIMITY, ["b3_f1"], "s2and", "s2and", False, external=True),
    _t("Paper-Reviewer Matching", PROXIMITY, ["P_5", "P_10"], "paper_reviewer_matching",
       "paper_reviewer_matching", False),
    _t("RELISH", PROXIMITY, ["ndcg"], "relish", "relish", False),
    _t("SciDocs Cite", PROXIMITY, ["map", "ndcg"], "scidocs_view_cite_read", "scidocs_cite",
       False, simple_format=True),
    _t("SciDocs CoCite", PROXIMITY, ["map", "ndcg"], "scidocs_view_cite_read",
       "scidocs_cocite", False, simple_format=True, cached=True),
    _t("SciDocs CoView", PROXIMITY, ["map", "ndcg"], "scidocs_view_cite_read", "scidocs_view",
       False, simple_format=True, cached=True),
    _t("SciDocs CoRead", PROXIMITY, ["map", "ndcg"], "scidocs_view_cite_read", "scidocs_read",
       False, simple_format=True, cached=True),
    _t("NFCorpus", SEARCH, ["ndcg"], "nfcorpus", "nfcorpus", False),
    _t("TREC-CoVID", SEARCH, ["ndcg"], "trec_covid", "trec_covid", False),
)
BY_NAME = {t.name: t for t in TASKS}


def get(name: str) -> TaskSpec:
  """A task by official name or test-config name (`fos`, `scidocs_cite`, ...), any case."""
  key = name.strip().lower()
  for t in TASKS:
    if key in (t.name.lower(), t.test.lower()):
      return t
  raise KeyError(f"unknown SciRepEval task {name!r}; known: "
                 f"{', '.join(t.test for t in TASKS)} (or their official names)")


def read_tasks_config(path) -> dict[str, TaskSpec]:
  """The official `scirepeval_tasks.jsonl` as TaskSpecs (in-train flags from our table)."""
  out = {}
  for where, d in readers.objects(common_readers.read_jsonl(path),
                                  ("name", "type", "data", "metrics")):
    if d["type"] not in FORMAT_SHORT:
      raise readers.located(where, f"field 'type': unknown format {d['type']!r}")
    cfg = d["data"]
    meta, test = cfg.get("meta"), cfg.get("test", cfg.get("meta"))
    config = lambda x: x["config"] if isinstance(x, Mapping) else str(x)
    known = BY_NAME.get(d["name"])
    out[d["name"]] = TaskSpec(
        name=d["name"], type=d["type"], metrics=tuple(d["metrics"]), meta=config(meta),
        test=config(test), in_train=bool(known and known.in_train),
        few_shot=tuple((int(r["sample_size"]), int(r["iterations"]))
                       for r in d.get("few_shot", [])),
        multi_label=bool(d.get("multi_label")),
        fields=tuple(d.get("fields", ("title", "abstract"))),
        simple_format=bool(cfg.get("simple_format")),
        cached=bool(d.get("embeddings", {}).get("load")))
  return out


def tasks_config_json(spec: TaskSpec) -> str:
  """One line of the official config for `spec` (what `read_tasks_config` reads back)."""
  d = {"name": spec.name, "type": spec.type,
       "data": {"meta": {"name": "allenai/scirepeval", "config": spec.meta},
                "test": {"name": "allenai/scirepeval_test", "config": spec.test}},
       "metrics": list(spec.metrics)}
  if spec.few_shot:
    d["few_shot"] = [{"sample_size": k, "iterations": n} for k, n in spec.few_shot]
  if spec.multi_label:
    d["multi_label"] = True
  return json.dumps(d)
