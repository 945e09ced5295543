"""Training's own inference eval as T5X's macros set it: EVAL_PERIOD, EVALUATOR_NUM_EXAMPLES.

The tiny test model on runtime_helpers' synthetic tasks, called through gin as
`python -m crosstask.train` calls it.
"""

import json
import re

import gin
import pytest

import runtime_helpers as rh
import runtime_subprocess as rs
from crosstask import records
from crosstask import score
from crosstask.results import rescoring
from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import saved_run
from crosstask.runtime.jobs import train_lib


def _train(model_dir, *bindings: str):
  gin.clear_config()
  gin_utils.parse([rs.TINY, 'runs/finetune.gin'], [
      f"MODEL_DIR='{model_dir}'", 'TRAIN_STEPS=2', "MIXTURE_OR_TASK_NAME='runtime_copy_reverse'",
      "MIXTURE_OR_TASK_MODULE='runtime_helpers'", "TASK_FEATURE_LENGTHS={'inputs': 16, "
      "'targets': 16}", 'BATCH_SIZE=8', 'EVAL_PERIOD=2', 'PACK=False', 'LOG_EVERY=1000',
      *bindings])
  try:
    return train_lib.train()
  finally:
    gin.clear_config()


@pytest.mark.slow(seconds=11)
def test_evaluator_num_examples_decodes_the_first_n_of_each_task(tmp_path, capsys):
  # A T5X user's `--gin.EVALUATOR_NUM_EXAMPLES=5`: each task's first 5 validation
  # examples are decoded at each evaluation, logged and labelled as the eval job's
  # NUM_EXAMPLES=5 are (`validation[:5]`, `first_5/`), never as the whole split.
  # `crosstask.score` re-scores such a log with no override (the run's task module from
  # its config two folders up) to the eval's own numbers, recorded beside them; run
  # again, it appends nothing.
  _train(tmp_path, 'EVALUATOR_NUM_EXAMPLES=5')
  # The teacher-forced eval's line: the loss a token and a token accuracy named as such
  # (a fraction, where the inference eval's accuracy is whole outputs in percent).
  (line,) = [l for l in capsys.readouterr().out.splitlines() if 'training_eval' in l]
  assert re.fullmatch(r'step 2 training_eval  loss \d+\.\d{4}/token  '
                      r'token accuracy [01]\.\d{4} \(teacher-forced\)', line), line
  folder = tmp_path / 'inference_eval'
  recorded = sorted((r['step'], r['task'], r['split'])
                    for r in map(json.loads, (folder / 'metrics.jsonl').open()))
  assert recorded == [(2, 'runtime_copy', 'validation[:5]'),
                      (2, 'runtime_reverse', 'validation[:5]')]
  first = rh._words('validation', rh.SIZES['validation'])[:5]
  for task, transform in (('runtime_copy', rh.copy), ('runtime_reverse', rh.reverse)):
    logged = [json.loads(l) for l in (folder / 'first_5' / f'{task}-000002.jsonl').open()]
    assert [r['target'] for r in logged] == [transform(w) for w in first], task
  assert not list(folder.glob('runtime_*.jsonl'))  # no whole-split log beside them
  log = folder / 'first_5' / 'runtime_reverse-000002.jsonl'
  assert saved_run.task_modules(rescoring._run_macros(log)) == ['runtime_helpers']
  for _ in range(2):
    assert score.main([str(log)]) == 0
  evaluated, scored = [r for r in records.read(folder) if r.task == 'runtime_reverse']
  assert (scored.source, scored.split, scored.metrics) == (
      'score:runtime_reverse-000002.jsonl', 'validation[:5]', evaluated.metrics)
  assert f'{scored.where} already records these numbers' in capsys.readouterr().out
  assert not (log.parent / records.FILENAME).exists()

  # `eval --run_dir` starts from the run's saved config, which binds the training's
  # macros too; the eval never calls train, so they are refused as any macro it does not
  # read (EVALUATOR_NUM_EXAMPLES had evaluated the whole split, saying nothing).
  for macro, meant in (('EVALUATOR_NUM_EXAMPLES=5', 'NUM_EXAMPLES'), ('EVAL_PERIOD=5', None)):
    gin.clear_config()
    with pytest.raises(SystemExit):
      gin_utils.run_main(lambda: None, [f'--run_dir={tmp_path}', f'--gin.{macro}'],
                         saved_run_job=saved_run.EVAL)
    err = capsys.readouterr().err
    assert f'--gin.{macro}: no configuration of this job reads macro' in err, err
    assert meant is None or f'Did you mean {meant}?' in err, err
  gin.clear_config()
  gin_utils.run_main(lambda: None, [f'--run_dir={tmp_path}', '--gin.NUM_EXAMPLES=5'],
                     saved_run_job=saved_run.EVAL)
  gin.clear_config()


def test_evaluator_num_examples_below_one_is_refused_before_training(tmp_path):
  with pytest.raises(gin_utils.GinConfigError, match='EVALUATOR_NUM_EXAMPLES'):
    _train(tmp_path / 'run', 'EVALUATOR_NUM_EXAMPLES=0')
  assert not (tmp_path / 'run').exists()


@pytest.mark.slow(seconds=5)
def test_a_start_that_fails_closes_the_checkpoint_manager(tmp_path, monkeypatch):
  # A missing INITIAL_CHECKPOINT_PATH failed after MODEL_DIR's checkpoint manager opened;
  # left open, its background clean-up was cut off at exit and orbax printed a traceback
  # under the one-line error.
  from crosstask.runtime.state import checkpoints
  real_manager, opened, closed = checkpoints.manager, [], []

  def manager(*args, **kwargs):
    mgr = real_manager(*args, **kwargs)
    close = mgr.close
    mgr.close = lambda: (closed.append(mgr), close())
    opened.append(mgr)
    return mgr

  monkeypatch.setattr(checkpoints, 'manager', manager)
  with pytest.raises(FileNotFoundError, match='Checkpoint path .*missing_ckpt does not exist'):
    _train(tmp_path / 'run', f"INITIAL_CHECKPOINT_PATH='{tmp_path / 'missing_ckpt'}'")
  assert len(opened) == 1 and closed == opened
