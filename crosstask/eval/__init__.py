"""Shared metrics in SeqIO's `fn(targets, predictions) -> {name: score}` form.

Scores are on a 0-100 scale. Kept free of jax, TensorFlow and seqio imports
so that `python -m crosstask.eval` starts fast.
"""

from crosstask.eval.bleu import bleu
from crosstask.eval.classification import accuracy
from crosstask.eval.classification import macro_f1
from crosstask.eval.classification import weighted_f1
from crosstask.eval.csl_official import accuracy_csl, classification_csl, rouge_l_csl
from crosstask.eval.keywords import bpref
from crosstask.eval.keywords import keyword_f1
from crosstask.eval.rouge import rouge
from crosstask.eval.multi_rouge import rouge_multi
from crosstask.eval.summary_rouge import rouge_stemmed
from crosstask.eval.tokenizers import tokenize

__all__ = ["accuracy", "bleu", "bpref", "keyword_f1", "macro_f1", "rouge", "tokenize",
           "rouge_multi", "rouge_stemmed", "weighted_f1"]
