"""Text-to-text examples of each SciRepEval task and split, read from the data root.

Layout under `$CROSSTASK_DATA_DIR/scirepeval/` (the S3 layout plus meta exports):
  train/<config>/{train,val}.jsonl    training rows (TRAINING.md) -> splits train, validation
  test/<test config>/                 train.csv / test.csv probe splits, test_qrel.jsonl, ...
  test/<test config>/meta.jsonl       texts of the papers (or meta/<meta config>.jsonl)
  sample_data/                        the official training samples -> split `sample`
Out-of-train classification/regression tasks fine-tune on their probe `train`
split (not comparable to the paper); probe `test` splits and qrels are never
training data, and training examples naming an evaluated paper or query are
left out (`held_out_ids`). Pairs for training: up to 5 (positive, negative) candidate pairs
per query (positives cycled), as the official IR training dataset.
"""

from __future__ import annotations

import pathlib
import statistics
from collections.abc import Iterator
from typing import Any

from crosstask import paths
from crosstask.tasks.scirepeval import inputs, readers, text

SAMPLE_FILES = {"fos": "fos_small.json", "mesh_descriptors": "mesh_small.json",
                "search": "search_small.jsonl", "same_author": "s2and_small.json",
                "cite_prediction": "specter_small.json"}
MAX_TRAINING_PAIRS = 5


def root() -> pathlib.Path:
  return (paths.data_dir() or paths.SAMPLE_DIR) / "scirepeval"


def splits(task: text.TextTask) -> tuple[str, ...]:
  """In-train tasks: train/validation; out-of-train CLF/RGN: their probe `train` split;
  out-of-train pair tasks have no training data (qrels are test only)."""
  if task.spec.in_train:
    out = ("train", "validation")
  else:
    out = () if task.kind == "pair" else ("train",)
  if task.spec.evaluated:
    out += ("test",)
  if task.key in SAMPLE_FILES:
    out += ("sample",)
  return out


def _meta_records(task: text.TextTask) -> list[dict]:
  base = root()
  for path in (base / "test" / task.spec.test / "meta.jsonl",
               base / "meta" / f"{task.spec.meta}.jsonl"):
    if path.is_file():
      return inputs.read_meta_any(path)
  raise FileNotFoundError(f"no meta file for {task.name}: looked for "
                          f"{base / 'test' / task.spec.test / 'meta.jsonl'} and "
                          f"{base / 'meta' / (task.spec.meta + '.jsonl')}")


def _probe_records(task: text.TextTask, split: str) -> Iterator[dict[str, Any]]:
  directory = root() / "test" / task.spec.test
  path = next((directory / f"{split}{s}" for s in (".csv", ".jsonl")
               if (directory / f"{split}{s}").is_file()), directory / f"{split}.csv")
  rows = readers.read_probe_split(readers.require_file(path, f"{task.name} probe split"))
  meta = {p["doc_id"]: p for p in _meta_records(task)}
  for paper_id, label in rows:
    if paper_id in meta:  # As the official probes: papers without text are skipped.
      yield {**meta[paper_id], "label": label}


def probe_train_median(task: text.TextTask) -> float:
  """The median label of a regression task's probe `train` split: what the spec fills
  an unparsable prediction with."""
  labels = [float(r["label"]) for r in _probe_records(task, "train")]
  if not labels:
    raise ValueError(f"{task.name}: the probe train split has no labelled paper")
  return statistics.median(labels)


def training_pairs(row: dict[str, Any], limit: int = MAX_TRAINING_PAIRS
                   ) -> list[tuple[dict, int]]:
  """(candidate, grade) for up to `limit` (positive, negative) pairs of one query."""
  pos = [c for c in row["candidates"] if c.get("score", 0) > 0]
  neg = [c for c in row["candidates"] if c.get("score", 0) == 0]
  out = []
  for i in range(min(limit, len(neg)) if pos else 0):
    out += [(pos[i % len(pos)], pos[i % len(pos)]["score"]), (neg[i], 0)]
  return out


def _pair_training(task: text.TextTask, path: pathlib.Path) -> Iterator[dict[str, str]]:
  if task.key == "cite_prediction":
    for n, t in enumerate(readers.read_triplets(path)):
      for part, grade in (("pos", 1), ("neg", 0)):
        yield text.pair_examples(task, {"query": t["query"], "candidates": [
            {**t[part], "score": grade}]})[0]
    return
  for n, row in enumerate(readers.read_ir_rows(path, graded=True)):
    query = {**row["query"], "doc_id": row["query"].get("doc_id") or f"{path.name}:{n}"}
    cands = [{**c, "score": g} for c, g in training_pairs(row)]
    if cands:
      yield from text.pair_examples(task, {"query": query, "candidates": cands})


def _reviewer_test(task: text.TextTask) -> Iterator[dict[str, str]]:
  """Paper-Reviewer Matching: one pair per (query paper, reviewer paper), graded by reviewer."""
  directory = root() / "test" / task.spec.test
  qrels = readers.read_qrels(readers.require_file(directory / "test_hard_qrel.jsonl",
                                                  f"{task.name} qrels"))
  reviewers = readers.read_reviewer_metadata(readers.require_file(
      directory / "reviewer_metadata.jsonl", f"{task.name} reviewer metadata"))
  papers = {p["doc_id"]: p for p in _meta_records(task)}
  for qid, judged in qrels.items():
    for rid, grade in judged.items():
      for pid in reviewers.get(rid, ()):
        if qid in papers and pid in papers:
          yield {"inputs": text.pair_inputs(task, papers[qid], papers[pid]),
                 "targets": text.YES if grade > 0 else text.NO, "query_id": qid,
                 "cand_id": rid, "grade": str(grade)}


def _pair_test(task: text.TextTask) -> Iterator[dict[str, str]]:
  if task.key == "paper_reviewer_matching":
    yield from _reviewer_test(task)
    return
  directory = root() / "test" / task.spec.test
  qrels = readers.read_qrels(readers.require_file(directory / "test_qrel.jsonl",
                                                  f"{task.name} qrels"))
  for row in text.judged_rows(_meta_records(task), qrels):
    yield from text.pair_examples(task, row, qrels.get(row["query"]["doc_id"], {}))


def held_out_ids(task: text.TextTask) -> set[str]:
  """Ids the task is evaluated on (probe `test` papers, qrels queries), when present.

  Training examples mentioning them are dropped (why: the text-to-text model must
  not see a paper or query it is later scored on; official splits are disjoint,
  a user's re-split may not be).
  """
  directory = root() / "test" / task.spec.test
  ids: set[str] = set()
  for name in ("test.csv", "test.jsonl"):
    if (directory / name).is_file():
      ids |= {pid for pid, _ in readers.read_probe_split(directory / name)}
  for name in ("test_qrel.jsonl", "test_hard_qrel.jsonl", "test_soft_qrel.jsonl"):
    if (directory / name).is_file():
      ids |= set(readers.read_qrels(directory / name))
  return ids


def examples(task: text.TextTask, split: str) -> list[dict[str, str]]:
  """The split's {"inputs", "targets", ...} examples (strings), in file order.

  Training splits (`train`, `validation`, `sample`) leave out `held_out_ids`.
  """
  if split not in splits(task):
    raise ValueError(f"{task.name} has no split {split!r}; it has {splits(task)}")
  if split == "sample":
    path = root() / "sample_data" / SAMPLE_FILES[task.key]
  elif split in ("train", "validation") and task.spec.in_train:
    path = root() / "train" / task.spec.meta / ("train.jsonl" if split == "train" else "val.jsonl")
  else:
    path = None
  if path is None:
    out = list(_pair_test(task)) if task.kind == "pair" else [
        text.paper_example(task, r) for r in _probe_records(task, split)]
    return [dict(r) for r in out]
  path = readers.require_file(path, f"{task.name} {split} file")
  if task.kind == "pair":
    out = [dict(r) for r in _pair_training(task, path)]
  else:
    out = [text.paper_example(task, r) for r in readers.read_training(
        path, task.label_field, label_set=task.label_names or None)]
  held_out = held_out_ids(task)
  if held_out:
    out = [e for e in out if e.get("doc_id", e.get("query_id")) not in held_out
           and e.get("cand_id") not in held_out]
  return out
