"""Ranking for the proximity and search tasks, scored by trec_eval through pytrec_eval.

The run re-ranks only each query's judged candidates (`IREvaluator.retrieval`):
score = minus the Euclidean distance between unnormalised embeddings. Queries or
candidates without an embedding drop out of the run (they stay in the ideal
DCG), which `missing` counts; a query whose candidates all lack one stops the
scoring, as it stops the official evaluator. trec_eval breaks score ties by doc id
(descending), counts a judged query with no relevant document as 0, and drops
a query absent from the run; never pre-sort or re-tie scores here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pytrec_eval
from sklearn.metrics.pairwise import cosine_similarity, euclidean_distances

Qrels = Mapping[str, Mapping[str, int]]
Run = dict[str, dict[str, float]]


@dataclasses.dataclass
class Missing:
  """How much of the qrels had no embedding (official behaviour: silently skipped)."""
  queries: int = 0
  candidates: int = 0


def _grade(query: str, doc: str, grade) -> int:
  """A relevance grade as trec_eval takes it: an integer (1.0 is 1; 0.5 is refused, where
  int() would make it 0 and the official evaluator raises)."""
  value = float(grade)
  if not value.is_integer():
    raise ValueError(f"qrels[{query!r}][{doc!r}] = {grade!r}: relevance grades are integers")
  return int(value)


def ir_metrics(qrels: Qrels, run: Mapping[str, Mapping[str, float]],
               metrics: Sequence[str]) -> dict[str, float]:
  """trec_eval measures (`map`, `ndcg`, `P_5`, ...) averaged over queries, x100, rounded to 2."""
  qrels = {q: {d: _grade(q, d, s) for d, s in docs.items()} for q, docs in qrels.items()}
  run = {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()}
  per_query = pytrec_eval.RelevanceEvaluator(qrels, set(metrics)).evaluate(run)
  out = {}
  for measure in sorted(metrics):
    value = pytrec_eval.compute_aggregated_measure(
        measure, [m[measure] for m in per_query.values()])
    out[measure] = float(np.round(100 * value, 2))
  return out


def embedding_run(embeddings: Mapping[str, np.ndarray], qrels: Qrels,
                  missing: Missing | None = None) -> Run:
  """{query: {candidate: -euclidean distance}} over the judged candidates with embeddings.

  A query with an embedding but none among its judged candidates is an error: the
  official `IREvaluator.retrieval` fails there (sklearn refuses an empty candidate
  array) and the task gets no number; counted as 0, it would lower the average.
  """
  run: Run = {}
  for qid, judged in qrels.items():
    if qid not in embeddings:
      if missing is not None:
        missing.queries += 1
      continue
    cids = [cid for cid in judged if cid in embeddings]
    if missing is not None:
      missing.candidates += len(judged) - len(cids)
    if not cids:
      raise ValueError(f"query {qid!r} has an embedding but none of its {len(judged)} judged "
                       f"candidates has one (e.g. {sorted(judged)[:3]}): embed them, or drop "
                       "the query's rows from the qrels")
    cands = np.array([embeddings[cid] for cid in cids])
    distances = euclidean_distances(cands, np.array([embeddings[qid]])).ravel()
    run[qid] = {cid: -float(d) for cid, d in zip(cids, distances)}
  return run


def reviewer_run(embeddings: Mapping[str, np.ndarray], qrels: Qrels,
                 reviewer_papers: Mapping[str, Sequence[str]]) -> Run:
  """Paper-Reviewer Matching: a reviewer scores the mean of its top-3 cosine similarities.

  Like the official code, a judged reviewer without metadata is left out; a
  missing embedding is an error naming the paper (the official code raises too).
  """
  run: Run = {}
  for qid, judged in qrels.items():
    if qid not in embeddings:
      raise KeyError(f"Paper-Reviewer Matching: no embedding for query paper {qid!r}")
    query = np.array([embeddings[qid]])
    run[qid] = {}
    for rid in judged:
      if rid not in reviewer_papers:
        continue
      papers = reviewer_papers[rid]
      lacking = [p for p in papers if p not in embeddings]
      if lacking:
        raise KeyError(f"Paper-Reviewer Matching: no embedding for reviewer {rid!r}'s "
                       f"papers {lacking[:5]}")
      sims = cosine_similarity(np.array([embeddings[p] for p in papers]), query).ravel()
      run[qid][rid] = float(np.mean(sorted(sims, reverse=True)[:3]))
  return run


def scores_run(scored_pairs: Sequence[tuple[str, str, float]]) -> Run:
  """A run from (query id, candidate id, score) triples, e.g. text-to-text relevance scores."""
  run: Run = {}
  for qid, cid, score in scored_pairs:
    run.setdefault(str(qid), {})[str(cid)] = float(score)
  return run


def reviewer_scores_run(paper_scores: Mapping[str, Mapping[str, float]], qrels: Qrels,
                        reviewer_papers: Mapping[str, Sequence[str]]) -> Run:
  """Reviewer Matching from per-paper scores: a reviewer gets the mean of its top 3.

  `paper_scores[query][paper]` scores a reviewer's paper against the query
  paper (e.g. text-to-text relevance); the aggregation is the official one
  (top-3 mean), with any score in place of the cosine.
  """
  run: Run = {}
  for qid, judged in qrels.items():
    scores = paper_scores.get(qid, {})
    run[qid] = {}
    for rid in judged:
      papers = [p for p in reviewer_papers.get(rid, ()) if p in scores]
      if papers:
        run[qid][rid] = float(np.mean(sorted((scores[p] for p in papers), reverse=True)[:3]))
  return run
