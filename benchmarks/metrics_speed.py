"""Metric speed: character ROUGE-L over 10,000 CSL abstract-length pairs (goal: < 2 s).

Pairs are real CSL abstracts (`ts/dev.tsv` under CROSSTASK_DATA_DIR), abstract i
against abstract i + k for k = 1..10, so every pair is abstract-length on both
sides. crosstask.eval.rouge (rapidfuzz LCS) is timed on all 10,000; rouge-score
(the pure-Python LCS it replaces) on the first few hundred, extrapolated, and
both are checked to give the same value on that subset.

    python benchmarks/metrics_speed.py [--quick] [--pairs 10000] [--reps 5]
"""

import argparse
import csv
import os
import sys

import harness

sys.path.insert(0, str(harness.ROOT))


def csl_abstracts() -> list[str]:
  from crosstask import paths
  root = paths.data_dir()
  if root is None:
    raise SystemExit(f"set {paths.DATA_DIR_ENV} to the shared data root (see its README.md)")
  with open(root / "csl" / "benchmark" / "ts" / "dev.tsv", encoding="utf-8") as f:
    return [row[1] for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]


def rouge_score_reference(targets, predictions) -> float:
  """Mean rougeL F x100 the way eval.rouge computed it before the fast path."""
  from rouge_score import rouge_scorer
  from crosstask.eval import tokenizers
  tokenizer = type("T", (), {"tokenize": staticmethod(tokenizers.char_tokens)})()
  scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer)
  total = 0.0
  for t, p in zip(targets, predictions):
    total += scorer.score(t, p)["rougeL"].fmeasure
  return 100.0 * total / len(targets)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true", help="3 repetitions, 50 reference pairs")
  parser.add_argument("--pairs", type=int, default=10_000)
  parser.add_argument("--reps", type=int, default=5)
  parser.add_argument("--reference_pairs", type=int, default=200,
                      help="pairs scored with rouge-score to extrapolate its time")
  parser.add_argument("--out", default=None)
  args = parser.parse_args(argv)
  if args.quick:
    args.reps, args.reference_pairs = min(args.reps, 3), 50
  from crosstask.eval.rouge import rouge
  start_load = os.getloadavg()
  abstracts = csl_abstracts()
  n = len(abstracts)
  pairs = [(abstracts[i % n], abstracts[(i % n + 1 + i // n) % n]) for i in range(args.pairs)]
  targets, predictions = [p[0] for p in pairs], [p[1] for p in pairs]
  mean_chars = sum(len(t) + len(p) for t, p in pairs) / (2 * len(pairs))

  def fast():
    return rouge(targets, predictions, score_keys=("rougeL",), tokenizer="char")["rougeL"]

  value = fast()  # warm-up
  seconds = []
  for _ in range(args.reps):
    with harness.Timer() as t:
      fast()
    seconds.append(t.seconds)
  m = args.reference_pairs
  with harness.Timer() as t:
    reference = rouge_score_reference(targets[:m], predictions[:m])
  subset = rouge(targets[:m], predictions[:m], score_keys=("rougeL",))["rougeL"]
  reference_10k = t.seconds * len(pairs) / m
  ours = harness.summary(seconds, len(pairs))
  print(f"\ncharacter ROUGE-L, {len(pairs)} CSL abstract pairs (mean {mean_chars:.0f} chars), "
        f"median of {args.reps} (min-max)")
  print(harness.table(
      [("crosstask.eval.rouge (rapidfuzz)", ours["median_s"],
        f"{ours['min_s']:.2f}-{ours['max_s']:.2f}", "< 2 s", ours["median_s"] < 2.0),
       (f"rouge-score (extrapolated from {m})", reference_10k, "-", "-", "-")],
      ["implementation", "seconds", "range", "goal", "met"]))
  print(f"speed-up {reference_10k / ours['median_s']:.0f}x; same value on the {m}-pair subset: "
        f"{subset == reference} ({subset:.6f} vs {reference:.6f}); rougeL on all: {value:.4f}")
  harness.write("metrics_speed", {
      "rouge_l_char": {"pairs": len(pairs), "mean_chars": mean_chars, "crosstask": ours,
                       "goal_seconds": 2.0, "goal_met": ours["median_s"] < 2.0,
                       "rouge_score_seconds_extrapolated": reference_10k,
                       "rouge_score_pairs_timed": m, "speedup": reference_10k / ours["median_s"],
                       "equal_on_subset": subset == reference, "value": value}},
      1, start_load, args.out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
