"""SciRepEval SeqIO tasks: registration, prompts, metrics on real and fixture datasets."""

import json
import pathlib

import pytest
import seqio

import crosstask.tasks.scirepeval as scirepeval  # registers the tasks and mixtures
from crosstask import paths
from crosstask.tasks.common import testing
from crosstask.tasks.scirepeval import text

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "scirepeval"


def test_registration():
  assert len(scirepeval.TASKS) == 23 and "scirepeval_s2and" not in scirepeval.TASKS
  mix = seqio.get_mixture_or_task("scirepeval_in_train")
  assert sorted(t.name for t in mix.tasks) == sorted(f"scirepeval_{k}" for k in text.IN_TRAIN)
  assert len(seqio.get_mixture_or_task("scirepeval_sample").tasks) == 5
  # Out-of-train pair tasks have no training data: their qrels are test only.
  assert seqio.get_mixture_or_task("scirepeval_trec_covid").splits == ("test",)
  assert seqio.get_mixture_or_task("scirepeval_biomimicry").splits == ("train", "test")


@pytest.mark.parametrize("key,keys", [
    ("fos", {"f1_macro"}), ("mesh_descriptors", {"f1_macro", "invalid"}),
    ("search", {"accuracy"}), ("same_author", {"accuracy"}), ("cite_prediction", {"accuracy"}),
])
def test_sample_split_tasks(official_data, key, keys):
  task = seqio.get_mixture_or_task(f"scirepeval_{key}")
  with paths.use_data_dir(official_data):
    testing.assert_prompt_format(task, text.get(key).prompt, split="sample")
    testing.assert_metric_keys(task, keys, split="sample")
    if key == "fos":
      # Macro F1 over all 23 columns, as the multi-label probe: a field absent from the
      # 20 examples scores 0 even for perfect predictions.
      targets = [e["targets"] for e in text_examples("fos")[:20]]
      present = {l for t in targets for l in t.split(", ")}
      testing.assert_perfect_predictions_score_max(task, split="sample",
                                                   top=100 * len(present) / 23)
    else:
      testing.assert_perfect_predictions_score_max(task, split="sample",
                                                   keys=keys - {"invalid"})
  testing.assert_postprocess_total(task)


def text_examples(key):
  from crosstask.tasks.scirepeval import records
  return records.examples(text.get(key), "sample")


@pytest.fixture
def fixture_root(tmp_path):
  root = tmp_path / "scirepeval" / "test"
  for name, train, test in (
      ("biomimicry", "101,1\n102,0\n", "103,0\n104,1\n"),
      ("tweet_mentions", "101,0.5\n102,0.25\n", "103,0.75\n104,0.1\n101,0.3\n")):
    (root / name).mkdir(parents=True)
    (root / name / "meta.jsonl").write_bytes((FIXTURES / "meta_simple.jsonl").read_bytes())
    (root / name / "train.csv").write_text("paper_id,label\n" + train)
    (root / name / "test.csv").write_text("paper_id,label\n" + test)
  (root / "relish").mkdir()
  for f in ("meta.jsonl", "test_qrel.jsonl"):
    (root / "relish" / f).write_bytes((FIXTURES / "relish" / f).read_bytes())
  prm = root / "paper_reviewer_matching"
  prm.mkdir()
  for f in ("test_hard_qrel.jsonl", "reviewer_metadata.jsonl"):
    (prm / f).write_bytes((FIXTURES / "paper_reviewer_matching" / f).read_bytes())
  with open(prm / "meta.jsonl", "w") as f:
    for pid in ("p0", "ra0", "ra1", "ra2", "rc0"):
      f.write(json.dumps({"doc_id": pid, "title": f"Paper {pid}", "abstract": ""}) + "\n")
  return tmp_path


@pytest.mark.parametrize("key,keys", [
    ("biomimicry", {"f1", "invalid"}), ("tweet_mentions", {"kendalltau", "parse_failures"}),
    ("relish", {"accuracy"}), ("paper_reviewer_matching", {"accuracy"}),
])
def test_out_of_train_test_splits(fixture_root, key, keys):
  task = seqio.get_mixture_or_task(f"scirepeval_{key}")
  with paths.use_data_dir(fixture_root):
    testing.assert_prompt_format(task, text.get(key).prompt, split="test")
    scores = testing.assert_metric_keys(task, keys, split="test")
    testing.assert_perfect_predictions_score_max(task, split="test",
                                                 keys=keys - {"invalid", "parse_failures"})
  assert scores.get("invalid", 0) == 0 and scores.get("parse_failures", 0) == 0


def test_an_unparsable_number_takes_the_probe_train_median(fixture_root):
  # The spec's rule: `float()` of the prediction, else the probe train split's median
  # label (tweet_mentions' train.csv: 0.5 and 0.25), counted in parse_failures.
  from scipy import stats  # pylint: disable=g-import-not-at-top
  [metric] = seqio.get_mixture_or_task("scirepeval_tweet_mentions").metric_fns
  targets, predictions = ["0.75", "0.1", "0.3"], ["0.7", "about 0.2", "0.5"]
  with paths.use_data_dir(fixture_root):
    got = metric(targets, predictions)
  assert got == {"kendalltau": pytest.approx(100 * stats.kendalltau(
      [0.75, 0.1, 0.3], [0.7, 0.375, 0.5])[0]), "parse_failures": 1.0}
  # The train split is read only when a prediction fails to parse; then a missing file
  # is named.
  with paths.use_data_dir(fixture_root / "empty"):
    assert metric(targets, ["0.7", "0.2", "0.5"])["parse_failures"] == 0.0
    with pytest.raises(FileNotFoundError, match="tweet_mentions/train.csv"):
      metric(targets, predictions)


def test_missing_split_file_is_named(tmp_path):
  task = seqio.get_mixture_or_task("scirepeval_fos")
  with paths.use_data_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="train/fos/train.jsonl"):
      task.get_dataset(None, split="train", shuffle=False)


def test_reviewer_pairs_are_graded_by_reviewer(fixture_root):
  from crosstask.tasks.scirepeval import records
  with paths.use_data_dir(fixture_root):
    got = records.examples(text.get("paper_reviewer_matching"), "test")
  # p0's judged reviewers with text: ra (3 papers, relevant) and rc (1 paper, relevant).
  assert [(e["cand_id"], e["targets"]) for e in got] == [("ra", "yes")] * 3 + [("rc", "yes")]
  assert got[0]["inputs"].startswith(
      "Title + Abstract + Reviewer paper title + Reviewer paper abstract -> Reviewer match "
      "Title: Paper p0; Abstract: ; Reviewer paper title: Paper ra0")
