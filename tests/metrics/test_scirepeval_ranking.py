"""Ranking metrics: hand-computed trec_eval values, ties, empty queries, the embedding runs."""

import math

import numpy as np
import pytest
from sklearn.metrics.pairwise import euclidean_distances

from crosstask.metrics.scirepeval import ranking

QRELS = {"q1": {"a": 1, "b": 0, "c": 2, "d": 0},
         "q2": {"e": 0, "f": 0},          # No relevant document: scores 0 and counts.
         "q3": {"g": 1}}                  # Not in the run: dropped from the average.
# b and c tie; trec_eval puts the larger doc id first, so the order is d, c, b, a.
RUN = {"q1": {"a": 0.1, "b": 0.5, "c": 0.5, "d": 0.9}, "q2": {"e": 1.0, "f": 2.0}}


def test_hand_computed_map_ndcg_precision_with_ties_and_empty_query():
  # q1: relevant c at rank 2 (P=1/2), a at rank 4 (P=2/4) -> AP 0.5 (0.4167 if b came first).
  # nDCG: (2/log2 3 + 1/log2 5) / (2 + 1/log2 3) = 0.64332; P@5 = 2/5, P@10 = 2/10.
  ndcg_q1 = (2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3))
  got = ranking.ir_metrics(QRELS, RUN, ["map", "ndcg", "P_5", "P_10"])
  assert got == {"map": 25.0, "ndcg": round(100 * ndcg_q1 / 2, 2), "P_5": 20.0, "P_10": 10.0}
  assert got["ndcg"] == 32.17


def test_a_fractional_relevance_grade_is_refused_not_truncated():
  # int(0.5) would make "b" irrelevant and score map 100; pytrec_eval (the official
  # evaluator) refuses any float grade. An integral float is the integer it names.
  with pytest.raises(ValueError, match=r"qrels\['q'\]\['b'\] = 0.5: relevance grades"):
    ranking.ir_metrics({"q": {"a": 1, "b": 0.5}}, {"q": {"a": 2.0, "b": 1.0}}, ["map"])
  assert ranking.ir_metrics({"q": {"a": 1.0, "b": 0}}, {"q": {"a": 2.0, "b": 1.0}},
                            ["map"]) == {"map": 100.0}


def test_tie_break_by_doc_id_changes_map():
  # Same scores, ids swapped: now the relevant doc wins the tie.
  qrels = {"q": {"x": 0, "y": 1}}
  assert ranking.ir_metrics(qrels, {"q": {"x": 1.0, "y": 1.0}}, ["map"]) == {"map": 100.0}
  qrels = {"q": {"x": 1, "y": 0}}
  assert ranking.ir_metrics(qrels, {"q": {"x": 1.0, "y": 1.0}}, ["map"]) == {"map": 50.0}


def test_unjudged_documents_count_as_non_relevant():
  qrels = {"q": {"a": 1}}
  run = {"q": {"z": 2.0, "a": 1.0}}
  assert ranking.ir_metrics(qrels, run, ["map", "P_5"]) == {"map": 50.0, "P_5": 20.0}


def _embeddings():
  rng = np.random.RandomState(0)
  return {k: rng.normal(size=4).astype(np.float32) for k in "q1 q2 a b c d e f".split()}


def test_embedding_run_is_minus_euclidean_over_judged_candidates():
  emb = _embeddings()
  qrels = {"q1": {"a": 1, "b": 0, "c": 2, "d": 0, "zz": 1}, "q2": {"e": 1, "f": 0},
           "nq": {"a": 1}}
  missing = ranking.Missing()
  run = ranking.embedding_run(emb, qrels, missing)
  assert sorted(run) == ["q1", "q2"] and missing.queries == 1 and missing.candidates == 1
  want = -euclidean_distances(np.array([emb[c] for c in "abcd"]), emb["q1"][None]).ravel()
  np.testing.assert_allclose([run["q1"][c] for c in "abcd"], want, rtol=1e-6)
  assert "zz" not in run["q1"]
  # The missing candidate stays in the ideal DCG: nDCG < 1 even if the rest ranks perfectly.
  perfect = {"q": {"a": 2.0, "b": 1.0}}
  assert ranking.ir_metrics({"q": {"a": 1, "b": 0, "c": 1}}, perfect, ["ndcg"])["ndcg"] < 100


def test_reviewer_run_is_mean_of_top3_cosines():
  emb = {"p": np.array([1.0, 0.0]), "r1a": np.array([1.0, 0.0]), "r1b": np.array([0.0, 1.0]),
         "r1c": np.array([1.0, 1.0]), "r1d": np.array([-1.0, 0.0]), "r2a": np.array([0.0, 2.0])}
  reviewers = {"r1": ["r1a", "r1b", "r1c", "r1d"], "r2": ["r2a"]}
  run = ranking.reviewer_run(emb, {"p": {"r1": 3, "r2": 0, "r9": 1}}, reviewers)
  # r1 cosines: 1, 0, 0.7071, -1 -> top 3 mean (1 + 0.7071 + 0) / 3; r9 has no metadata.
  assert run["p"]["r1"] == pytest.approx((1 + 1 / math.sqrt(2)) / 3)
  assert run["p"]["r2"] == 0.0 and "r9" not in run["p"]
  with pytest.raises(KeyError, match="r2a"):
    ranking.reviewer_run({"p": emb["p"]}, {"p": {"r2": 1}}, reviewers)


def test_scores_run_from_text_to_text_scores():
  run = ranking.scores_run([("q", 1, -0.5), ("q", "2", 0.25)])
  assert run == {"q": {"1": -0.5, "2": 0.25}}


def test_query_whose_candidates_all_lack_embeddings_stops_but_missing_query_drops():
  # The official IREvaluator.retrieval: a query without an embedding is skipped, and one
  # with an embedding but no embedded candidate fails in euclidean_distances (no number).
  emb = _embeddings()
  run = ranking.embedding_run(emb, {"q1": {"a": 1, "b": 0}, "nq": {"a": 1}})
  assert sorted(run) == ["q1"]
  with pytest.raises(ValueError, match=r"query 'q2' has an embedding but none of its 2 "
                                       r"judged candidates has one \(e.g. \['yy', 'zz'\]\)"):
    ranking.embedding_run(emb, {"q1": {"a": 1, "b": 0}, "q2": {"zz": 1, "yy": 0}})
  with pytest.raises(ValueError):  # what the official retrieval meets there
    euclidean_distances(np.array([]), np.array([emb["q2"]]))


def test_reviewer_scores_run_is_top3_mean_of_paper_scores():
  scores = {"p": {"a1": 3.0, "a2": -1.0, "a3": 2.0, "a4": 1.0, "b1": 0.5}}
  run = ranking.reviewer_scores_run(scores, {"p": {"ra": 1, "rb": 0, "rc": 1}, "x": {"ra": 1}},
                                    {"ra": ["a1", "a2", "a3", "a4"], "rb": ["b1", "b9"]})
  assert run == {"p": {"ra": 2.0, "rb": 0.5}, "x": {}}  # rc: no metadata; x: no scores.
