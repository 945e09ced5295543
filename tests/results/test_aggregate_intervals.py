"""A benchmark aggregate's 95% interval: a joint bootstrap over its member tasks' examples.

The runs here save seqio-style inference logs beside their records (as an eval
does), for LOT's two understanding tasks, whose official overall is a weighted
sum of their accuracies, and for CSL's prompt variants, whose column is a mean.
"""

import hashlib
import json

import numpy as np
import pytest

from crosstask import records
from crosstask.metrics import lot
from crosstask.results import bootstrap
from crosstask.results import intervals
from crosstask.results import table

STEP = 10


def _run(root, name, tasks, seed=0, module="crosstask.tasks.lot"):
  """A run folder whose eval saved, per task, (targets, predictions) and their accuracy."""
  folder = root / name / "inference_eval"
  folder.mkdir(parents=True)
  (folder.parent / "operative_config.gin").write_text(
      f"MIXTURE_OR_TASK_MODULE = '{module}'\nRANDOM_SEED = {seed}\n", "utf-8")
  for task, (targets, predictions) in tasks.items():
    intervals.write_log(folder, task, STEP, targets, [str(p) for p in predictions], predictions)
    accuracy = 100 * np.mean([t == p for t, p in zip(targets, predictions)])
    records.append(folder, [records.Record(STEP, task, {"accuracy": accuracy}, "f" * 8,
                                           source="eval", split="validation")])
  return folder.parent


def _answers(n, right, wrong_answer="9"):
  """n targets ('1', '2', ... cycling) with the first `right` answered right."""
  targets = [str(1 + i % 4) for i in range(n)]
  return targets, [t if i < right else wrong_answer for i, t in enumerate(targets)]


def _lot_run(root, name, clozet, senpos, seed=0):
  return _run(root, name, {"lot_zh_clozet": _answers(*clozet),
                           "lot_zh_senpos": _answers(*senpos)}, seed)


def _overall(result):
  (column,) = [c for c in result.columns if c.name == "LOT overall understanding"]
  return result.rows[0].cells[column]


def _hand_draws(targets, resamples):
  """The bootstrap's example indices by hand: numpy, seeded with SEED and the targets' hash."""
  digest = hashlib.sha256(json.dumps(targets, ensure_ascii=False).encode()).hexdigest()
  rng = np.random.default_rng([bootstrap.SEED, int(digest[:8], 16)])
  return rng.integers(0, len(targets), size=(resamples, len(targets)))


def _hand_accuracy(right, targets, resamples):
  """A task's accuracy on each of its resamples."""
  return 100 * np.asarray(right, dtype=float)[_hand_draws(targets, resamples)].mean(axis=1)


def test_lot_overall_interval_equals_a_hand_written_joint_bootstrap(tmp_path):
  run = _lot_run(tmp_path, "tiny", clozet=(8, 6), senpos=(6, 3))
  result = table.build([run], paper="none", resamples=300)
  cell = _overall(result)
  # The official overall, unchanged: LOT's weighted sum of the two accuracies.
  assert cell["mean"] == pytest.approx(lot.lot_overall(
      {"clozet/accuracy": 75.0, "senpos/accuracy": 50.0}, "understanding", "validation"))
  (human, base) = lot.LOT_WEIGHTS[("understanding", "validation")]
  w = np.array([h / b for h, b in zip(human, base)])
  w /= w.sum()
  overall = (w[0] * _hand_accuracy([1] * 6 + [0] * 2, _answers(8, 6)[0], 300)
             + w[1] * _hand_accuracy([1] * 3 + [0] * 3, _answers(6, 3)[0], 300))
  assert cell["ci95"] == pytest.approx(list(np.percentile(overall, [2.5, 97.5])))
  assert cell["ci95"][0] < cell["mean"] < cell["ci95"][1]
  # Averaging the members' own bounds would be another, wider interval.
  members = {c.name: result.rows[0].cells[c]["ci95"] for c in result.columns}
  averaged = w @ np.array([members["lot_zh_clozet"], members["lot_zh_senpos"]])
  assert averaged[1] - averaged[0] > cell["ci95"][1] - cell["ci95"][0]


def test_lot_overall_interval_contains_its_mean_and_narrows_with_more_examples(tmp_path):
  small = _overall(table.build([_lot_run(tmp_path, "small", (20, 14), (20, 12))],
                               paper="none", resamples=200))
  large = _overall(table.build([_lot_run(tmp_path, "large", (400, 280), (400, 240))],
                               paper="none", resamples=200))
  assert small["mean"] == pytest.approx(large["mean"])  # 70% and 60% right in both
  for cell in (small, large):
    assert cell["ci95"][0] < cell["mean"] < cell["ci95"][1]
  width = lambda cell: cell["ci95"][1] - cell["ci95"][0]  # noqa: E731
  assert width(large) < width(small) / 3  # ~ sqrt(400 / 20) = 4.5 times narrower


def test_aggregate_over_seeds_and_without_saved_predictions(tmp_path):
  a = _lot_run(tmp_path, "lot_seed0", (20, 14), (20, 12), seed=0)
  b = _lot_run(tmp_path, "lot_seed1", (20, 16), (20, 10), seed=1)
  per_seed = [_overall(table.build([r], paper="none", resamples=50))["mean"] for r in (a, b)]
  pooled = _overall(table.build([a, b], paper="none", resamples=50))
  assert pooled["n"] == 2 and pooled["ci95"] == pytest.approx(
      list(bootstrap.over_seeds(per_seed)))
  # One member's log gone: the aggregate has no interval, and the table says why.
  (a / "inference_eval" / f"lot_zh_senpos-{STEP:06d}.jsonl").unlink()
  result = table.build([a], paper="none", resamples=50)
  cell = _overall(result)
  assert cell["ci95"] is None and cell["no_ci95"] == (
      "a member task has no saved predictions to resample")
  assert ("No 95% interval in lot_seed0: a member task has no saved predictions to resample."
          in result.markdown())


def test_prompt_group_interval_is_the_paired_bootstrap_of_the_mean(tmp_path):
  labels = ["工学"] * 10 + ["理学"] * 10
  guesses = {0: ["工学"] * 20, 1: ["工学"] * 15 + ["理学"] * 5}  # 10 and 15 of 20 right
  run = _run(tmp_path, "prompts", {
      f"csl_zh_abstract_to_category.p{k}": ([{"category": t} for t in labels],
                                            [{"category": p} for p in guesses[k]])
      for k in guesses}, module="crosstask.tasks.csl")
  result = table.build([run], paper="none", resamples=300)
  (column,) = result.columns
  cell = result.rows[0].cells[column]
  assert cell["mean"] == 62.5 and cell["prompts"] == 2
  # The prompts were scored on the same papers: one set of draws for both.
  idx = _hand_draws([{"category": t} for t in labels], 300)
  right = {k: np.array([t == g for t, g in zip(labels, guesses[k])], float) for k in guesses}
  mean = 100 * (right[0][idx].mean(axis=1) + right[1][idx].mean(axis=1)) / 2
  assert cell["ci95"] == pytest.approx(list(np.percentile(mean, [2.5, 97.5])))


def test_clue_and_fewclue_scores_recompute_on_their_members_resamples(tmp_path):
  """Each official score function, recomputed from every member task's resampled scores."""
  from crosstask.metrics import clue_scores  # pylint: disable=g-import-not-at-top
  from crosstask.results import aggregates  # pylint: disable=g-import-not-at-top
  from crosstask.results import runs  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(1)
  recs, reps = {}, {}

  def add(task, metric, value):
    recs[(task, "validation")] = records.Record(STEP, task, {metric: value}, split="validation")
    reps[(task, "validation")] = {metric: np.clip(value + rng.normal(0, 5, 100), 0, 100)}

  for i, t in enumerate(clue_scores.CLUE_TASKS):
    add(f"clue_{t}", "em" if t == "cmrc2018" else "accuracy", 50.0 + i)
  for i, t in enumerate(clue_scores.FEWCLUE_TASKS):
    for k in range(clue_scores.FEWCLUE_SPLITS):
      add(f"fewclue_{t}_k{k}", "accuracy", 40.0 + i + k)
  run = runs.Run(tmp_path, recs, "0", "-", "key", {}, reps)
  values = {c.name: v for c, v in aggregates.aggregate_values(run).items()}
  clue = np.mean([reps[(f"clue_{t}", "validation")]["em" if t == "cmrc2018" else "accuracy"]
                  for t in clue_scores.CLUE_TASKS], axis=0)
  assert values["CLUE score"].value == pytest.approx(54.0)
  assert values["CLUE score"].ci95 == pytest.approx(tuple(np.percentile(clue, [2.5, 97.5])))
  per_task = {t: np.mean([reps[(f"fewclue_{t}_k{k}", "validation")]["accuracy"]
                          for k in range(5)], axis=0) for t in clue_scores.FEWCLUE_TASKS}
  assert values["fewclue csl k=0..4"].ci95 == pytest.approx(
      tuple(np.percentile(per_task["csl"], [2.5, 97.5])))
  few = np.mean(list(per_task.values()), axis=0)
  assert values["FewCLUE score"].value == pytest.approx(46.0)
  assert values["FewCLUE score"].ci95 == pytest.approx(tuple(np.percentile(few, [2.5, 97.5])))
  # The MRC board's members lack the classification board's CMNLI: no classification score.
  assert "CLUE classification" not in values and values["CLUE MRC"].ci95 is not None


def test_merged_parts_keep_their_resamples(tmp_path):
  """--merge (one model's results from several folders) keeps each part's resamples."""
  whole = _lot_run(tmp_path, "whole", clozet=(8, 6), senpos=(6, 3))
  parts = [_run(tmp_path, "part_clozet", {"lot_zh_clozet": _answers(8, 6)}),
           _run(tmp_path, "part_senpos", {"lot_zh_senpos": _answers(6, 3)})]
  merged = _overall(table.build(parts, paper="none", resamples=100, merge=True))
  assert merged["ci95"] == _overall(table.build([whole], paper="none", resamples=100))["ci95"]


def test_an_eval_of_num_examples_finds_its_log_in_first_n(tmp_path):
  """An eval with NUM_EXAMPLES=N keeps its inference logs in `first_N/` beside its
  records: a `validation[:N]` record draws its interval from there, not 'no saved
  predictions', and never from the whole split's log beside it."""
  folder = _lot_run(tmp_path, "run", clozet=(8, 6), senpos=(6, 3)) / "inference_eval"
  targets, predictions = _answers(4, 1)
  intervals.write_log(folder / records.subset_log_dir(4), "lot_zh_clozet", STEP, targets,
                      predictions, predictions)
  records.append(folder, [records.Record(STEP, "lot_zh_clozet", {"accuracy": 25.0}, "f" * 8,
                                         source="eval", split="validation[:4]")])
  by_split = {r.split: r for r in records.read(folder) if r.task == "lot_zh_clozet"}
  assert intervals.log_file(by_split["validation[:4]"]) == (
      folder / "first_4" / f"lot_zh_clozet-{STEP:06d}.jsonl")
  assert intervals.log_file(by_split["validation"]) == folder / f"lot_zh_clozet-{STEP:06d}.jsonl"
  # Without the whole split's log, a whole record reads the largest first_N (an eval
  # whose N reached the split's end, else it would be labelled a subset).
  whole = folder / f"lot_zh_clozet-{STEP:06d}.jsonl"
  (folder / "first_8").mkdir()
  whole.rename(folder / "first_8" / whole.name)
  assert intervals.log_file(by_split["validation"]) == folder / "first_8" / whole.name
  run = intervals.with_intervals(table.load_run(folder.parent, None), resamples=50)
  assert set(run.replicates) >= {("lot_zh_clozet", "validation[:4]"),
                                 ("lot_zh_clozet", "validation")}
