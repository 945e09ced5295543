"""CiteSum / SciTLDR / XSum / Gigaword readers on the bundled fixtures (each in its
official layout), on real SciTLDR-A data, and on malformed input (file:line errors)."""

import collections
import json
import shutil

import pytest

from crosstask import paths
from crosstask.tasks.citesum import readers
from crosstask.tasks.common.readers import BadRows, DataError

SAMPLE = paths.SAMPLE_DIR


# --- CiteSum ---------------------------------------------------------------------


def test_citesum_fixture_fields_and_discipline_forms():
  train = list(readers.read_citesum("train", SAMPLE))
  assert len(train) == 6
  first, second = train[0], train[1]
  assert first["tldr"].startswith("REF proposed")
  assert second["tldr"] == "In REF , the authors compute layer-wise loss scales automatically."
  # The same paper cited twice; discipline given as a dict and as a JSON string.
  assert first["paper_id"] == second["paper_id"] == "1001"
  assert first["discipline"] == second["discipline"] == "Computer Science"
  assert first["venue"] == "ICLR"
  by_id = {r["paper_id"]: r for r in train}
  assert by_id["1002"]["discipline"] == "Biology"  # the top field of several
  assert by_id["1002"]["fields_of_study"] == ["Biology", "Computer Science"]
  assert by_id["1003"]["title"] == ""  # empty title kept as ''
  assert by_id["1003"]["tldr"].count("REF") == 2
  assert by_id["1004"]["discipline"] == ""  # empty mag_field_of_study
  assert "introduction" not in first  # the release has no AIC text; never fabricated
  val = list(readers.read_citesum("validation", SAMPLE))
  assert [r["discipline"] for r in val] == ["Computer Science", "Physics", ""]  # missing field
  test = list(readers.read_citesum("test", SAMPLE))
  assert test[1]["discipline"] == "Economics"  # a Python-repr string
  assert test[2]["paper_id"] == "3003"  # int64 paper ids (derived parquet) become strings


def test_parse_discipline_forms():
  where = "f.json:1"
  expected = {"venue": "V", "journal": "", "fields_of_study": ["Physics"]}
  value = {"venue": "V", "journal": None, "mag_field_of_study": ["Physics"]}
  assert readers.parse_discipline(value, where) == expected
  assert readers.parse_discipline(json.dumps(value), where) == expected
  assert readers.parse_discipline(repr(value), where) == expected
  assert readers.parse_discipline(None, where)["fields_of_study"] == []
  assert readers.parse_discipline("", where)["fields_of_study"] == []
  assert readers.parse_discipline({"mag_field_of_study": None}, where)["fields_of_study"] == []


def test_citesum_aic_fields_kept_when_present(tmp_path):
  (tmp_path / "citesum").mkdir()
  row = {"src": "An abstract.", "tgt": "REF did it.", "introduction": "Intro text.",
         "conclusion": "We conclude."}
  (tmp_path / "citesum" / "val.json").write_text(json.dumps(row) + "\n")
  (record,) = readers.read_citesum("validation", tmp_path)
  assert record["introduction"] == "Intro text." and record["conclusion"] == "We conclude."
  assert record["paper_id"] == "" and record["discipline"] == ""


# --- SciTLDR ---------------------------------------------------------------------------


def test_scitldr_fixture_references_author_first():
  dev = list(readers.read_scitldr("validation", SAMPLE))
  assert [len(r["references"]) for r in dev] == [3, 1, 4]
  assert dev[0]["tldr"] == dev[0]["references"][0]
  assert dev[0]["abstract"] == " ".join(dev[0]["sentences"])
  train = list(readers.read_scitldr("train", SAMPLE))
  assert train[2]["tldr"].startswith(" We propose")  # raw, for the "We " rewrite rule
  assert train[2]["references"][0].startswith("We propose")  # whitespace-collapsed for scoring


def test_scitldr_real_counts(official_data):
  train = list(readers.read_scitldr("train", official_data))
  dev = list(readers.read_scitldr("validation", official_data))
  assert len(train) == 1992 and len(dev) == 619
  assert {len(r["references"]) for r in train} == {1}
  assert collections.Counter(len(r["references"]) for r in dev) == {1: 94, 2: 237, 3: 267, 4: 21}
  assert sum(len(r["references"]) for r in dev) == 1453


# --- XSum ---------------------------------------------------------------------------------


def test_xsum_official_layout_hf_parsing():
  train = list(readers.read_xsum("train", SAMPLE))
  assert len(train) == 12
  assert [len(list(readers.read_xsum(s, SAMPLE))) for s in ("validation", "test")] == [3, 3]
  first = train[0]
  assert first["id"] == "39000000"
  assert first["summary"] == ("The bridge in Cardiff will reopen next month after two years of "
                              "repairs, the council has said.")
  # Share-widget lines and blank lines dropped; the body keeps its line breaks.
  assert first["document"] == ("Work on the bridge began in 2015 after storm damage.\n"
                               "The council said the repairs cost 2 million pounds.\n"
                               "Local people in Cardiff welcomed the news.")


def test_xsum_jsonl_export_preferred(tmp_path):
  (tmp_path / "xsum").mkdir()
  rows = [{"document": "Doc one.\nLine two.", "summary": "Sum one.", "id": "1"},
          {"document": "Doc two.", "summary": "Sum two.", "id": 2}]
  (tmp_path / "xsum" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
  got = list(readers.read_xsum("test", tmp_path))
  assert got == [{"id": "1", "document": "Doc one.\nLine two.", "summary": "Sum one."},
                 {"id": "2", "document": "Doc two.", "summary": "Sum two."}]
  with pytest.raises(FileNotFoundError, match="validation.jsonl"):
    list(readers.read_xsum("validation", tmp_path))


# --- Gigaword ----------------------------------------------------------------------------


def test_gigaword_unk_replaced_in_train_and_dev_only():
  train = list(readers.read_gigaword("train", SAMPLE))
  assert train[1] == {"document": "the UNK government said on tuesday it would cut fuel "
                                   "taxes by ## percent .", "headline": "UNK to cut fuel taxes"}
  assert "UNK" in list(readers.read_gigaword("validation", SAMPLE))[1]["headline"]
  test = list(readers.read_gigaword("test", SAMPLE))
  assert len(test) == 3 and test[0]["headline"] == "japanese pm to visit UNK"
  assert not any("<unk>" in r["document"] for r in train)


# --- malformed input: every error names file and line ---------------------------------------


def _citesum_dir(tmp_path, lines):
  (tmp_path / "citesum").mkdir()
  path = tmp_path / "citesum" / "train.json"
  path.write_text("".join(line + "\n" for line in lines))
  return path


GOOD = json.dumps({"src": "An abstract.", "tgt": "REF did it.", "paper_id": "1"})


def test_bad_citesum_invalid_json_names_line(tmp_path):
  path = _citesum_dir(tmp_path, [GOOD, '{"src": "x", "tgt": '])
  with pytest.raises(DataError, match=f"{path}:2: invalid JSON"):
    list(readers.read_citesum("train", tmp_path))


def test_bad_citesum_missing_target_names_line_and_field(tmp_path):
  path = _citesum_dir(tmp_path, [GOOD, GOOD, json.dumps({"src": "An abstract."})])
  with pytest.raises(DataError, match=f"{path}:3: missing field.*'tgt'"):
    list(readers.read_citesum("train", tmp_path))


def test_bad_citesum_discipline_and_types(tmp_path):
  path = _citesum_dir(tmp_path, [
      json.dumps({"src": "A.", "tgt": "B.", "discipline": "{not a dict"}),
      json.dumps({"src": "A.", "tgt": "", "paper_id": "2"}),
      json.dumps({"src": "A.", "tgt": "B.", "discipline": {"mag_field_of_study": [3]}}),
      GOOD])
  with pytest.raises(DataError, match=f"{path}:1: field 'discipline'"):
    list(readers.read_citesum("train", tmp_path))
  bad = BadRows()
  got = list(readers.read_citesum("train", tmp_path, on_bad_row="skip", bad=bad))
  assert len(got) == 1 and bad.count == 3
  assert f"{path}:2: field 'tgt': is empty" in bad.messages[1]
  assert f"{path}:3: field 'discipline.mag_field_of_study'" in bad.messages[2]


def test_bad_scitldr_target_and_source(tmp_path):
  folder = tmp_path / "scitldr" / "SciTLDR-A"
  folder.mkdir(parents=True)
  path = folder / "test.jsonl"
  path.write_text("\n".join([
      json.dumps({"source": ["S."], "target": ["T."], "paper_id": "a"}),
      json.dumps({"source": ["S."], "target": [], "paper_id": "b"}),
      json.dumps({"source": ["S.", 7], "target": ["T."], "paper_id": "c"}),
      json.dumps(["not", "an", "object"]),
  ]) + "\n")
  with pytest.raises(DataError, match=f"{path}:2: field 'target': expected a non-empty list"):
    list(readers.read_scitldr("test", tmp_path))
  bad = BadRows()
  assert len(list(readers.read_scitldr("test", tmp_path, on_bad_row="skip", bad=bad))) == 1
  assert bad.count == 3
  assert bad.messages[1].startswith(f"{path}:3: field 'source[1]'")
  assert bad.messages[2].startswith(f"{path}:4: expected a JSON object")


def test_bad_xsum_summary_sections_and_missing_article(tmp_path):
  shutil.copytree(SAMPLE / "xsum", tmp_path / "xsum")
  article = tmp_path / "xsum" / "bbc-summary-data" / "39000255.summary"  # a test id
  text = article.read_text().replace("[SN]RESTBODY[SN]", "[SN]BODY[SN]")
  article.write_text(text)
  with pytest.raises(DataError, match=(rf"{article}: expected sections .* found \[.*"
                                       r"'7:\[SN\]FIRST-SENTENCE\[SN\]', '10:\[SN\]BODY\[SN\]'\]")):
    list(readers.read_xsum("test", tmp_path))
  split_file = tmp_path / "xsum" / readers.XSUM_SPLIT_FILE
  split_file.write_text(json.dumps({"train": [], "validation": ["123"], "test": []}))
  with pytest.raises(FileNotFoundError, match=r"123.summary listed in .*\[validation 0\]"):
    list(readers.read_xsum("validation", tmp_path))
  split_file.write_text('{"train": [\n  "1",\n  oops]}')
  with pytest.raises(DataError, match=f"{split_file}:3:3: invalid JSON"):
    list(readers.read_xsum("train", tmp_path))


def test_bad_gigaword_line_counts_empty_lines_and_utf8(tmp_path):
  shutil.copytree(SAMPLE / "gigaword", tmp_path / "gigaword")
  src, tgt = readers.gigaword_paths("test", tmp_path)
  with open(tgt, "a") as f:
    f.write("one headline too many\n")
  with pytest.raises(DataError, match=f"{src} has 3 lines but {tgt} has 4"):
    list(readers.read_gigaword("test", tmp_path))
  src, tgt = readers.gigaword_paths("validation", tmp_path)
  lines = tgt.read_text().splitlines()
  tgt.write_text("\n".join([lines[0], "  ", lines[2]]) + "\n")
  with pytest.raises(DataError, match=f"{tgt}:2: empty line"):
    list(readers.read_gigaword("validation", tmp_path))
  bad = BadRows()
  assert len(list(readers.read_gigaword("validation", tmp_path, on_bad_row="skip",
                                        bad=bad))) == 2
  assert bad.count == 1
  src, _ = readers.gigaword_paths("train", tmp_path)
  src.write_bytes(src.read_bytes().replace(b"police", b"poli\xffce"))
  with pytest.raises(DataError, match=f"{src}:3: invalid UTF-8 at byte 4"):
    list(readers.read_gigaword("train", tmp_path))


def test_missing_split_files_are_named(tmp_path):
  with pytest.raises(FileNotFoundError, match="CiteSum test file not found.*test.json"):
    list(readers.read_citesum("test", tmp_path))
  with pytest.raises(FileNotFoundError, match="XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json"):
    list(readers.read_xsum("test", tmp_path))
  with pytest.raises(ValueError, match="CiteSum has no split 'dev'"):
    list(readers.read_citesum("dev", tmp_path))
