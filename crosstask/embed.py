"""`python -m crosstask.embed --gin_file=scirepeval/embed.gin ...`: official embeddings JSONL.

Input per paper: `<format code> Title: …; Abstract: …` (see
`crosstask.tasks.scirepeval.inputs`), tokenized with the model's input
vocabulary, EOS appended, trimmed to `max_length` (512, as official). Pooling:
`mean` over non-padding encoder states (default; EOS and code included, as the
official `mean`), or `first`, the code's own state, which needs the code to be
ONE token: with `sentinel_codes=True` the four codes take the vocabulary's last
four extra-id sentinels (extra_ids >= 4), the MTL CTRL recipe.
"""

import json
import os
from typing import Any, Sequence

import gin
import jax
import numpy as np

from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.config import saved_run
from crosstask.runtime.jobs import embedding
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints


def _as_list(value, what: str) -> list[str]:
  if isinstance(value, str):
    return [value]
  values = list(value)
  if not values or not all(isinstance(v, str) for v in values):
    raise ValueError(f'{what} must be a path or a non-empty list of paths, got {value!r}')
  return values


def _task_type(task: str) -> tuple[str, tuple[str, ...]]:
  from crosstask.tasks.scirepeval import benchmark  # TensorFlow loads after quiet_startup.
  if task in benchmark.FORMAT_SHORT:
    fields = ('title', 'abstract', 'venue', 'year') if task == benchmark.SEARCH \
        else ('title', 'abstract')
    return task, fields
  spec = benchmark.get(task)
  return spec.type, spec.fields


@gin.configurable(module='embed_script')
def embed(*,
          model: Any = gin.REQUIRED,
          restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig = gin.REQUIRED,
          meta_file: str | Sequence[str] = gin.REQUIRED,
          output_file: str | Sequence[str] = gin.REQUIRED,
          task: str | Sequence[str] = gin.REQUIRED,
          partitioner: partitioning.Partitioner | None = None,
          pooling: str = 'mean',
          ctrl: bool = True,
          sentinel_codes: bool = False,
          batch_size: int = 32,
          max_length: int = 512,
          float16: bool = False) -> list[dict[str, Any]]:
  """Writes each `output_file` (`{"doc_id", "embedding"}` per line); returns summaries.

  `meta_file`, `output_file` and `task` are one path/name each, or equal-length
  lists (the checkpoint is then loaded once for all). `task` is a SciRepEval task
  (official name or test config, e.g. 'fos') or a format ('classification',
  'regression', 'proximity', 'adhoc_search'); it picks the code and fields.
  `float16` rounds vectors as the official cache reload does.
  """
  metas, outs = _as_list(meta_file, 'meta_file'), _as_list(output_file, 'output_file')
  tasks = _as_list(task, 'task')
  if len(tasks) == 1:
    tasks = tasks * len(metas)
  if not len(metas) == len(outs) == len(tasks):
    raise ValueError(f'{len(metas)} meta files, {len(outs)} output files and {len(tasks)} '
                     'tasks: they must pair up one to one')
  from crosstask.tasks.scirepeval import inputs, readers  # After quiet_startup, as above.
  vocab = model.input_vocabulary
  jobs = []  # Read and tokenize everything first: a bad file fails before any compute.
  for meta, out, name in zip(metas, outs, tasks):
    task_type, fields = _task_type(name)
    items = inputs.embedding_inputs(inputs.read_meta_any(meta), task_type, fields=fields,
                                    ctrl=ctrl)
    token_lists, truncated = inputs.tokenize(items, vocab, max_length=max_length,
                                             sentinel_codes=sentinel_codes, pooling=pooling)
    jobs.append((meta, out, task_type, items, token_lists, truncated))

  # No dataset: the batch and lengths only shape the parameter template.
  run = run_lib.resolve(model, partitioner, batch_size=batch_size,
                        lengths={'inputs': max_length, 'targets': 1}, pads_batch=True)
  params, param_shardings, state_dir = embedding.restore_params(run, restore_checkpoint_cfg)
  embedder = embedding.Embedder(run.model, run.partitioner, param_shardings, run.batch_size,
                                pooling)
  summaries = []
  for meta, out, task_type, items, token_lists, truncated in jobs:
    vectors = embedder.embed(params, token_lists, max_length)
    if float16:
      vectors = vectors.astype(np.float16).astype(np.float32)
    summary = {'meta_file': meta, 'output_file': out, 'task_type': task_type,
               'papers': len(items), 'dim': int(vectors.shape[1]) if len(items) else 0,
               'pooling': pooling, 'ctrl': ctrl, 'sentinel_codes': sentinel_codes,
               'max_length': max_length, 'truncated': truncated,
               'truncated_fraction': truncated / max(len(items), 1), 'checkpoint': state_dir}
    if jax.process_index() == 0:
      readers.write_embeddings(out, [(doc_id, v) for (doc_id, _, _), v in zip(items, vectors)])
      with open(os.path.splitext(out)[0] + '.summary.json', 'w') as f:
        json.dump(summary, f, indent=2)
    print(f"Wrote {len(items)} embeddings (d={summary['dim']}, pooling={pooling}, "
          f"{truncated} truncated at {max_length} tokens) to {out}", flush=True)
    summaries.append(summary)
  return summaries


def main() -> None:
  gin_utils.run_main(embed, what='embed_script.embed', job='infer',
                     saved_run_job=saved_run.EMBED)


if __name__ == '__main__':
  main()
