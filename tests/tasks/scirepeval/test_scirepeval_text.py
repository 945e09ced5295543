"""Text forms of the 23 SciRepEval tasks: prompts, targets, pairs, splits."""

import pathlib

import pytest

from crosstask import paths
from crosstask.tasks.scirepeval import records, text

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "scirepeval"


def test_23_text_tasks_all_but_s2and():
  assert len(text.TEXT_TASKS) == 23
  assert {t.spec.name for t in text.TEXT_TASKS} >= {"Citation Prediction", "TREC-CoVID"}
  assert "S2AND" not in {t.spec.name for t in text.TEXT_TASKS}
  assert set(text.IN_TRAIN) == {"fos", "mesh_descriptors", "cite_count", "pub_year",
                                "same_author", "high_influence_cite", "cite_prediction", "search"}
  with pytest.raises(KeyError, match="no text form"):
    text.get("s2and")


@pytest.mark.parametrize("key,prompt", [
    ("fos", "Title + Abstract -> Fields of study"),
    ("pub_year", "Title + Abstract -> Publication year"),
    ("search", "Query + Title + Abstract + Venue + Year -> Relevant"),
    ("trec_covid", "Query + Title + Abstract -> Relevant"),
    ("same_author", "Title + Abstract + Candidate title + Candidate abstract -> Same author"),
    ("paper_reviewer_matching",
     "Title + Abstract + Reviewer paper title + Reviewer paper abstract -> Reviewer match"),
])
def test_prompts(key, prompt):
  from crosstask.tasks.common import layout
  task = text.get(key)
  assert task.prompt == prompt == layout.prompt(
      text.SCHEMA, text.input_fields(task), (text.output_field(task),), "en")


def test_values_cannot_fake_a_field_marker():
  task = text.get("relish")
  got = text.pair_inputs(task, {"doc_id": "q", "title": "A; Candidate title: B", "abstract": ""},
                         {"doc_id": "c", "title": "C", "abstract": "D"})
  assert got.count("; Candidate title: ") == 1


def test_classification_and_regression_targets():
  fos = text.get("fos")
  # Label-file order whatever the input order; multi-hot and index lists agree.
  assert text.label_target(fos, ["Physics", "Art"]) == "Art, Physics"
  assert text.label_target(fos, [0] * 19 + [1, 0, 0, 0]) == "Physics"
  assert text.label_target(text.get("drsm"), 2) == "disease mechanism"
  with pytest.raises(ValueError, match="outside 0..5"):
    text.label_target(text.get("drsm"), 6)
  assert text.label_target(text.get("biomimicry"), 1) == "yes"
  ex = text.paper_example(text.get("cite_count"),
                          {"doc_id": "7", "title": "T", "abstract": "", "label": 2.302585})
  # Every input field is labelled, even an empty one (the shared layout).
  assert ex == {"inputs": "Title + Abstract -> Citations Title: T; Abstract: ",
                "targets": "2.303", "doc_id": "7"}


def test_pair_examples_and_training_pairs():
  task = text.get("relish")
  row = {"query": {"doc_id": "q", "title": "Q", "abstract": "qa"},
         "candidates": [{"doc_id": "a", "title": "A", "abstract": ""},
                        {"doc_id": "b", "title": "B", "abstract": "bb"}]}
  out = text.pair_examples(task, row, {"a": 2, "b": 0, "z": 1})
  assert out[0] == {"inputs": "Title + Abstract + Candidate title + Candidate abstract -> "
                              "Relevant Title: Q; Abstract: qa; Candidate title: A; "
                              "Candidate abstract: ",
                    "targets": "yes", "query_id": "q", "cand_id": "a", "grade": "2"}
  assert out[1]["targets"] == "no" and len(out) == 2  # z: judged but not in the meta row.
  cands = [{"doc_id": str(i), "score": s} for i, s in enumerate([1, 0, 0, 2, 0, 0, 0, 0])]
  pairs = records.training_pairs({"candidates": cands})
  assert [(c["doc_id"], g) for c, g in pairs] == [
      ("0", 1), ("1", 0), ("3", 2), ("2", 0), ("0", 1), ("4", 0), ("3", 2), ("5", 0),
      ("0", 1), ("6", 0)]
  assert records.training_pairs({"candidates": cands[1:3]}) == []  # No positive.


def test_test_split_from_meta_and_qrels(tmp_path):
  root = tmp_path / "scirepeval" / "test" / "relish"
  root.mkdir(parents=True)
  for name in ("meta.jsonl", "test_qrel.jsonl"):
    (root / name).write_bytes((FIXTURES / "relish" / name).read_bytes())
  with paths.use_data_dir(tmp_path):
    got = records.examples(text.get("relish"), "test")
    assert [(e["query_id"], e["cand_id"], e["targets"]) for e in got] == [
        ("r0", "c1", "yes"), ("r0", "c2", "no"), ("r0", "c3", "yes"), ("r1", "c2", "no"),
        ("r1", "c4", "no")]
    with pytest.raises(FileNotFoundError, match="train.jsonl"):
      records.examples(text.get("search"), "train")
    with pytest.raises(ValueError, match="no split 'validation'"):
      records.examples(text.get("relish"), "validation")


def test_sample_split(official_data):
  with paths.use_data_dir(official_data):
    fos = records.examples(text.get("fos"), "sample")
    search = records.examples(text.get("search"), "sample")
    specter = records.examples(text.get("cite_prediction"), "sample")
  assert len(fos) == 205 and fos[0]["targets"] == "Mathematics"
  assert sum(", " in e["targets"] for e in fos) == 32  # 30 papers with 2 fields, 2 with 3.
  assert len(search) == 1000 and {e["targets"] for e in search} == {"yes", "no"}
  assert len(specter) == 400 and [e["targets"] for e in specter[:2]] == ["yes", "no"]


def test_flat_meta_pairs_come_from_qrels():
  papers = [{"doc_id": d, "title": d.upper(), "abstract": ""} for d in ("a", "b", "c")]
  rows = text.judged_rows(papers, {"a": {"b": 1, "c": 0, "zz": 1}, "nq": {"a": 1}})
  assert len(rows) == 1 and rows[0]["query"]["doc_id"] == "a"
  assert [c["doc_id"] for c in rows[0]["candidates"]] == ["b", "c"]
  ir = text.judged_rows([{"query": {"query": "x"}, "candidates": []}], None)
  assert ir[0]["query"] == {"query": "x", "doc_id": "q0"}
  with pytest.raises(ValueError, match="needs qrels"):
    text.judged_rows(papers, None)


def test_probe_splits_joined_with_meta(tmp_path):
  d = tmp_path / "scirepeval" / "test" / "biomimicry"
  d.mkdir(parents=True)
  (d / "meta.jsonl").write_bytes((FIXTURES / "meta_simple.jsonl").read_bytes())
  (d / "train.csv").write_text("paper_id,label\n101,1\n102,0\n")
  (d / "test.csv").write_text("paper_id,label\n103,0\n999,1\n104,1\n")
  task = text.get("biomimicry")
  assert records.splits(task) == ("train", "test")
  with paths.use_data_dir(tmp_path):
    test = records.examples(task, "test")
    train = records.examples(task, "train")
  assert [(e["doc_id"], e["targets"]) for e in test] == [("103", "no"), ("104", "yes")]  # 999: no text
  assert test[1]["inputs"] == ("Title + Abstract -> Biomimicry Title: Deep nets; a note; "
                               "Abstract: Layers; and more layers.")
  assert [e["targets"] for e in train] == ["yes", "no"]


def test_training_examples_leave_out_evaluation_ids(official_data, tmp_path):
  d = official_data / "scirepeval" / "sample_data"
  (tmp_path / "scirepeval" / "sample_data").mkdir(parents=True)
  for name in ("fos_small.json", "search_small.jsonl"):
    (tmp_path / "scirepeval" / "sample_data" / name).write_bytes((d / name).read_bytes())
  test_dir = tmp_path / "scirepeval" / "test" / "fos"
  test_dir.mkdir(parents=True)
  (test_dir / "test.csv").write_text("paper_id,label\n121676082,\"[0]\"\n")
  with paths.use_data_dir(tmp_path):
    fos = records.examples(text.get("fos"), "sample")
    search = records.examples(text.get("search"), "sample")
  assert len(fos) == 204 and "121676082" not in {e["doc_id"] for e in fos}
  assert len(search) == 1000  # No search test data: nothing to leave out.
