"""`python -m crosstask.relevance --gin_file=scirepeval/relevance.gin ...`: rank pairs by P(yes).

Each judged (query, candidate) pair of a SciRepEval proximity/search task becomes
the task's arrow-prompt input; the model scores it log P(yes) − log P(no) (two
`score_batch` passes, targets with EOS, `crosstask.runtime.jobs.relevance_lib`); the
candidates of each query are ranked by that score and scored with the same
trec_eval measures (`crosstask.metrics.scirepeval.ranking`) and the original
graded judgements as the embedding path.
"""

import json
import os
from typing import Any, Sequence

import gin
import jax

from crosstask.metrics.scirepeval import ranking
from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import saved_run
from crosstask.runtime.jobs import relevance_lib
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints


def _relevance(model, restore_checkpoint_cfg, partitioner, texts, batch_size, max_length):
  """{'yes': log P(yes), 'no': log P(no)} per input text, and the checkpoint read."""
  from crosstask.tasks.scirepeval import text  # TensorFlow loads after quiet_startup.
  return relevance_lib.target_log_likelihoods(
      model, restore_checkpoint_cfg, partitioner, texts, {'yes': text.YES, 'no': text.NO},
      batch_size, max_length)


def _rank_reviewers(ttask, model, restore_checkpoint_cfg, partitioner, meta_file, qrels_files,
                    reviewers_file, output_dir, batch_size, max_length) -> dict[str, Any]:
  """Paper-Reviewer Matching: (query paper, reviewer paper) relevance, top-3 mean per reviewer."""
  from crosstask.tasks.scirepeval import readers, text  # After quiet_startup, as above.
  papers = {p['doc_id']: p for p in readers.read_meta(meta_file)}
  reviewers = readers.read_reviewer_metadata(reviewers_file)
  all_qrels = {path: readers.read_qrels(path) for path in qrels_files}
  # One ranking, of the reviewers the hard split judges (else the first file's), scored
  # against every split's judgements, as the official ReviewerMatchingEvaluator does.
  ranked = next((q for path, q in all_qrels.items() if 'hard' in os.path.basename(path)),
                all_qrels[qrels_files[0]])
  needed = sorted({(q, p) for q, judged in ranked.items()
                   for r in judged for p in reviewers.get(r, ()) if q in papers and p in papers})
  if not needed:
    raise ValueError(f'{meta_file}: no (query paper, reviewer paper) pair has text')
  texts = [text.pair_inputs(ttask, papers[q], papers[p]) for q, p in needed]
  relevance, state_dir = _relevance(model, restore_checkpoint_cfg, partitioner, texts,
                                    batch_size, max_length)
  paper_scores: dict[str, dict[str, float]] = {}
  for (q, p), y, n in zip(needed, relevance['yes'], relevance['no']):
    paper_scores.setdefault(q, {})[p] = float(y - n)
  run = ranking.reviewer_scores_run(paper_scores, ranked, reviewers)
  metrics = {}
  for path, qrels in all_qrels.items():
    name = os.path.basename(path)
    prefix = 'hard_' if 'hard' in name else 'soft_' if 'soft' in name else ''
    metrics.update({prefix + k: v for k, v in
                    ranking.ir_metrics(qrels, run, ttask.spec.metrics).items()})
  results = {ttask.spec.name: metrics,
             'scored_by': {'scorer': 'crosstask.relevance (text-to-text: '
                                     'log P(yes) - log P(no), reviewer = top-3 mean)',
                           'checkpoint': state_dir, 'pairs': len(needed)}}
  if jax.process_index() == 0:
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, f'{ttask.name}-results.json'), 'w') as f:
      json.dump(results, f, indent=4)
  print(json.dumps(results), flush=True)
  return results


@gin.configurable(module='relevance_script')
def rank(*,
         model: Any = gin.REQUIRED,
         restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig = gin.REQUIRED,
         meta_file: str = gin.REQUIRED,
         output_dir: str = gin.REQUIRED,
         task: str = gin.REQUIRED,
         qrels_file: str | Sequence[str] | None = None,
         reviewers_file: str | None = None,
         partitioner: partitioning.Partitioner | None = None,
         batch_size: int = 32,
         max_length: int = 512,
         max_queries: int | None = None) -> dict[str, Any]:
  """Writes `<output_dir>/<task>-run.jsonl` and `<task>-results.json`; returns the results.

  Grades come from `qrels_file` ({query_id, cand_id, score} lines) when given,
  else from the candidates' own `score` (training-format rows).
  """
  from crosstask.tasks.scirepeval import inputs, readers, text  # After quiet_startup.
  ttask = text.get(task)
  if ttask.kind != 'pair':
    raise ValueError(f'{ttask.name} is not a proximity/search task; rank() scores pairs')
  reviewing = ttask.key == 'paper_reviewer_matching'
  qrels_files = [qrels_file] if isinstance(qrels_file, str) else list(qrels_file or [])
  if reviewing:
    if not reviewers_file or not qrels_files:
      raise ValueError('Paper-Reviewer Matching needs reviewers_file (reviewer_metadata.jsonl) '
                       'and qrels_file (e.g. [test_hard_qrel.jsonl, test_soft_qrel.jsonl])')
    return _rank_reviewers(ttask, model, restore_checkpoint_cfg, partitioner, meta_file,
                           qrels_files, reviewers_file, output_dir, batch_size, max_length)
  if len(qrels_files) > 1:
    raise ValueError(f'{ttask.name}: one qrels_file, got {qrels_files}')
  qrels_all = readers.read_qrels(qrels_files[0]) if qrels_files else None
  rows = text.judged_rows(inputs.read_meta_any(meta_file), qrels_all)
  if max_queries:
    rows = rows[:max_queries]
  pairs, qrels = [], {}
  for row in rows:
    qid = row['query']['doc_id']
    if qrels_all is not None:
      judged = qrels_all.get(qid, {})
    else:
      ungraded = [c['doc_id'] for c in row['candidates'] if 'score' not in c]
      if ungraded:
        raise ValueError(f'{meta_file}: query {qid!r} has candidates without a score '
                         f'({ungraded[:3]}); pass qrels_file')
      judged = {c['doc_id']: c['score'] for c in row['candidates']}
    pairs.extend(text.pair_examples(ttask, row, judged))
    if judged:
      qrels[qid] = dict(judged)
  if not pairs:
    raise ValueError(f'{meta_file}: no judged (query, candidate) pairs to score')

  relevance, state_dir = _relevance(model, restore_checkpoint_cfg, partitioner,
                                    [p['inputs'] for p in pairs], batch_size, max_length)
  yes, no = relevance['yes'], relevance['no']
  relevance = yes - no
  run = ranking.scores_run([(p['query_id'], p['cand_id'], s) for p, s in zip(pairs, relevance)])
  metrics = ranking.ir_metrics(qrels, run, ttask.spec.metrics or ('map', 'ndcg'))
  results = {ttask.spec.name: metrics,
             'scored_by': {'scorer': 'crosstask.relevance (text-to-text: '
                                     'log P(yes) - log P(no))', 'checkpoint': state_dir,
                           'pairs': len(pairs), 'queries': len(qrels)}}
  if jax.process_index() == 0:
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, f'{ttask.name}-run.jsonl'), 'w') as f:
      for p, s, y, n_ in zip(pairs, relevance, yes, no):
        f.write(json.dumps({'query_id': p['query_id'], 'cand_id': p['cand_id'],
                            'grade': int(p['grade']), 'score': float(s),
                            'log_p_yes': float(y), 'log_p_no': float(n_)}) + '\n')
    with open(os.path.join(output_dir, f'{ttask.name}-results.json'), 'w') as f:
      json.dump(results, f, indent=4)
  print(json.dumps(results), flush=True)
  return results


def main() -> None:
  gin_utils.run_main(rank, what='relevance_script.rank', job='infer',
                     saved_run_job=saved_run.RELEVANCE)


if __name__ == '__main__':
  main()
