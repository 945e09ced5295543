"""The 23 text forms of SciRepEval (all tasks but S2AND) as English arrow prompts.

Inputs are `<prompt> <labelled fields>`, e.g.
`Title + Abstract -> Fields of study Title: …; Abstract: …` laid out by the
shared `crosstask.tasks.common.layout`; the target is the bare value: label name(s), a number as `f"{y:.4g}"`, or `yes`/`no` for a
(query, candidate) pair of a proximity or search task. Pairs are ranked by
log P(yes) − log P(no) (`crosstask.relevance`) and scored with the
same trec_eval measures as embeddings. Pure Python.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from crosstask.tasks.scirepeval import benchmark as B
from crosstask.tasks.common.schema import Field, Schema
from crosstask.tasks.scirepeval import inputs as I

YES, NO = "yes", "no"
FOS_LABELS = (
    "Agricultural and Food sciences", "Art", "Biology", "Business", "Chemistry",
    "Computer science", "Economics", "Education", "Engineering", "Environmental science",
    "Geography", "Geology", "History", "Law", "Linguistics", "Materials science", "Mathematics",
    "Medicine", "Philosophy", "Physics", "Political science", "Psychology", "Sociology")
MESH_LABELS = (
    "Brain", "Neoplasms", "Breast Neoplasms", "Liver", "Anti-Bacterial Agents", "Neurons",
    "Antineoplastic Agents", "HIV Infections", "DNA", "Proteins", "Calcium", "Hypertension",
    "Postoperative Complications", "Escherichia coli", "Lung Neoplasms", "Bacterial Proteins",
    "Aging", "Obesity", "Kidney", "Myocardial Infarction", "Diabetes Mellitus, Type 2", "Lung",
    "Liver Neoplasms", "Mental Disorders", "Asthma", "Prostatic Neoplasms", "Skin Neoplasms",
    "Cardiovascular Diseases", "Carcinoma, Squamous Cell", "Adenocarcinoma")
# Int-labelled test configs: the index order of these names is NOT published in
# any file we have (unverified); the readers check the class count and range.
DRSM_LABELS = ("clinical characteristics", "therapeutics in the clinic", "disease mechanism",
               "patient-based therapeutics", "other", "irrelevant")
SCIDOCS_MAG_LABELS = (
    "Art", "Biology", "Business", "Chemistry", "Computer science", "Economics", "Engineering",
    "Environmental science", "Geography", "Geology", "History", "Materials science",
    "Mathematics", "Medicine", "Philosophy", "Physics", "Political science", "Psychology",
    "Sociology")
SCIDOCS_MESH_LABELS = (
    "Cardiovascular diseases", "Chronic kidney disease", "Chronic respiratory diseases",
    "Diabetes mellitus", "Digestive diseases", "HIV/AIDS", "Hepatitis A/B/C/E",
    "Mental disorders", "Musculoskeletal disorders", "Neoplasms (cancer)",
    "Neurological disorders")


@dataclasses.dataclass(frozen=True)
class TextTask:
  """How one SciRepEval task reads as text."""
  key: str                           # task name suffix: scirepeval_<key>
  spec: B.TaskSpec
  output: str                        # the right-hand side of the arrow
  kind: str                          # "label" | "labels" | "binary" | "number" | "pair"
  label_names: tuple[str, ...] = ()
  candidate: str = "Candidate"       # the pair's second paper ("Reviewer paper" for PRM)
  label_field: str = "label"         # the training rows' label field

  @property
  def name(self) -> str:
    return f"scirepeval_{self.key}"

  @property
  def input_labels(self) -> tuple[str, ...]:
    doc = tuple(I.FIELD_LABELS[f] for f in self.spec.fields)
    if self.kind != "pair":
      return doc
    if self.spec.type == B.SEARCH:
      return ("Query",) + doc
    return doc + tuple(f"{self.candidate} {l.lower()}" for l in doc)

  @property
  def prompt(self) -> str:
    return " + ".join(self.input_labels) + " -> " + self.output


def _task(key, name, output, kind, labels=(), **kw) -> TextTask:
  return TextTask(key, B.BY_NAME[name], output, kind, tuple(labels), **kw)


TEXT_TASKS: tuple[TextTask, ...] = (
    _task("fos", "Fields of study", "Fields of study", "labels", FOS_LABELS,
          label_field="labels_text"),
    _task("mesh_descriptors", "MeSH", "MeSH descriptor", "label", MESH_LABELS,
          label_field="descriptor"),
    _task("cite_count", "Citation Count", "Citations", "number", label_field="log_citations"),
    _task("pub_year", "Publication Year", "Publication year", "number",
          label_field="scaled_year"),
    _task("same_author", "Same Author Detection", "Same author", "pair"),
    _task("high_influence_cite", "Highly Influential Citations", "Highly influential citation",
          "pair"),
    _task("cite_prediction", "Citation Prediction", "Cites", "pair"),
    _task("search", "Search", "Relevant", "pair"),
    _task("biomimicry", "Biomimicry", "Biomimicry", "binary"),
    _task("drsm", "DRSM", "Disease research aspect", "label", DRSM_LABELS),
    _task("scidocs_mag", "SciDocs MAG", "Field of study", "label", SCIDOCS_MAG_LABELS),
    _task("scidocs_mesh", "SciDocs MeSH", "Disease class", "label", SCIDOCS_MESH_LABELS),
    _task("peer_review_score", "Peer Review Score", "Review score", "number"),
    _task("hIndex", "Max hIndex", "Max author h-index", "number"),
    _task("tweet_mentions", "Tweet Mentions", "Tweet mentions", "number"),
    _task("paper_reviewer_matching", "Paper-Reviewer Matching", "Reviewer match", "pair",
          candidate="Reviewer paper"),
    _task("relish", "RELISH", "Relevant", "pair"),
    _task("scidocs_cite", "SciDocs Cite", "Cites", "pair"),
    _task("scidocs_cocite", "SciDocs CoCite", "Co-cited", "pair"),
    _task("scidocs_view", "SciDocs CoView", "Co-viewed", "pair"),
    _task("scidocs_read", "SciDocs CoRead", "Co-read", "pair"),
    _task("nfcorpus", "NFCorpus", "Relevant", "pair"),
    _task("trec_covid", "TREC-CoVID", "Relevant", "pair"),
)
BY_KEY = {t.key: t for t in TEXT_TASKS}
IN_TRAIN = tuple(t.key for t in TEXT_TASKS if t.spec.in_train)

# The fields for the shared layout: canonical order = prompt order (a search query
# first, the pair's second paper last), then one output field per distinct output.
INPUTS = (("query", "Query"), ("title", "Title"), ("abstract", "Abstract"), ("venue", "Venue"),
          ("year", "Year"), ("candidate_title", "Candidate title"),
          ("candidate_abstract", "Candidate abstract"),
          ("reviewer_paper_title", "Reviewer paper title"),
          ("reviewer_paper_abstract", "Reviewer paper abstract"))


def _field_name(label: str) -> str:
  return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def output_field(task: TextTask) -> str:
  return _field_name(task.output)


def input_fields(task: TextTask) -> tuple[str, ...]:
  return tuple(_field_name(label) for label in task.input_labels)


_OUTPUTS: dict[str, Field] = {}
for _t in TEXT_TASKS:
  _OUTPUTS.setdefault(output_field(_t), Field(output_field(_t), {"en": _t.output},
                                              kind="number" if _t.kind == "number" else "label"))

SCHEMA = Schema("scirepeval", tuple(Field(n, {"en": l}) for n, l in INPUTS)
                + tuple(_OUTPUTS.values()))


def get(key: str) -> TextTask:
  """A text task by key (`fos`), full name (`scirepeval_fos`) or official name."""
  k = key.removeprefix("scirepeval_")
  if k in BY_KEY:
    return BY_KEY[k]
  spec = B.get(key)
  for t in TEXT_TASKS:
    if t.spec is spec:
      return t
  raise KeyError(f"{spec.name} has no text form (S2AND is scored externally)")


def _layout(task: TextTask, record: Mapping[str, str]) -> str:
  from crosstask.tasks.common import layout  # pylint: disable=g-import-not-at-top
  return layout.format_inputs(SCHEMA, record, input_fields(task), (output_field(task),), "en")


def _paper_fields(item: Mapping[str, Any], fields: Sequence[str], prefix: str = ""
                  ) -> dict[str, str]:
  return {f"{prefix}{f}": str(item.get(f) or "") for f in fields}


def pair_inputs(task: TextTask, query: Mapping[str, Any], candidate: Mapping[str, Any]) -> str:
  """`<prompt> Query: …; Title: …` (search) or `<prompt> Title: …; Candidate title: …`.

  Every input field is labelled, empty or not (the shared layout), so one task
  has one prompt; values are sanitised so no marker occurs inside them.
  """
  fields = task.spec.fields
  if "query" in query:  # A text query (search tasks).
    record = {"query": query["query"], **_paper_fields(candidate, fields)}
  else:
    prefix = task.candidate.lower().replace(" ", "_") + "_"
    record = {**_paper_fields(query, fields), **_paper_fields(candidate, fields, prefix)}
  return _layout(task, record)


def paper_inputs(task: TextTask, paper: Mapping[str, Any]) -> str:
  return _layout(task, _paper_fields(paper, task.spec.fields))


def number_text(value: float) -> str:
  return f"{float(value):.4g}"


def label_target(task: TextTask, label: Any) -> str:
  """The target text of a classification label: a name, names, or an index into the names."""
  if task.kind == "binary":
    if label not in (0, 1, True, False, "0", "1"):
      raise ValueError(f"{task.name}: binary label must be 0 or 1, got {label!r}")
    return YES if int(label) == 1 else NO
  names = task.label_names
  def one(value):
    if isinstance(value, str):
      if value not in names:
        raise ValueError(f"{task.name}: unknown label {value!r}")
      return value
    index = int(value)
    if not 0 <= index < len(names):
      raise ValueError(f"{task.name}: label index {index} outside 0..{len(names) - 1}")
    return names[index]
  if task.kind == "labels":
    values = label
    if isinstance(label, list) and len(label) == len(names) and set(label) <= {0, 1} and \
        not all(isinstance(v, str) for v in label):
      values = [i for i, v in enumerate(label) if v == 1]  # multi-hot
    chosen = {one(v) for v in (values if isinstance(values, list) else [values])}
    return ", ".join(n for n in names if n in chosen)  # Canonical (label-file) order.
  return one(label)


def paper_example(task: TextTask, record: Mapping[str, Any]) -> dict[str, str]:
  """{"inputs", "targets", "doc_id"} of a classification / regression record with `label`."""
  target = number_text(record["label"]) if task.kind == "number" else \
      label_target(task, record["label"])
  return {"inputs": paper_inputs(task, record), "targets": target, "doc_id": record["doc_id"]}


def pair_examples(task: TextTask, row: Mapping[str, Any],
                  qrels: Mapping[str, int] | None = None) -> list[dict[str, str]]:
  """One example per judged candidate of an IR row: target yes if its grade > 0.

  Grades come from `qrels` (evaluation) or the candidates' `score` (training).
  """
  query = row["query"]
  qid = query.get("doc_id") or row.get("doc_id", "")
  out = []
  for cand in row["candidates"]:
    grade = qrels.get(cand["doc_id"]) if qrels is not None else cand.get("score")
    if grade is None:
      continue
    out.append({"inputs": pair_inputs(task, query, cand), "targets": YES if grade > 0 else NO,
                "query_id": qid, "cand_id": cand["doc_id"], "grade": str(grade)})
  return out


def judged_rows(meta: Sequence[Mapping[str, Any]], qrels: Mapping[str, Mapping[str, int]] | None
                ) -> list[dict[str, Any]]:
  """IR rows `{query, candidates}` with the query's doc_id set, from either meta form.

  IR-format meta (rows with candidates) is taken as is; a flat paper list
  (SciDocs' `simple_format`) is joined with the qrels: each judged query with
  its judged candidates that have text. Queries without an id get `q<row>`.
  """
  if meta and "candidates" in meta[0]:
    out = []
    for n, row in enumerate(meta):
      qid = row["query"].get("doc_id") or row.get("doc_id") or f"q{n}"
      out.append({**row, "query": {**row["query"], "doc_id": qid}})
    return out
  if qrels is None:
    raise ValueError("a flat meta file (papers, no candidates) needs qrels to form pairs")
  papers = {p["doc_id"]: p for p in meta}
  return [{"query": papers[qid], "candidates": [papers[c] for c in judged if c in papers]}
          for qid, judged in qrels.items() if qid in papers]
