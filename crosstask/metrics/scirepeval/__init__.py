"""The official SciRepEval embedding evaluation, reimplemented (scikit-learn, pytrec_eval).

  data          readers/writers: embeddings JSONL, probe splits, qrels, reviewer metadata
  benchmark     the 24 tasks (formats, metrics, few-shot runs, data configs)
  probes        LinearSVC / LinearSVR probes with the official grids and folds
  few_shot      the two few-shot procedures (k in total vs k per label)
  ranking       Euclidean / reviewer runs, trec_eval measures
  averages      the paper's 27-number averages
  score         one task's official-shape results from an embeddings file
  text_metrics  SeqIO metrics of the text-to-text forms (same sklearn / scipy calls)
`python -m crosstask.scirepeval_eval score|aggregate ...` is the command line.
Importable without TensorFlow, SeqIO or JAX; scikit-learn, SciPy and pytrec_eval
(the `scirepeval` extra) load only with the modules that use them.
"""

import importlib

_EXPORTS = {
    "aggregate": "averages", "combined_average": "averages", "TASKS": "benchmark",
    "TaskSpec": "benchmark", "get": "benchmark", "ScirepevalDataError": "data",
    "read_embeddings": "data", "read_probe_split": "data", "read_qrels": "data",
    "read_reviewer_metadata": "data", "write_embeddings": "data", "embedding_run": "ranking",
    "ir_metrics": "ranking", "reviewer_run": "ranking", "score_task": "score",
}


def __getattr__(name: str):
  if name in _EXPORTS:
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
