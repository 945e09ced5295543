"""Metric speed: character ROUGE-L over 10,000 CSL abstract-length pairs (goal: < 2 s),
and the LOT (NLPCC OutGen) and CMRC 2018 scorers against the official scripts.

Pairs are real CSL abstracts (`ts/dev.tsv` under CROSSTASK_DATA_DIR), abstract i
against abstract i + k for k = 1..10, so every pair is abstract-length on both
sides. crosstask.metrics.rouge (rapidfuzz LCS) is timed on all 10,000; rouge-score
(the pure-Python LCS it replaces) on the first few hundred, extrapolated, and
both are checked to give the same value on that subset.

The official scripts are not part of crosstask. Put them, as published, in a folder
given by --official_dir (or CROSSTASK_OFFICIAL_SCORERS): `nlpcc_eval.py` is
IndexFziQ/LongLM-Eyas `datasets/chn/eval.py`, `cmrc2018_evaluate.py` is ymcui/cmrc2018
`baseline/cmrc2018_evaluate.py` (v6, Python 3). Each is timed on the shared data
(LongLM-small's NLPCC val generations; the CMRC dev set with predictions derived from
its answers) against crosstask's scorer on the same files, alternating, and the values
must agree. Without the folder that part is recorded as not run.

    python benchmarks/metrics_speed.py [--quick] [--pairs 10000] [--reps 5] [--official_dir DIR]
"""

import argparse
import csv
import functools
import importlib.util
import json
import os
import pathlib
import sys
import types

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
  from crosstask.metrics import tokenizers
  tokenizer = type("T", (), {"tokenize": staticmethod(tokenizers.char_tokens)})()
  scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer)
  total = 0.0
  for t, p in zip(targets, predictions):
    total += scorer.score(t, p)["rougeL"].fmeasure
  return 100.0 * total / len(targets)


OFFICIAL_SCRIPTS = {
    "lot": ("nlpcc_eval.py", "IndexFziQ/LongLM-Eyas datasets/chn/eval.py"),
    "cmrc": ("cmrc2018_evaluate.py", "ymcui/cmrc2018 baseline/cmrc2018_evaluate.py (v6)"),
}


def _official_module(path: pathlib.Path):
  spec = importlib.util.spec_from_file_location(f"official_{path.stem}", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _alternate(ours, theirs, reps: int) -> tuple[dict, dict, dict, dict]:
  """Both warmed up once, then `reps` timed calls each, alternating; last values returned."""
  ours_value, theirs_value = ours(), theirs()
  times = {"crosstask": [], "official": []}
  for r in range(reps):
    for name, fn in ([("crosstask", ours), ("official", theirs)] if r % 2 == 0
                     else [("official", theirs), ("crosstask", ours)]):
      with harness.Timer() as t:
        value = fn()
      times[name].append(t.seconds)
      if name == "crosstask":
        ours_value = value
      else:
        theirs_value = value
  return (harness.summary(times["crosstask"], 1), harness.summary(times["official"], 1),
          ours_value, theirs_value)


def _compare(ours: dict, theirs: dict, tolerance: float) -> dict:
  keys = sorted(set(ours) & set(theirs))
  worst = max(abs(float(ours[k]) - float(theirs[k])) for k in keys)
  return {"keys": keys, "max_abs_difference": worst, "equal": worst <= tolerance}


def lot_vs_official(root: pathlib.Path, script: pathlib.Path, reps: int) -> dict:
  """NLPCC OutGen scores of LongLM-small's val generations: crosstask vs the official compute()."""
  from crosstask.metrics import lot
  from crosstask.tasks.common import readers
  official = _official_module(script)
  folder = root / "lot" / "nlpcc2021_outline2story"
  gold_file, pred_file = folder / "val.jsonl", folder / "generations" / "longlm_small_val.jsonl"

  def read(path):
    return [row.value for row in readers.read_jsonl(path)]

  def ours():
    gold, pred = read(gold_file), read(pred_file)
    return lot.nlpcc_scores([g["story"] for g in gold], [g["outline"] for g in gold],
                            [p["story"] for p in pred])

  def theirs():
    scores, overall = official.compute(str(gold_file), str(pred_file))
    return {**scores, "overall": overall}

  mine, other, a, b = _alternate(ours, theirs, reps)
  return {"examples": len(read(gold_file)), "crosstask": mine, "official": other,
          "speedup": other["median_s"] / mine["median_s"], **_compare(a, b, 1e-9)}


def cmrc_predictions(gold: dict) -> dict[str, str]:
  """Deterministic predictions from the dev answers: exact, widened by two characters, or cut."""
  out = {}
  qas = [(qa, p["context"]) for a in gold["data"] for p in a["paragraphs"] for qa in p["qas"]]
  for i, (qa, context) in enumerate(qas):
    answer = qa["answers"][0]
    start = answer.get("answer_start", -1)
    if i % 3 == 0 or start < 0:
      out[qa["id"]] = answer["text"]
    elif i % 3 == 1:
      out[qa["id"]] = context[max(0, start - 2):start + len(answer["text"]) + 2]
    else:
      out[qa["id"]] = answer["text"][:max(1, len(answer["text"]) // 2)]
  return out


def cmrc_vs_official(root: pathlib.Path, script: pathlib.Path, reps: int) -> dict:
  """CMRC 2018 EM/F1 on the dev set: crosstask.metrics.cmrc.evaluate vs the official evaluate()."""
  import nltk
  from crosstask.metrics import cmrc
  official = _official_module(script)
  note = "nltk.word_tokenize as published"
  try:
    nltk.data.find("tokenizers/punkt_tab/english")
  except LookupError:  # offline: the Punkt model is absent, as for crosstask (eval/cmrc.py)
    official.nltk = types.SimpleNamespace(
        word_tokenize=functools.partial(nltk.tokenize.word_tokenize, preserve_line=True))
    note = "punkt_tab absent: both sides tokenize with word_tokenize(preserve_line=True)"
  gold = json.loads((root / "clue" / "cmrc2018" / "cmrc2018_dev.json").read_text("utf-8"))
  predictions = cmrc_predictions(gold)

  def ours():
    cmrc._word_tokens.cache_clear()  # pylint: disable=protected-access  # time it cold
    return cmrc.evaluate(gold, predictions)

  def theirs():
    f1, em, total, skip = official.evaluate(gold, predictions)
    return {"F1": f1, "EM": em, "TOTAL": total, "SKIP": skip}

  mine, other, a, b = _alternate(ours, theirs, reps)
  return {"questions": len(predictions), "tokenizer": note, "crosstask": mine, "official": other,
          "speedup": other["median_s"] / mine["median_s"], "EM": a["EM"], "F1": a["F1"],
          **_compare(a, b, 1e-9)}


def official_scorers(official_dir: str | None, reps: int) -> dict:
  """The LOT and CMRC timings against the official scripts, or why they were not run."""
  from crosstask import paths
  result = {}
  root = paths.data_dir()
  for name, (file, source) in OFFICIAL_SCRIPTS.items():
    script = pathlib.Path(official_dir) / file if official_dir else None
    if script is None or not script.exists():
      result[name] = {"not_run": f"official script not given: put {source} at "
                                 f"--official_dir/{file}", "source": source}
      continue
    run = lot_vs_official if name == "lot" else cmrc_vs_official
    result[name] = {"source": source, **run(root, script, reps)}
  return result


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true", help="3 repetitions, 50 reference pairs")
  parser.add_argument("--pairs", type=int, default=10_000)
  parser.add_argument("--reps", type=int, default=5)
  parser.add_argument("--reference_pairs", type=int, default=200,
                      help="pairs scored with rouge-score to extrapolate its time")
  parser.add_argument("--official_dir", default=os.environ.get("CROSSTASK_OFFICIAL_SCORERS"),
                      help="folder with the official LOT/CMRC scripts (see the docstring)")
  parser.add_argument("--official_reps", type=int, default=3)
  parser.add_argument("--out", default=None)
  args = parser.parse_args(argv)
  if args.quick:
    args.reps, args.reference_pairs = min(args.reps, 3), 50
  from crosstask.metrics.rouge import rouge
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
      [("crosstask.metrics.rouge (rapidfuzz)", ours["median_s"],
        f"{ours['min_s']:.2f}-{ours['max_s']:.2f}", "< 2 s", ours["median_s"] < 2.0),
       (f"rouge-score (extrapolated from {m})", reference_10k, "-", "-", "-")],
      ["implementation", "seconds", "range", "goal", "met"]))
  print(f"speed-up {reference_10k / ours['median_s']:.0f}x; same value on the {m}-pair subset: "
        f"{subset == reference} ({subset:.6f} vs {reference:.6f}); rougeL on all: {value:.4f}")
  official = official_scorers(args.official_dir, 1 if args.quick else args.official_reps)
  rows = [(name, r["crosstask"]["median_s"], r["official"]["median_s"], r["speedup"], r["equal"])
          for name, r in official.items() if "not_run" not in r]
  if rows:
    print("\nscorers on the shared data vs the official scripts, median seconds")
    print(harness.table(rows, ["metric", "crosstask", "official", "speed-up", "equal"]))
  for name, r in official.items():
    if "not_run" in r:
      print(f"{name}: not run ({r['not_run']})")
  harness.write("metrics_speed", {
      "official_scorers": official,
      "rouge_l_char": {"pairs": len(pairs), "mean_chars": mean_chars, "crosstask": ours,
                       "goal_seconds": 2.0, "goal_met": ours["median_s"] < 2.0,
                       "rouge_score_seconds_extrapolated": reference_10k,
                       "rouge_score_pairs_timed": m, "speedup": reference_10k / ours["median_s"],
                       "equal_on_subset": subset == reference, "value": value}},
      1, start_load, args.out, quick=args.quick)
  return 0


if __name__ == "__main__":
  sys.exit(main())
