"""Shared metrics in SeqIO's `fn(targets, predictions) -> {name: score}` form.

Scores are on a 0-100 scale. A leaf package: functions from predictions and
targets to scores, free of jax, TensorFlow and seqio imports, hosting no job
(the eval job is `python -m crosstask.eval`).
"""

from crosstask.metrics.bleu import bleu
from crosstask.metrics.classification import accuracy
from crosstask.metrics.classification import macro_f1
from crosstask.metrics.classification import weighted_f1
from crosstask.metrics.cmrc import cmrc2018
from crosstask.metrics.csl_official import accuracy_csl, classification_csl, rouge_l_csl
from crosstask.metrics.keywords import bpref
from crosstask.metrics.keywords import keyword_f1
from crosstask.metrics.lot import lot_outgen_metrics, lot_story_metrics
from crosstask.metrics.rank_classification import rank_accuracy
from crosstask.metrics.rouge import rouge
from crosstask.metrics.multi_rouge import rouge_multi
from crosstask.metrics.summary_rouge import rouge_stemmed
from crosstask.metrics.tokenizers import tokenize

__all__ = ["accuracy", "bleu", "bpref", "keyword_f1", "macro_f1", "rouge", "tokenize",
           "rouge_multi", "rouge_stemmed", "weighted_f1"]
