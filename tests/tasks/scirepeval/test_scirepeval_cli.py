"""`python -m crosstask.scirepeval_eval`: official result shapes, hand-checked numbers."""

import csv
import json
import pathlib

import numpy as np
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV
from sklearn.svm import LinearSVC, LinearSVR
from scipy import stats

from crosstask import scirepeval_eval as cli

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "scirepeval"
EMB = str(FIXTURES / "embeddings.jsonl")


def _score(capsys, *args):
  code = cli.main(["score", *args])
  out = capsys.readouterr()
  return code, (json.loads(out.out) if code == 0 else out.err)


def test_relish_hand_computed(capsys):
  # r0 ranks c1 (2), c3 (1), c2 (0) perfectly; r1's only relevant doc c9 has no
  # embedding: it scores 0 but counts. nDCG = (1 + 0) / 2.
  code, out = _score(capsys, "--task", "relish", "--embeddings", EMB, "--data",
                     str(FIXTURES))
  assert code == 0
  assert out["RELISH"] == {"ndcg": 50.0}
  assert out["scored_by"]["backend"] == "sklearn"
  assert out["scored_by"]["candidates_without_embedding"] == 1


def test_paper_reviewer_matching_hand_computed(capsys):
  # p0's reviewers by top-3 mean cosine: rb .930, rf .707, rc .5, ra .063, rd -.087, re, rg.
  # hard relevant {ra, rc, rg}: P@5 2/5, P@10 3/10; p1: ra ranks 2nd of 2, P@5 1/5, P@10 1/10.
  code, out = _score(capsys, "--task", "Paper-Reviewer Matching", "--embeddings", EMB,
                     "--data", str(FIXTURES))
  assert code == 0
  assert out["Paper-Reviewer Matching"] == {"hard_P_10": 20.0, "hard_P_5": 30.0,
                                            "soft_P_10": 30.0, "soft_P_5": 40.0}


def test_paper_reviewer_matching_ranks_the_hard_splits_reviewers_for_both_splits(
    tmp_path, capsys):
  # allenai/scirepeval reviewer_matching.py: one run, from the hard qrels, scored with
  # each split's. Here the hard split judges only p0's ra, rb, rc, rd: ranked rb, rc, ra,
  # rd; soft grades them 1, 1, 1, 0 -> P@5 3/5, P@10 3/10 (not 5/10: soft's re and rg
  # are not ranked); p1 as above. Hard: 2/5 and 2/10 for p0.
  prm = tmp_path / "paper_reviewer_matching"
  prm.mkdir()
  source = FIXTURES / "paper_reviewer_matching"
  for name in ("reviewer_metadata.jsonl", "test_soft_qrel.jsonl"):
    (prm / name).write_text((source / name).read_text())
  hard = (source / "test_hard_qrel.jsonl").read_text().splitlines()
  (prm / "test_hard_qrel.jsonl").write_text("\n".join(
      l for l in hard if json.loads(l)["cand_id"] in ("ra", "rb", "rc", "rd")) + "\n")
  code, out = _score(capsys, "--task", "Paper-Reviewer Matching", "--embeddings", EMB,
                     "--data", str(tmp_path))
  assert code == 0, out
  assert out["Paper-Reviewer Matching"] == {"hard_P_10": 15.0, "hard_P_5": 30.0,
                                            "soft_P_10": 20.0, "soft_P_5": 40.0}


def _probe_data(tmp_path, n_train=150, n_test=60, regression=False):
  rng = np.random.RandomState(0)
  x = rng.normal(size=(n_train + n_test, 6))
  w = rng.normal(size=6)
  y = x @ w if regression else (x @ w > 0.3).astype(int)
  ids = [f"p{i}" for i in range(len(x))]
  with open(tmp_path / "emb.jsonl", "w") as f:
    for pid, v in zip(ids, x):
      f.write(json.dumps({"doc_id": pid, "embedding": v.tolist()}) + "\n")
  for split, lo, hi in (("train", 0, n_train), ("test", n_train, n_train + n_test)):
    with open(tmp_path / f"{split}.csv", "w", newline="") as f:
      w_ = csv.writer(f)
      w_.writerow(["paper_id", "label"])
      w_.writerows([ids[i], y[i]] for i in range(lo, hi))
      if split == "train":
        w_.writerow(["no_embedding", y[0]])  # Dropped silently, as officially.
  xf = x.astype(np.float32)
  return xf[:n_train], y[:n_train], xf[n_train:], y[n_train:]


def test_biomimicry_full_and_few_shot_shape(tmp_path, capsys):
  x, y, xt, yt = _probe_data(tmp_path)
  code, out = _score(capsys, "--task", "biomimicry", "--embeddings", str(tmp_path / "emb.jsonl"),
                     "--data", str(tmp_path))
  assert code == 0
  res = out["Biomimicry"]
  direct = GridSearchCV(LinearSVC(loss="squared_hinge", random_state=42),
                        {"C": np.logspace(-2, 2, 5)}, cv=3).fit(x, y).predict(xt)
  assert res["complete"] == {"f1": round(100 * f1_score(yt, direct), 2)}
  assert [r["sample_size"] for r in res["few_shot"]] == [64, 16]
  assert all(0 <= r["results"]["f1"] <= 100 for r in res["few_shot"])


def test_regression_kendall_tau(tmp_path, capsys):
  x, y, xt, yt = _probe_data(tmp_path, regression=True)
  code, out = _score(capsys, "--task", "tweet_mentions", "--embeddings",
                     str(tmp_path / "emb.jsonl"), "--data", str(tmp_path),
                     "--output", str(tmp_path / "results.json"))
  assert code == 0
  preds = GridSearchCV(LinearSVR(random_state=42), {"C": np.logspace(-4, 2, 7)},
                       cv=3).fit(x, y).predict(xt)
  want = round(100 * stats.kendalltau(yt, preds)[0], 2)
  assert out["Tweet Mentions"] == {"kendalltau": want}
  assert out["scored_by"]["rows_without_embedding"] == 1
  assert out["scored_by"]["train_rows"] == 150 and out["scored_by"]["test_rows"] == 60
  saved = json.loads((tmp_path / "results.json").read_text())
  assert saved["Tweet Mentions"]["kendalltau"] == want


def test_aggregate_command(tmp_path, capsys):
  path = tmp_path / "r.json"
  path.write_text(json.dumps({"RELISH": {"ndcg": 60.0}, "Search": {"ndcg": 70.0}}))
  assert cli.main(["aggregate", "--results", str(path)]) == 0
  got = json.loads(capsys.readouterr().out)
  assert got["in_train"] == 70.0 and got["out_of_train"] == 60.0 and not got["complete"]
  assert len(got["missing"]) == 21


def test_errors_are_clear(tmp_path, capsys):
  code, err = _score(capsys, "--task", "nope", "--embeddings", EMB, "--data", str(FIXTURES))
  assert code == 2 and "unknown SciRepEval task 'nope'" in err
  code, err = _score(capsys, "--task", "drsm", "--embeddings", EMB, "--data", str(tmp_path))
  assert code == 2 and "no test data for 'DRSM'" in err
  code, out = _score(capsys, "--task", "s2and", "--embeddings", EMB, "--data", str(tmp_path))
  assert code == 0 and out["S2AND"]["not_run"] is True


def test_float16_auto_follows_the_official_cache(tmp_path, capsys):
  _probe_data(tmp_path, regression=True)
  args = ["--embeddings", str(tmp_path / "emb.jsonl"), "--data", str(tmp_path)]
  code, out = _score(capsys, "--task", "hIndex", *args)
  assert code == 0 and out["scored_by"]["float16"] is True
  code, out16 = _score(capsys, "--task", "tweet_mentions", "--float16", "yes", *args)
  code, out32 = _score(capsys, "--task", "tweet_mentions", *args)
  assert out16["scored_by"]["float16"] and not out32["scored_by"]["float16"]
  assert out["Max hIndex"] == out16["Tweet Mentions"] != {}
