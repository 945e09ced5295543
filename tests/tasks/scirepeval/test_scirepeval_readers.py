"""Readers of every official SciRepEval format: ids as strings, missing text, located errors."""

import json
import pathlib

import numpy as np
import pytest

from crosstask.tasks.scirepeval import readers

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "scirepeval"


def test_meta_ids_abstracts_years_and_venues_are_normalised():
  papers = readers.read_meta(FIXTURES / "meta_simple.jsonl")
  assert [p["doc_id"] for p in papers] == ["101", "102", "103", "104"]
  assert papers[0] == {"doc_id": "101", "title": "Gecko feet and dry adhesion",
                       "abstract": "We study setae.", "year": "2019"}
  assert papers[1] == {"doc_id": "102", "title": "Lotus leaf self-cleaning", "abstract": ""}
  assert "year" not in papers[2] and papers[3]["venue"] == "NeurIPS"


def test_ir_rows_text_query_takes_the_row_id():
  rows = readers.read_ir_rows(FIXTURES / "meta_search.jsonl")
  assert rows[0]["query"] == {"doc_id": "s1", "query": "gecko adhesion"}
  assert [c["doc_id"] for c in rows[1]["candidates"]] == ["103", "101"]
  assert rows[0]["candidates"][1] == {"doc_id": "102", "title": "Lotus leaf self-cleaning",
                                      "abstract": ""}
  relish = readers.read_ir_rows(FIXTURES / "relish" / "meta.jsonl")
  assert relish[1]["query"]["doc_id"] == "r1" and relish[1]["query"]["title"] == "Query paper one"


def test_evaluation_files():
  qrels = readers.read_qrels(FIXTURES / "relish" / "test_qrel.jsonl")
  assert qrels["r0"] == {"c1": 2, "c2": 0, "c3": 1}
  reviewers = readers.read_reviewer_metadata(
      FIXTURES / "paper_reviewer_matching" / "reviewer_metadata.jsonl")
  assert reviewers["rc"] == ["rc0"] and len(reviewers) == 7
  emb = readers.read_embeddings(FIXTURES / "embeddings.jsonl")
  assert emb["101"].dtype == np.float32 and emb["101"].tolist() == [1.0, 0.0]
  half = readers.read_embeddings(FIXTURES / "embeddings.jsonl", float16=True)
  assert half["ra1"].dtype == np.float16


def test_probe_split_csv_and_jsonl(tmp_path):
  (tmp_path / "train.csv").write_text('paper_id,label\n101,1\n102.0,0\n"103","[0, 1, 1]"\n')
  assert readers.read_probe_split(tmp_path / "train.csv") == [
      ("101", 1), ("102", 0), ("103", [0, 1, 1])]
  (tmp_path / "test.jsonl").write_text('{"paper_id": 7, "label": 0.25}\n\n'
                                       '{"paper_id": "8", "label": 3}\n')
  assert readers.read_probe_split(tmp_path / "test.jsonl") == [("7", 0.25), ("8", 3)]


def test_repeated_qrel_pair_keeps_the_first_grade(tmp_path):
  # allenai/scirepeval evaluation/evaluator.py, IREvaluator.get_qc_pairs: a pair is set
  # only when it is not there yet.
  path = tmp_path / "q.jsonl"
  path.write_text('{"query_id": 1, "cand_id": 2, "score": 1}\n'
                  '{"query_id": 1, "cand_id": 3, "score": 0}\n'
                  '{"query_id": "1", "cand_id": "2", "score": 0}\n'
                  '{"query_id": 1, "cand_id": 3, "score": 2}\n')
  assert readers.read_qrels(path) == {"1": {"2": 1, "3": 0}}


def test_embeddings_round_trip(tmp_path):
  path = readers.write_embeddings(tmp_path / "e" / "x.jsonl",
                                  {"a": np.array([0.5, -1.0]), 7: np.array([1.0, 2.0])})
  back = readers.read_embeddings(path)
  assert sorted(back) == ["7", "a"] and back["a"].tolist() == [0.5, -1.0]
  assert not list(path.parent.glob("*.tmp"))


def test_training_samples(official_data):
  d = official_data / "scirepeval" / "sample_data"
  fos = readers.read_training(d / "fos_small.json", "labels_text",
                              label_set=readers.read_label_list(d / "fos_labels.txt"))
  assert len(fos) == 205 and sum(not p["abstract"] for p in fos) == 48
  assert fos[0]["doc_id"] == "121676082" and fos[0]["label"] == ["Mathematics"]
  mesh = readers.read_training(d / "mesh_small.json", "descriptor",
                               label_set=readers.read_label_list(d / "mesh_descriptors.txt"))
  assert len(mesh) == 206 and len(readers.read_label_list(d / "mesh_descriptors.txt")) == 30
  search = readers.read_ir_rows(d / "search_small.jsonl", graded=True)
  cands = [c for r in search for c in r["candidates"]]
  assert len(search) == 100 and len(cands) == 1000
  assert sum("year" not in c for c in cands) == 2 and cands[0]["year"] == "1964"
  assert sum("venue" not in c for c in cands) == 467
  assert {c["score"] for c in cands} == {0, 1, 2}
  s2and = readers.read_ir_rows(d / "s2and_small.json", graded=True)
  assert len(s2and) == 40 and all(6 <= len(r["candidates"]) <= 10 for r in s2and)
  triplets = readers.read_triplets(d / "specter_small.json")
  assert len(triplets) == 200
  assert sum(not t[p]["abstract"] for t in triplets for p in t) == 16


# ------------------------------------------------------------------ bad input

def _write(tmp_path, name, text):
  path = tmp_path / name
  path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
  return path


@pytest.mark.parametrize("name,text,read,where,message", [
    ("meta.jsonl", '{"doc_id": 1, "title": "a"}\n{"title": "no id"}\n', readers.read_meta,
     ":2", "missing field 'doc_id'"),
    ("meta.jsonl", '{"doc_id": 1, "title": "a"}\n{"doc_id": 2, "title": "b"\n',
     readers.read_meta, ":2", "invalid JSON"),
    ("meta.jsonl", '{"doc_id": 1, "title": "a", "year": 2019.5}\n', readers.read_meta, ":1",
     "field 'year'"),
    ("meta.jsonl", '{"doc_id": 1, "title": "", "abstract": null}\n', readers.read_meta, ":1",
     "neither title nor abstract"),
    ("meta.jsonl", b'{"doc_id": 1, "title": "a"}\n{"doc_id": 2, "title": "\xff"}\n',
     readers.read_meta, ":2", "invalid UTF-8"),
    ("meta.json", '[{"doc_id": 1, "title": "a"},\n {"doc_id": null, "title": "b"}]',
     readers.read_meta, "[record 1]", "missing field 'doc_id'"),
    ("ir.jsonl", '{"doc_id": "q", "query": "x", "candidates": [{"doc_id": 1, "title": "a",'
     ' "score": "high"}]}\n', lambda p: readers.read_ir_rows(p, graded=True), ":1 candidate 0",
     "field 'score'"),
    ("ir.jsonl", '{"doc_id": "q", "query": "x", "candidates": []}\n', readers.read_ir_rows,
     ":1", "field 'candidates'"),
    ("qrels.jsonl", '{"query_id": 1, "cand_id": 2, "score": 1}\n{"query_id": 1, "cand_id": 3}\n',
     readers.read_qrels, ":2", "missing field(s) 'score'"),
    ("qrels.jsonl", '{"query_id": 1, "cand_id": 2, "score": 0.5}\n', readers.read_qrels, ":1",
     "integer grade"),
    ("train.csv", "paper_id,label\n1,0\n2,\n", readers.read_probe_split, ":3", "field 'label'"),
    ("train.csv", "id,label\n1,0\n", readers.read_probe_split, ":1", "header must name"),
    ("emb.jsonl", '{"doc_id": 1, "embedding": [1, 2]}\n{"doc_id": 2, "embedding": [1]}\n',
     readers.read_embeddings, ":2", "length 1 but earlier lines have 2"),
    ("emb.jsonl", '{"doc_id": 1, "embedding": [1, NaN]}\n', readers.read_embeddings, ":1",
     "NaN"),
    ("emb.jsonl", '[1, 2]\n', readers.read_embeddings, ":1", "expected a JSON object"),
    ("reviewers.jsonl", '{"r_id": 1, "papers": []}\n', readers.read_reviewer_metadata, ":1",
     "field 'papers'"),
    ("labels.txt", "Art\nBiology\nArt\n", readers.read_label_list, ":1", "duplicate label"),
    ("fos.json", '[{"corpus_id": 1, "title": "a", "labels_text": ["Nope"]}]',
     lambda p: readers.read_training(p, "labels_text", label_set=["Art"]), "[record 0]",
     "unknown label"),
])
def test_bad_input_names_file_and_line(tmp_path, name, text, read, where, message):
  path = _write(tmp_path, name, text)
  with pytest.raises(readers.DataError) as e:
    read(path)
  assert f"{path}{where}" in str(e.value) and message in str(e.value), str(e.value)


def test_missing_file_is_named(tmp_path):
  with pytest.raises(FileNotFoundError, match="no_such.jsonl"):
    readers.read_qrels(tmp_path / "no_such.jsonl")
