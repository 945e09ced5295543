"""The scoring of the official SciRepEval embedding evaluation (scikit-learn, pytrec_eval).

  probes        LinearSVC / LinearSVR probes with the official grids and folds
  few_shot      the two few-shot procedures (k in total vs k per label)
  ranking       Euclidean / reviewer runs, trec_eval measures
  text_metrics  SeqIO metrics of the text-to-text forms (same sklearn / scipy calls)
Arrays, runs and qrels in, scores out. The files, the 24 tasks, scoring a task's
embeddings file and the paper's averages are the task layer's
(`crosstask.tasks.scirepeval`: readers, benchmark, score, averages);
`python -m crosstask.scirepeval_eval score|aggregate ...` is the command line.
Importable without TensorFlow, SeqIO or JAX; scikit-learn, SciPy and pytrec_eval
(the `scirepeval` extra) load only with the modules that use them.
"""

import importlib

_EXPORTS = {"embedding_run": "ranking", "ir_metrics": "ranking", "reviewer_run": "ranking"}


def __getattr__(name: str):
  if name in _EXPORTS:
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
