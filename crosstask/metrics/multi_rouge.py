"""SciTLDR's multi-reference ROUGE (`allenai/scitldr scripts/cal-rouge.py`).

Each paper has several gold TLDRs (author + peer reviewers). The official
"multi-max" score takes the reference with the best ROUGE-1 F (first one on
ties) and reports ITS ROUGE-1/2/L; taking the max of each metric separately
inflates ROUGE-2 by almost a point on SciTLDR dev. The official scorer is
ROUGE-1.5.5 with stemming, run through files2rouge once per pair; crosstask
scores each pair with `rouge155`, its Python port, and equals the Perl on every
pair we have tried. rouge-score (`implementation="rouge_score"`) differs by up
to 0.07 on dev (another Porter stemmer, no sentence-level ROUGE-L).
"""

from typing import Sequence

from crosstask.metrics import _checks
from crosstask.metrics import rouge155
from crosstask.metrics import summary_rouge

SELECTIONS = ("max_rouge1", "max_each", "mean", "first")
IMPLEMENTATIONS = ("rouge155", "rouge_score")
KEYS = rouge155.KEYS


def _select(per_reference: list[dict[str, float]], select: str) -> dict[str, float]:
  if select == "first":
    return per_reference[0]
  if select == "mean":
    return {k: sum(s[k] for s in per_reference) / len(per_reference) for k in KEYS}
  if select == "max_each":
    return {k: max(s[k] for s in per_reference) for k in KEYS}
  best = per_reference[0]
  for scores in per_reference[1:]:
    if best["rouge1"] < scores["rouge1"]:  # strict: the earlier reference wins ties
      best = scores
  return best


def _references(value, index: int) -> list[str]:
  if isinstance(value, str):
    value = [value]
  if not isinstance(value, (list, tuple)) or not value:
    raise ValueError(f"rouge_multi: targets[{index}] must be a non-empty list of "
                     f"reference strings, got {value!r}")
  return [_checks.check_text(r, "rouge_multi", f"targets[{index}]", j)
          for j, r in enumerate(value)]


def _pair_scores(reference: str, prediction: str, stem: bool,
                 implementation: str) -> dict[str, float]:
  if implementation == "rouge155":
    return rouge155.pair_scores(reference, prediction, stem=stem)
  return summary_rouge.pair_scores(reference, prediction, score_keys=KEYS, stem=stem)


def rouge_multi(
    targets: Sequence[Sequence[str]],
    predictions: Sequence[str],
    *,
    select: str = "max_rouge1",
    variants: Sequence[str] = ("author", "mean"),
    stem: bool = True,
    implementation: str = "rouge155",
) -> dict[str, float]:
  """Mean over papers of per-paper ROUGE-1/2/L F, 0-100, under `select`.

  `targets[i]` lists paper i's references with the author's first (a bare
  string counts as one reference). `select` picks the main keys `rouge1`,
  `rouge2`, `rougeL`: "max_rouge1" (official multi-max), "max_each", "mean"
  (official multi-mean) or "first". `variants` adds `author_*` (against the
  first reference, official "author") and `mean_*` keys. `implementation`
  scores a pair with "rouge155" (the official files2rouge + ROUGE-1.5.5, its
  5-decimal prints included) or "rouge_score".
  """
  if select not in SELECTIONS:
    raise ValueError(f"rouge_multi: select={select!r}; choose one of {SELECTIONS}")
  unknown = set(variants) - {"author", "mean"}
  if unknown:
    raise ValueError(f"rouge_multi: unknown variants {sorted(unknown)}; "
                     "choose from ['author', 'mean']")
  if implementation not in IMPLEMENTATIONS:
    raise ValueError(f"rouge_multi: implementation={implementation!r}; "
                     f"choose one of {IMPLEMENTATIONS}")
  _checks.check_pairs(targets, predictions, "rouge_multi")
  modes = {"": select, **{f"{v}_": ("first" if v == "author" else "mean")
                          for v in variants}}
  totals = {f"{prefix}{k}": 0.0 for prefix in modes for k in KEYS}
  for i, (refs, prediction) in enumerate(zip(targets, predictions)):
    prediction = _checks.check_text(prediction, "rouge_multi", "predictions", i)
    per_reference = [_pair_scores(ref, prediction, stem, implementation)
                     for ref in _references(refs, i)]
    for prefix, mode in modes.items():
      for k, v in _select(per_reference, mode).items():
        totals[prefix + k] += v
  return {key: 100.0 * total / len(targets) for key, total in totals.items()}
