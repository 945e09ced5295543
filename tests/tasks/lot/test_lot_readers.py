"""LOT files: the bundled sample, the official examples, and bad input named by file:line."""

import json

import pytest

from crosstask.tasks.common.readers import BadRows, DataError
from crosstask.tasks.lot import readers

SAMPLE_COUNTS = {"train": 4, "validation": 2, "test": 2}


@pytest.mark.parametrize("task", ["clozet", "senpos", "plotcom", "outgen"])
def test_bundled_sample_reads_every_split(task):
  from crosstask import paths  # pylint: disable=g-import-not-at-top
  for split, n in SAMPLE_COUNTS.items():
    records = readers.read_split(task, split, paths.SAMPLE_DIR)
    assert len(records) == n
  if task == "senpos":
    assert all(1 <= r["label"] <= r["num_positions"] for r in records)


def test_nlpcc_val_on_the_official_data(official_data):
  records = readers.read_split("nlpcc", "validation", official_data)
  assert len(records) == 661
  assert all("title" not in r and 2 <= len(r["outline"]) <= 8 for r in records)
  assert all(p in r["story"] for r in records for p in r["outline"])


def test_readme_examples_read_as_files(official_data):
  for task in ("clozet", "senpos", "plotcom", "outgen"):
    [record] = readers.read_file(task, official_data / "lot" / "readme_examples" / f"{task}.jsonl")
    assert record


def test_missing_split_names_the_file(tmp_path):
  with pytest.raises(FileNotFoundError, match=r"lot/outgen/test.jsonl"):
    readers.read_split("outgen", "test", tmp_path)
  with pytest.raises(ValueError, match="unknown LOT split"):
    readers.split_path("outgen", "dev", tmp_path)


def _file(tmp_path, lines, name="data.jsonl"):
  path = tmp_path / name
  path.write_bytes(b"".join(l if isinstance(l, bytes) else (l + "\n").encode() for l in lines))
  return path


GOOD_CLOZET = json.dumps({"story": "甲<mask>乙", "plot0": "丙", "plot1": "丁", "label": "1"},
                         ensure_ascii=False)


# Bad-input cases (file:line in every message), for the project-wide bad-input module.
@pytest.mark.parametrize("task,bad_line,needle", [
    ("clozet", '{"story": "甲乙", "plot0": "丙", "plot1": "丁", "label": "1"}',
     "field 'story'"),
    ("clozet", '{"story": "甲<mask>乙", "plot0": "丙", "plot1": "丁", "label": 1.5}',
     "field 'label'"),
    ("senpos", '{"story": "甲[MASK]乙[MASK]丙", "sentence": "丁", "label": 3}', "field 'label'"),
    ("plotcom", '{"story": "甲<MASK>乙<MASK>", "plot": "丙"}', "found 2"),
    ("outgen", '{"title": "t", "outline": ["a#b"], "story": "s"}', "field 'outline'"),
    ("outgen", '{"title": "t", "outline": ["a"]}', "field 'story'"),
    ("nlpcc", '["not", "an", "object"]', "object"),
    ("nlpcc", '{"story": "s", "outline": ["a"]', ""),  # truncated JSON
    ("clozet", b'{"story": "\xff\xfe"}\n', ""),  # bad UTF-8
])
def test_bad_records_raise_with_file_and_line(tmp_path, task, bad_line, needle):
  good = {"clozet": GOOD_CLOZET,
          "senpos": '{"story": "甲[MASK]乙[MASK]丙", "sentence": "丁", "label": 1}',
          "plotcom": '{"story": "甲<MASK>乙", "plot": "丙"}',
          "outgen": '{"title": "t", "outline": ["a"], "story": "s"}',
          "nlpcc": '{"outline": ["a"], "story": "s"}'}[task]
  path = _file(tmp_path, [good, "", bad_line])
  with pytest.raises(DataError) as info:
    list(readers.read_file(task, path))
  assert f"{path}:3" in str(info.value) and needle in str(info.value)


def test_skip_mode_counts_bad_records_and_keeps_the_good_ones(tmp_path):
  path = _file(tmp_path, [GOOD_CLOZET, '{"story": "x", "plot0": "a", "plot1": "b", "label": "0"}',
                          GOOD_CLOZET])
  bad = BadRows()
  records = list(readers.read_file("clozet", path, on_bad_row="skip", bad=bad))
  assert len(records) == 2 and bad.count == 1 and f"{path}:2" in bad.messages[0]
