"""The official SciRepEval embedding evaluation, reimplemented (scikit-learn, pytrec_eval).

  data       readers/writers: embeddings JSONL, probe splits, qrels, reviewer metadata
  benchmark  the 24 tasks (formats, metrics, few-shot runs, data configs)
  probes     LinearSVC / LinearSVR probes with the official grids and folds
  few_shot   the two few-shot procedures (k in total vs k per label)
  ranking    Euclidean / reviewer runs, trec_eval measures
  averages   the paper's 27-number averages
  score      one task's official-shape results from an embeddings file
  `python -m crosstask.eval.scirepeval score|aggregate ...` is the command line.
Importable without TensorFlow, SeqIO or JAX.
"""

from crosstask.eval.scirepeval.averages import aggregate, combined_average
from crosstask.eval.scirepeval.benchmark import TASKS, TaskSpec, get
from crosstask.eval.scirepeval.data import (ScirepevalDataError, read_embeddings,
                                            read_probe_split, read_qrels,
                                            read_reviewer_metadata, write_embeddings)
from crosstask.eval.scirepeval.ranking import embedding_run, ir_metrics, reviewer_run
from crosstask.eval.scirepeval.score import score_task
