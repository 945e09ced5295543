"""A mixture of real crosstask tasks, one of each way of scoring, for the re-scoring test.

Importable by the eval and infer subprocesses (`MIXTURE_OR_TASK_MODULE`):
CMRC 2018 (answers mapped back to the passage, references from the example),
FewCLUE rank classification (scored by the model's likelihood of each option),
CSL classification (accuracy and macro-F1), LOT outline-to-story (references and
outlines from the example) and SciTLDR's multi-reference ROUGE.
"""

import seqio

import crosstask.tasks.all  # noqa: F401  Registers the tasks.

TASKS = ("clue_cmrc2018", "fewclue_eprstmt_k0_rank", "csl_zh_title_to_category",
         "lot_zh_outgen", "scitldr_a_abstract_to_tldr_official_ref")
MIXTURE = "results_rescoring_mix"

if MIXTURE not in seqio.MixtureRegistry.names():
  seqio.MixtureRegistry.add(MIXTURE, list(TASKS), default_rate=1.0)
