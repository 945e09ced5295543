"""End to end as subprocesses: a tiny model embeds the shared FoS and search samples, the
official probes and ranking metrics score the embeddings, and the text-to-text relevance
path ranks the search candidates by log P(yes) - log P(no)."""

import json

import pytest

import runtime_subprocess as rs
import scirepeval_samples as samples


@pytest.mark.slow(seconds=25)
def test_embed_score_and_rank_the_shared_samples(official_data, tmp_path):
  fos = samples.write_fos(official_data, tmp_path / "data")
  search = samples.write_search(official_data, tmp_path / "data")
  ckpt = samples.write_init_checkpoint(rs.TINY, tmp_path / "model")
  emb = tmp_path / "emb"

  res = rs.run([rs.sys.executable, "-m", "crosstask.embed", f"--gin_file={rs.TINY}",
                "--gin_file=scirepeval/embed.gin", f"--gin.CHECKPOINT_PATH='{ckpt}'",
                f"--gin.META_FILE=['{fos}/meta.jsonl', '{search}/meta.jsonl']",
                f"--gin.EMBEDDINGS_FILE=['{emb}/fos.jsonl', '{emb}/search.jsonl']",
                "--gin.TASK=['fos', 'search']", "--gin.MAX_LENGTH=128", "--gin.BATCH_SIZE=64"])
  assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
  fos_rows = [json.loads(l) for l in (emb / "fos.jsonl").open()]
  assert len(fos_rows) == 205 and len(fos_rows[0]["embedding"]) == 32
  assert fos_rows[0]["doc_id"] == "121676082"
  summary = json.loads((emb / "search.summary.json").read_text())
  # 100 queries ([QRY]) + 1000 distinct candidates ([PRX]), each embedded once.
  assert summary["papers"] == 1100 and 0 < summary["truncated_fraction"] < 1

  scores = {}
  for task, data_dir, extra in (("fos", fos, ["--no_few_shot"]), ("search", search, [])):
    out = rs.run([rs.sys.executable, "-m", "crosstask.scirepeval_eval", "score", "--task", task,
                  "--embeddings", str(emb / f"{task}.jsonl"), "--data", str(data_dir),
                  "--output", str(tmp_path / "results.json"), *extra], timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert not rs.noise_in(out.stdout + out.stderr), out.stderr[-3000:]
    scores.update(json.loads(out.stdout))
  assert scores["scored_by"]["backend"] == "sklearn"
  assert 0 <= scores["Fields of study"]["f1_macro"] <= 100
  assert 0 < scores["Search"]["ndcg"] <= 100
  merged = json.loads((tmp_path / "results.json").read_text())
  assert {"Fields of study", "Search", "scored_by"} <= set(merged)

  rel = rs.run([rs.sys.executable, "-m", "crosstask.relevance", f"--gin_file={rs.TINY}",
                "--gin_file=scirepeval/relevance.gin", f"--gin.CHECKPOINT_PATH='{ckpt}'",
                "--gin.TASK='search'", f"--gin.META_FILE='{search}/meta.jsonl'",
                f"--gin.QRELS_FILE='{search}/test_qrel.jsonl'", "--gin.MAX_QUERIES=20",
                "--gin.MAX_LENGTH=128", "--gin.BATCH_SIZE=64",
                f"--gin.RELEVANCE_OUTPUT_DIR='{tmp_path / 'rel'}'"])
  assert rel.returncode == 0, rel.stdout[-3000:] + rel.stderr[-3000:]
  run = [json.loads(l) for l in (tmp_path / "rel" / "scirepeval_search-run.jsonl").open()]
  assert len(run) == 200 and len({r["query_id"] for r in run}) == 20
  assert all(abs(r["score"] - (r["log_p_yes"] - r["log_p_no"])) < 1e-4 for r in run)
  results = json.loads((tmp_path / "rel" / "scirepeval_search-results.json").read_text())
  # The ranking is scored by the same trec_eval code as the embedding path.
  from crosstask.metrics.scirepeval import ranking
  from crosstask.tasks.scirepeval import readers
  qrels = {q: d for q, d in readers.read_qrels(search / "test_qrel.jsonl").items()
           if q in {r["query_id"] for r in run}}
  want = ranking.ir_metrics(qrels, ranking.scores_run(
      [(r["query_id"], r["cand_id"], r["score"]) for r in run]), ["ndcg"])
  assert results["Search"] == want and 0 < want["ndcg"] <= 100
