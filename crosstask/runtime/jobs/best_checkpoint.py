"""The best checkpoint of a run by a validation metric: early stopping, decided afterwards.

Training evaluates every EVAL_PERIOD steps into `<model_dir>/inference_eval/
metrics.jsonl` and, with CHECKPOINTS_TO_KEEP=None, keeps every checkpoint. This
picks the step whose metric (averaged over the tasks that report it) is best,
as a script that validates each epoch and keeps the best model does:

  python -m crosstask.runtime.jobs.best_checkpoint --model_dir=/tmp/meta_2_1 --metric=accuracy

prints the chosen checkpoint's path (the last line), to pass on as
INITIAL_CHECKPOINT_PATH or CHECKPOINT_PATH. `--metric` matches a key exactly or
as the suffix of a per-field key (`rougeL` matches `title/rougeL`).
"""

import argparse
import os
import sys
from typing import Sequence

from crosstask import records
from crosstask.runtime.report import console
from crosstask.runtime.state.checkpoints import STEP_PREFIX


def scores_by_step(model_dir: str, metric: str) -> dict[int, float]:
  """{step: mean of `metric` over the tasks that report it} from inference_eval/metrics.jsonl."""
  path = os.path.join(os.fspath(model_dir), 'inference_eval', records.FILENAME)
  if not os.path.isfile(path):
    raise FileNotFoundError(f'{path} not found: train with EVAL_PERIOD > 0 and an '
                            'infer_eval dataset so that validation metrics are written.')
  rows = records.read(path)
  values = records.by_step(rows, metric)
  if not values:
    seen = sorted({k for r in rows for k in r.metrics})
    raise ValueError(f'no metric {metric!r} in {path}; it has {seen}')
  return {step: sum(v) / len(v) for step, v in values.items()}


def best_step(model_dir: str, metric: str, lower_is_better: bool = False) -> tuple[int, float]:
  """(step, score) of the best evaluated step that still has its checkpoint; ties: earliest."""
  scores = scores_by_step(model_dir, metric)
  kept = {s: v for s, v in scores.items()
          if os.path.isdir(os.path.join(os.fspath(model_dir), f'{STEP_PREFIX}_{s}'))}
  if not kept:
    raise FileNotFoundError(f'none of the evaluated steps {sorted(scores)} has a checkpoint '
                            f'left in {model_dir}; keep them with CHECKPOINTS_TO_KEEP=None and '
                            'CHECKPOINT_PERIOD equal to EVAL_PERIOD')
  sign = -1.0 if lower_is_better else 1.0
  step = max(kept, key=lambda s: (sign * kept[s], -s))
  return step, kept[step]


def main(argv: Sequence[str] | None = None) -> str:
  parser = argparse.ArgumentParser(prog='python -m crosstask.runtime.jobs.best_checkpoint',
                                   description=__doc__.split('\n\n')[0])
  parser.add_argument('--model_dir', required=True)
  parser.add_argument('--metric', required=True)
  parser.add_argument('--lower_is_better', action='store_true')
  args = parser.parse_args(argv)
  scores = scores_by_step(args.model_dir, args.metric)
  for step, value in scores.items():
    console.say(f'step {step}: {args.metric} {value:.4f}')
  step, value = best_step(args.model_dir, args.metric, args.lower_is_better)
  path = os.path.join(os.path.abspath(args.model_dir), f'{STEP_PREFIX}_{step}')
  console.say(f'best: step {step} ({args.metric} {value:.4f})\n{path}')
  return path


if __name__ == '__main__':
  try:
    main()
  except (FileNotFoundError, ValueError) as e:
    sys.exit(f'error: {e}')
