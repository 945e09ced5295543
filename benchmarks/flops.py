"""Matmul FLOPs of the T5 encoder-decoder, the yardstick for GFLOP/s and MFU.

The count lives in the runtime (`crosstask.runtime.sharding.model_flops`), where the training
console's MFU and `crosstask.compile`'s planned step read it; the benchmarks use the
same functions under their old names here, so a benchmark's MFU and the runtime's
agree. `tests/benchmarks/test_benchmark_flops.py` checks the forward count against
the dot products of the traced model.
"""

import pathlib
import sys

_ROOT = str(pathlib.Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
  sys.path.insert(0, _ROOT)

# pylint: disable=g-import-not-at-top,unused-import
from crosstask.runtime.sharding.model_flops import (
    cross_keys_values, decode, decoder_token, encoder, executed_train_step, forward,
    remat_recompute, train_step)
