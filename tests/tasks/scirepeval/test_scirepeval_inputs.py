"""Encoder inputs of the embedding path: format codes, labelled fields, one token per code."""

import pathlib

import pytest
import seqio

from crosstask.tasks.scirepeval import inputs, readers

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "scirepeval"


def test_classification_inputs_carry_the_clf_code():
  items = inputs.embedding_inputs(readers.read_meta(FIXTURES / "meta_simple.jsonl"),
                                  "classification")
  assert items[0] == ("101", "[CLF]",
                      "[CLF] Title: Gecko feet and dry adhesion; Abstract: We study setae.")
  assert items[1][2] == "[CLF] Title: Lotus leaf self-cleaning"  # Null abstract: title alone.
  assert items[2][2] == "[CLF] Title: A survey of sorting"        # Whitespace collapsed.
  assert items[3][2] == "[CLF] Title: Deep nets, a note; Abstract: Layers, and more layers."
  plain = inputs.embedding_inputs(readers.read_meta(FIXTURES / "meta_simple.jsonl"),
                                  "regression", ctrl=False)
  assert plain[0][1:] == ("", "Title: Gecko feet and dry adhesion; Abstract: We study setae.")


def test_search_queries_and_candidates_each_embedded_once():
  rows = inputs.read_meta_any(FIXTURES / "meta_search.jsonl")
  items = inputs.embedding_inputs(rows, "adhoc_search",
                                  fields=("title", "abstract", "venue", "year"))
  # Every query, then every candidate (the official IRDataset.batches); 101 only once.
  assert [i[0] for i in items] == ["s1", "s2", "101", "102", "103"]
  assert items[0][2] == "[QRY] Query: gecko adhesion"
  assert items[1][2] == "[QRY] Query: sorting"
  assert items[2][2] == ("[PRX] Title: Gecko feet and dry adhesion; Abstract: We study setae.; "
                         "Venue: Nature; Year: 2019")
  assert items[4][2] == "[PRX] Title: A survey of sorting; Year: 2001"


def test_a_paper_that_is_a_candidate_and_a_later_query_is_embedded_as_the_query():
  rows = [{"query": {"doc_id": "q1", "title": "first query"},
           "candidates": [{"doc_id": "x", "title": "Paper X"}]},
          {"query": {"doc_id": "x", "title": "Paper X"},
           "candidates": [{"doc_id": "c2", "title": "Paper C"}]}]
  items = inputs.embedding_inputs(rows, "proximity")
  assert [(i[0], i[1]) for i in items] == [("q1", "[PRX]"), ("x", "[PRX]"), ("c2", "[PRX]")]
  search = inputs.embedding_inputs(rows, "adhoc_search")
  assert [(i[0], i[1]) for i in search] == [("q1", "[QRY]"), ("x", "[QRY]"), ("c2", "[PRX]")]


def test_first_pooling_needs_a_one_token_code():
  items = [("1", "[CLF]", "[CLF] Title: x")]
  with pytest.raises(ValueError, match="one token; '\\[CLF\\]' is 5 tokens"):
    inputs.tokenize(items, seqio.ByteVocabulary(), max_length=32, sentinel_codes=False,
                       pooling="first")
  vocab = seqio.ByteVocabulary(extra_ids=4)
  (tokens,), truncated = inputs.tokenize(items, vocab, max_length=32, sentinel_codes=True,
                                            pooling="first")
  assert tokens[0] == vocab.vocab_size - 1  # [CLF] = <extra_id_0>, [PRX] = <extra_id_1>, ...
  assert vocab.decode(tokens[1:-1]) == "Title: x" and tokens[-1] == 1 and truncated == 0
  with pytest.raises(ValueError, match="'no code' is 0 tokens"):  # CTRL_CODES=False
    inputs.tokenize([("1", "", "Title: x")], vocab, max_length=32, sentinel_codes=True,
                       pooling="first")
  with pytest.raises(ValueError, match="extra_ids"):
    inputs.tokenize(items, seqio.ByteVocabulary(), max_length=32, sentinel_codes=True,
                       pooling="first")


def test_truncation_keeps_eos_and_is_counted():
  items = [("1", "", "x" * 40), ("2", "", "short")]
  tokens, truncated = inputs.tokenize(items, seqio.ByteVocabulary(), max_length=16,
                                         sentinel_codes=False, pooling="mean")
  assert [len(t) for t in tokens] == [16, 6] and tokens[0][-1] == 1 and truncated == 1


def test_meta_rows_need_ids_to_key_embeddings(tmp_path):
  path = tmp_path / "m.jsonl"
  path.write_text('{"query": "text only", "candidates": [{"doc_id": 1, "title": "a"}]}\n')
  with pytest.raises(readers.DataError, match="no doc_id"):
    inputs.embedding_inputs(inputs.read_meta_any(path), "adhoc_search")
