"""`rank(...)`: text-to-text relevance for SciRepEval proximity/search tasks.

Each judged (query, candidate) pair becomes the task's arrow-prompt input; the
model scores it log P(yes) − log P(no) (two `score_batch` passes, targets with
EOS); the candidates of each query are ranked by that score and scored with the
same trec_eval measures (`crosstask.eval.scirepeval.ranking`) and the original
graded judgements as the embedding path. Batched and sharded like inference.
"""

import dataclasses
import json
import os
from typing import Any, Sequence

import gin
import jax
import numpy as np

from crosstask.runtime import checkpoints, embedding, eval_lib, inference, optimizers
from crosstask.runtime import partitioning
from crosstask.runtime import trainer as trainer_lib


class TargetScorer:
  """Log-likelihood of fixed target token lists for many encoder inputs."""

  def __init__(self, model: Any, partitioner: partitioning.Partitioner,
               param_shardings: Any, batch_size: int):
    self.partitioner = partitioner
    n = partitioner.data_size
    self.batch_size = max(n, -(-batch_size // n) * n)
    self._score = jax.jit(model.score_batch,
                          in_shardings=(param_shardings, partitioner.data_sharding),
                          out_shardings=partitioner.data_sharding)

  def score(self, params, inputs: Sequence[Sequence[int]], target: Sequence[int],
            max_length: int) -> np.ndarray:
    target = list(target)
    dec_len = embedding.bucket_length(len(target), 64, minimum=4)
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
    out = np.zeros(len(inputs), np.float32)
    per_host = self.batch_size // jax.process_count()
    lo = jax.process_index() * per_host
    with self.partitioner.context():
      for start in range(0, len(order), self.batch_size):
        chunk = order[start:start + self.batch_size]
        length = embedding.bucket_length(max(len(inputs[i]) for i in chunk), max_length)
        enc = np.zeros((self.batch_size, length), np.int32)
        tgt = np.zeros((self.batch_size, dec_len), np.int32)
        for row, i in enumerate(chunk):
          enc[row, :len(inputs[i])] = inputs[i]
          tgt[row, :len(target)] = target
        dec_in = np.concatenate([np.zeros((self.batch_size, 1), np.int32), tgt[:, :-1]], 1)
        feats = {'encoder_input_tokens': enc, 'decoder_input_tokens': dec_in,
                 'decoder_target_tokens': tgt,
                 'decoder_loss_weights': (tgt > 0).astype(np.int32)}
        batch = self.partitioner.shard_batch({k: v[lo:lo + per_host] for k, v in feats.items()})
        scores = inference._to_host(self._score(params, batch))  # pylint: disable=protected-access
        out[chunk] = scores[:len(chunk)]
    return out


def encode(vocabulary, text: str, max_length: int) -> list[int]:
  """Token ids + EOS, trimmed to max_length (EOS kept, as seqio trims inputs)."""
  eos = int(getattr(vocabulary, 'eos_id', 1) or 1)
  return list(vocabulary.encode(text))[:max_length - 1] + [eos]


@gin.configurable(module='relevance_script')
def rank(*,
         model: Any = gin.REQUIRED,
         restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig = gin.REQUIRED,
         meta_file: str = gin.REQUIRED,
         output_dir: str = gin.REQUIRED,
         task: str = gin.REQUIRED,
         qrels_file: str | None = None,
         partitioner: partitioning.Partitioner | None = None,
         batch_size: int = 32,
         max_length: int = 512,
         max_queries: int | None = None) -> dict[str, Any]:
  """Writes `<output_dir>/<task>-run.jsonl` and `<task>-results.json`; returns the results.

  Grades come from `qrels_file` ({query_id, cand_id, score} lines) when given,
  else from the candidates' own `score` (training-format rows).
  """
  from crosstask.eval.scirepeval import data, ranking  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.scirepeval import inputs, text  # pylint: disable=g-import-not-at-top
  ttask = text.get(task)
  if ttask.kind != 'pair':
    raise ValueError(f'{ttask.name} is not a proximity/search task; rank() scores pairs')
  if ttask.key == 'paper_reviewer_matching':
    raise NotImplementedError('Paper-Reviewer Matching ranks reviewers (sets of papers); its '
                              'text-to-text path is not written yet: score its embeddings '
                              'with `python -m crosstask.eval.scirepeval score`')
  qrels_all = data.read_qrels(qrels_file) if qrels_file else None
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

  partitioner = partitioner or partitioning.Partitioner()
  tx, schedule = optimizers.create_optimizer(optimizers.adamw, 0.0)
  template = trainer_lib.Trainer(model, partitioner, tx, schedule,
                                 {'encoder_input_tokens': (partitioner.data_size, 8),
                                  'decoder_input_tokens': (partitioner.data_size, 1)})
  if restore_checkpoint_cfg.mode == 'all':
    restore_checkpoint_cfg = dataclasses.replace(restore_checkpoint_cfg, mode='latest')
  (_, state_dir), = eval_lib.checkpoint_dirs(restore_checkpoint_cfg)
  params = checkpoints.load_params(state_dir, template.abstract_params())
  scorer = TargetScorer(model, partitioner, template.param_shardings, batch_size)
  in_vocab, out_vocab = model.input_vocabulary, model.output_vocabulary
  tokens = [encode(in_vocab, p['inputs'], max_length) for p in pairs]
  yes = scorer.score(params, tokens, encode(out_vocab, text.YES, 64), max_length)
  no = scorer.score(params, tokens, encode(out_vocab, text.NO, 64), max_length)
  relevance = yes - no
  run = ranking.scores_run([(p['query_id'], p['cand_id'], s) for p, s in zip(pairs, relevance)])
  metrics = ranking.ir_metrics(qrels, run, ttask.spec.metrics or ('map', 'ndcg'))
  results = {ttask.spec.name: metrics,
             'scored_by': {'scorer': 'crosstask.runtime.relevance_lib (text-to-text: '
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
