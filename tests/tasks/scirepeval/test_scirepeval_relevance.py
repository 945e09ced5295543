"""`relevance.rank` in process: IR rows with qrels, and Paper-Reviewer Matching."""

import json
import pathlib
import sys

import pytest

import runtime_subprocess as rs
from crosstask import relevance
from crosstask.metrics.scirepeval import ranking
from crosstask.runtime.state import checkpoints
from crosstask.tasks.scirepeval import readers

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "scirepeval"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import scirepeval_samples as samples  # noqa: E402  pylint: disable=g-import-not-at-top


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  path, model = samples.write_init_checkpoint(rs.TINY, tmp_path_factory.mktemp("ckpt"),
                                             return_model=True)
  return model, checkpoints.RestoreCheckpointConfig(path=str(path))


def test_rank_relish_rows_with_qrels(tiny, tmp_path):
  model, restore = tiny
  qrels_path = FIXTURES / "relish" / "test_qrel.jsonl"
  got = relevance.rank(model=model, restore_checkpoint_cfg=restore, task="relish",
                           meta_file=str(FIXTURES / "relish" / "meta.jsonl"),
                           qrels_file=str(qrels_path), output_dir=str(tmp_path), max_length=64)
  run = [json.loads(l) for l in (tmp_path / "scirepeval_relish-run.jsonl").open()]
  assert [(r["query_id"], r["cand_id"], r["grade"]) for r in run] == [
      ("r0", "c1", 2), ("r0", "c2", 0), ("r0", "c3", 1), ("r1", "c2", 0), ("r1", "c4", 0)]
  # Judged c9 has no text: it stays in the qrels (ideal DCG), as in the embedding path.
  want = ranking.ir_metrics(readers.read_qrels(qrels_path), ranking.scores_run(
      [(r["query_id"], r["cand_id"], r["score"]) for r in run]), ["ndcg"])
  assert got["RELISH"] == want and want["ndcg"] <= 50.0  # r1 has only c9 relevant.


def test_rank_reviewers(tiny, tmp_path):
  model, restore = tiny
  prm = FIXTURES / "paper_reviewer_matching"
  reviewers = readers.read_reviewer_metadata(prm / "reviewer_metadata.jsonl")
  meta = tmp_path / "meta.jsonl"
  with open(meta, "w") as f:
    for pid in ["p0", "p1"] + [p for ps in reviewers.values() for p in ps]:
      f.write(json.dumps({"doc_id": pid, "title": f"Paper {pid}", "abstract": "text"}) + "\n")
  got = relevance.rank(
      model=model, restore_checkpoint_cfg=restore, task="paper_reviewer_matching",
      meta_file=str(meta), reviewers_file=str(prm / "reviewer_metadata.jsonl"),
      qrels_file=[str(prm / "test_hard_qrel.jsonl"), str(prm / "test_soft_qrel.jsonl")],
      output_dir=str(tmp_path), max_length=64)
  scores = got["Paper-Reviewer Matching"]
  assert set(scores) == {"hard_P_5", "hard_P_10", "soft_P_5", "soft_P_10"}
  # P@10 counts every relevant reviewer whatever the order (7 and 2 candidates).
  assert scores["hard_P_10"] == 20.0 and scores["soft_P_10"] == 30.0
  assert got["scored_by"]["pairs"] == 18 + 5  # p0: all 18 reviewer papers; p1: ra 3 + rd 2.
  with pytest.raises(ValueError, match="reviewers_file"):
    relevance.rank(model=model, restore_checkpoint_cfg=restore,
                       task="paper_reviewer_matching", meta_file=str(meta),
                       output_dir=str(tmp_path))
