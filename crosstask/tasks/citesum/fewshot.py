"""Few-shot subsets exactly as the CiteSum scripts draw them, and their split names.

`run_seq2seq.py` takes `train.shuffle(seed=data_seed).select(range(k))`; HF's
`Dataset.shuffle(seed)` is `np.random.default_rng(seed).permutation(n)`, so
the subset is reproducible with numpy alone, over the file order.

Split names: `k{K}_s{SEED}` (SciTLDR: the "We"-initial pool, rewritten to
"This paper REF ..."; XSum: all of train), `all_k{K}_s{SEED}` (SciTLDR: every
train paper, rewritten where it starts with "We "), `orig_k{K}_s{SEED}`
(SciTLDR: every train paper, original targets: the BART-from-scratch row), and
`validation1000` (XSum: the first 1,000 validation examples, the scripts'
`--max_eval_samples 1000`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from crosstask.tasks.citesum import ref

_SPLIT = re.compile(r"^(?:(all|orig)_)?k(\d+)_s(\d+)$")
POOLS = ("we_initial", "all", "orig")
VALIDATION_SLICE = "validation1000"


@dataclasses.dataclass(frozen=True)
class FewShotSplit:
  pool: str   # "we_initial" | "all" | "orig"
  k: int
  seed: int

  @property
  def name(self) -> str:
    prefix = "" if self.pool == "we_initial" else f"{self.pool}_"
    return f"{prefix}k{self.k}_s{self.seed}"


def parse_split(name: str) -> FewShotSplit | None:
  """The few-shot split `name` stands for, or None for an ordinary split."""
  m = _SPLIT.match(name)
  if not m:
    return None
  return FewShotSplit(pool={None: "we_initial", "all": "all", "orig": "orig"}[m.group(1)],
                      k=int(m.group(2)), seed=int(m.group(3)))


def hf_subset(n: int, k: int, seed: int) -> list[int]:
  """Indices of HF's `shuffle(seed=seed).select(range(k))` over n rows."""
  if not 0 < k <= n:
    raise ValueError(f"cannot draw {k} examples from {n}: the pool has {n}")
  return [int(i) for i in np.random.default_rng(seed).permutation(n)[:k]]


def scitldr_pool(records: Sequence[dict], pool: str) -> list[dict]:
  """SciTLDR train records of `pool`, with `tldr` rewritten as the paper's transfer runs.

  "we_initial": the 872 raw "We "-initial TLDRs, rewritten (what
  `train_ThispaperREF.json` with `--max_train_samples 872` most likely held);
  "all": every record, rewritten where it applies; "orig": untouched.
  """
  if pool not in POOLS:
    raise ValueError(f"unknown pool {pool!r}; choose one of {POOLS}")
  if pool == "orig":
    return list(records)
  chosen = [r for r in records if pool == "all" or ref.starts_with_we(r["tldr"])]
  return [{**r, "tldr": ref.rewrite_we(r["tldr"])} for r in chosen]


def select(records: Sequence[dict], split: FewShotSplit) -> list[dict]:
  return [records[i] for i in hf_subset(len(records), split.k, split.seed)]
