"""CLUE/FewCLUE readers: counts on the real files, every fixture format, and quirks."""

import collections
import json

import pytest

from crosstask import paths
from crosstask.tasks.clue import labels as L
from crosstask.tasks.clue import readers as RD

SAMPLE = paths.SAMPLE_DIR

# The spec's §4.1 counts of the FewCLUE files (train_k, dev_k, train_few_all, dev_few_all).
FEWCLUE_COUNTS = {
    "eprstmt": (32, 32, 160, 160), "csldcp": (536, 536, 2036, 2068),
    "tnews": (240, 240, 1185, 1098), "iflytek": (928, 690, 3024, 1373),
    "ocnli": (32, 32, 160, 160), "bustm": (32, 32, 160, 160), "chid": (42, 42, 202, 202),
    "csl": (32, 32, 160, 160), "cluewsc": (32, 32, 160, 159),
}


def test_clue_counts_on_the_real_files(official_data):
  afqmc = RD.read_all("clue", "afqmc", "validation", root=official_data)
  assert len(afqmc) == 4316
  assert collections.Counter(r["label"] for r in afqmc) == {"0": 2978, "1": 1338}
  assert afqmc[5]["id"] == 5  # no id in the file: the record's position
  cmrc = RD.read_all("clue", "cmrc2018", "validation", root=official_data)
  assert len(cmrc) == 3219 and len({r["context"] for r in cmrc}) == 848
  assert all(len(r["answers"]) == 3 for r in cmrc) and cmrc[0]["id"] == "DEV_0_QUERY_0"
  train = RD.read_all("clue", "c3", "train", root=official_data)  # nlpdata's c3-*-train.json
  dev = RD.read_all("clue", "c3", "validation", root=official_data)
  assert len(train) == 11869 and len(dev) == 3816
  assert collections.Counter(r["kind"] for r in train) == {"d": 5856, "m": 6013}
  assert collections.Counter(r["kind"] for r in dev) == {"d": 1825, "m": 1991}
  assert {len(r["choice"]) for r in train + dev} == {2, 3, 4}
  repeated = [r for r in train if r["choice"].count(r["choice"][r["answer"]]) > 1]
  # The answer itself repeated (the spec names only m7-65): scored as the first equal option.
  assert [(r["id"], r["answer"]) for r in repeated] == [("51-157/0", 1), ("m7-65/1", 2)]


def test_clue_format_samples(official_data):
  samples = official_data / "clue" / "format_samples"
  chid = {s: RD.read_all("clue", "chid", s, folder=samples / "chid")
          for s in ("train", "validation", "test")}
  assert chid["train"][0]["tag"] == "#idiom000000#" and chid["train"][0]["answer"] == 3
  assert chid["validation"][0]["tag"] == "#idiom577157#" and chid["validation"][0]["answer"] == 5
  assert chid["test"][0]["tag"] == "#idiom600168#" and chid["test"][0]["answer"] is None
  for split, blanks in chid.items():  # one record per blank; all share the line's candidates
    assert len({b["tag"] for b in blanks}) == len(blanks) and all(
        len(b["candidates"]) == 10 and b["tag"] in b["content"] for b in blanks), split
  cmnli = RD.read_all("clue", "cmnli", "train", folder=samples / "cmnli")
  assert cmnli == [{"id": 0, "sentence1": "从概念上讲，奶油略读有两个基本维度-产品和地理。",
                    "sentence2": "产品和地理位置是使奶油撇油起作用的原因。", "label": "neutral"}]
  assert RD.read_all("clue", "cmnli", "test", folder=samples / "cmnli")[0]["label"] is None
  diag = RD.read_all("clue", "diagnostics", "test", folder=samples / "diagnostics")
  assert diag == [{"id": 1, "sentence1": "李四正在比赛。", "sentence2": "李四将要比赛。", "label": None}]


@pytest.mark.parametrize("task", sorted(FEWCLUE_COUNTS))
def test_every_fewclue_file(official_data, task):
  train_k, dev_k, train_all, dev_all = FEWCLUE_COUNTS[task]
  for k in range(5):
    assert len(RD.read_all("fewclue", task, f"train_{k}", root=official_data)) == train_k
    assert len(RD.read_all("fewclue", task, f"dev_{k}", root=official_data)) == dev_k
  train = RD.read_all("fewclue", task, "train", root=official_data)  # alias of train_few_all
  dev = RD.read_all("fewclue", task, "validation", root=official_data)
  assert (len(train), len(dev)) == (train_all, dev_all)
  kind = RD.FEWCLUE_TASKS[task].kind
  key = "answer" if kind == "chid" else "label"
  assert all(r[key] is not None for r in train + dev)
  if kind in L.LABELS:  # labels are the string ids the label maps know
    assert all(r["label"] in L.LABELS[kind] for r in train + dev)


def test_fewclue_label_quirks(official_data):
  tnews = RD.read_all("fewclue", "tnews", "train_0", root=official_data)
  assert tnews[0]["label"] == "102" and tnews[0]["id"] == 5890  # int label in the file
  iflytek = RD.read_all("fewclue", "iflytek", "train_0", root=official_data)
  assert iflytek[0]["label"] == "8" and L.LABELS["iflytek"]["8"] == "公共交通"
  # Every record's label_desc / label_des agreed with the id (the reader checks it);
  # the 119 IFLYTEK names match the official file's mapping.
  text = (official_data / "fewclue" / "iflytek" / "label_id2des_desc2short.py").read_text("utf-8")
  assert all(f'"{name}":{i},' in text for i, name in enumerate(L.IFLYTEK_NAMES))
  zh = [line for line in (official_data / "fewclue" / "tnews" / "label_index2en2zh.json")
        .read_text("utf-8").splitlines() if line.strip()]
  assert len(zh) == 15 and all(f'"label_zh":"{L.TNEWS[i][1]}"' in line and
                               f'"{L.TNEWS[i][0]}"' in line for i, line in zip(L.TNEWS, zh))
  disciplines = (official_data / "fewclue" / "csldcp" / "labels_all.txt").read_text("utf-8").split()
  assert sorted(disciplines) == sorted(L.LABELS["csldcp"])
  wsc = RD.read_all("fewclue", "cluewsc", "dev_0", root=official_data)
  assert all(r["text"][r["span2_index"]:].startswith(r["span2_text"]) for r in wsc)
  chid = RD.read_all("fewclue", "chid", "train_0", root=official_data)
  assert all(r["tag"] == "#idiom#" and len(r["candidates"]) == 7 for r in chid)


def test_every_fixture_split_reads():
  """The bundled fixtures cover every split of every task except FewCLUE's k = 1..4."""
  for benchmark, tasks in RD.TASKS.items():
    for task in tasks:
      for split in RD.splits(benchmark, task):
        if split[-1] in "1234" or (task == "cluewsc" and split == "unlabeled"):
          continue
        records = RD.read_all(benchmark, task, split, root=SAMPLE)
        assert records, (benchmark, task, split)
        labelled = RD.is_labelled(RD.FEW_ALIASES.get(split, split))
        key = "answer" if RD.task_spec(benchmark, task).kind in ("chid", "c3") else "label"
        if RD.task_spec(benchmark, task).kind == "cmrc":
          assert all(bool(r["answers"]) == labelled for r in records)
        elif task != "diagnostics":
          assert all((r[key] is not None) == labelled for r in records), (task, split)


def test_fixture_quirks():
  # '-' rows leave NLI train/dev; C3 reads both releases' file names.
  assert [r["label"] for r in RD.read_all("clue", "cmnli", "train", root=SAMPLE)] == [
      "entailment", "contradiction", "neutral"]
  assert [r["label"] for r in RD.read_all("clue", "ocnli", "train", root=SAMPLE)] == [
      "entailment", "contradiction", "neutral"]
  assert RD.split_files("clue", "c3", "train", SAMPLE / "clue" / "c3")[0].name == "d-train.json"
  assert RD.split_files("clue", "c3", "test_public", SAMPLE / "clue" / "c3")[0].name == (
      "c3-d-test.json")
  c3_test = RD.read_all("clue", "c3", "test", root=SAMPLE)
  assert [r["id"] for r in c3_test] == [0, 10, 11] and [r["kind"] for r in c3_test] == ["d", "m", "m"]
  chid = RD.read_all("clue", "chid", "validation", root=SAMPLE)
  assert [(b["line_id"], b["tag"], b["answer"]) for b in chid] == [
      (0, "#idiom577157#", 7), (0, "#idiom577158#", 9), (0, "#idiom577159#", 8),
      (1, "#idiom577160#", 3)]
  assert RD.read_all("fewclue", "tnews", "test", root=SAMPLE)[0]["id"] == "0"  # str ids
  assert RD.read_all("fewclue", "cluewsc", "test", root=SAMPLE)[0]["id"] == 0  # `id`, not `idx`
  with pytest.raises(ValueError, match="no split 'test_1_0'"):
    RD.split_files("clue", "afqmc", "test_1_0")
  with pytest.raises(FileNotFoundError, match=r"d-train.json\+.*m-train.json or .*c3-d-train"):
    RD.split_files("clue", "c3", "train", SAMPLE / "nowhere")


# ------------------------------------------------------------------ bad input: file:line


def _write(tmp_path, rel, text):
  path = tmp_path / rel
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(text, encoding="utf-8")
  return path


def test_bad_json_line_names_file_and_line(tmp_path):
  path = _write(tmp_path, "clue/afqmc/dev.json",
                '{"sentence1": "a", "sentence2": "b", "label": "0"}\n{"sentence1": "a",\n')
  with pytest.raises(RD.R.DataError, match=rf"{path}:2: invalid JSON"):
    RD.read_all("clue", "afqmc", "validation", root=tmp_path)
  bad = RD.R.BadRows()
  assert len(RD.read_all("clue", "afqmc", "validation", root=tmp_path, on_bad_row="skip",
                         bad=bad)) == 1 and bad.count == 1


def test_unknown_label_names_file_line_and_field(tmp_path):
  path = _write(tmp_path, "fewclue/bustm/train_0.json",
                '{"id": 0, "sentence1": "a", "sentence2": "b", "label": "1"}\n'
                '{"id": 1, "sentence1": "a", "sentence2": "b", "label": "2"}\n')
  with pytest.raises(RD.R.DataError, match=rf"{path}:2: field 'label': unknown label '2'"):
    RD.read_all("fewclue", "bustm", "train_0", root=tmp_path)


def test_label_description_must_match_the_id(tmp_path):
  path = _write(tmp_path, "clue/tnews/train.json",
                '{"label": "108", "label_desc": "news_car", "sentence": "x", "keywords": ""}\n')
  with pytest.raises(RD.R.DataError, match=rf"{path}:1: field 'label_desc'.*news_edu"):
    RD.read_all("clue", "tnews", "train", root=tmp_path)
  path = _write(tmp_path, "fewclue/iflytek/dev_0.json",
                '{"label": 8, "label_des": "打车", "sentence": "x", "id": 3}\n')
  with pytest.raises(RD.R.DataError, match=rf"{path}:1: field 'label_des'.*公共交通"):
    RD.read_all("fewclue", "iflytek", "dev_0", root=tmp_path)


def test_missing_field_names_it(tmp_path):
  path = _write(tmp_path, "fewclue/eprstmt/test_public.json",
                '{"id": 0, "sentence": "好", "label": "Positive"}\n{"id": 1, "label": "Negative"}\n')
  with pytest.raises(RD.R.DataError, match=rf"{path}:2: missing field\(s\) 'sentence'"):
    RD.read_all("fewclue", "eprstmt", "test_public", root=tmp_path)


def test_chid_blank_without_answer_names_the_answer_file(tmp_path):
  path = _write(tmp_path, "clue/chid/dev.json",
                '{"candidates": ["甲", "乙"], "content": ["一#idiom000001#二"]}\n')
  answers = _write(tmp_path, "clue/chid/dev_answer.json", '{"#idiom000002#": 0}')
  with pytest.raises(RD.R.DataError, match=rf"{path}:1: field 'content\[0\]': blank "
                     rf"#idiom000001# has no answer in {answers}"):
    RD.read_all("clue", "chid", "validation", root=tmp_path)
  answers.unlink()
  with pytest.raises(FileNotFoundError, match="ChID answer file"):
    RD.read_all("clue", "chid", "validation", root=tmp_path)


def test_c3_test_file_takes_each_documents_genre_from_its_lines(tmp_path, official_data):
  # CLUE's C3 test is one file, and its doc ids do not say the genre (the README's
  # dialogue is "25-35"; nlpdata's d-dev has 80 ids starting with 'm'): every official
  # dev document, in one test file, gets the genre its own file gives it.
  docs = []
  for genre in ("d", "m"):
    for doc in json.loads((official_data / "clue/c3" / f"c3-{genre}-dev.json").read_text(
        encoding="utf-8")):
      docs.append((genre, [doc[0], [{k: v for k, v in q.items() if k != "answer"}
                                    for q in doc[1]], doc[2]]))
  _write(tmp_path, "clue/c3/test.json", json.dumps([d for _, d in docs], ensure_ascii=False))
  got = RD.read_all("clue", "c3", "test", root=tmp_path)
  want = [genre for genre, doc in docs for _ in doc[1]]
  assert [r["kind"] for r in got] == want and collections.Counter(want) == {"d": 1825, "m": 1991}
  assert RD.c3_genre(["男：你好。", "女：你好！"]) == "d"
  assert RD.c3_genre(["男：你好。"]) == "m"  # one line: a notice, not a dialogue


def test_c3_answer_must_be_an_option(tmp_path):
  path = _write(tmp_path, "clue/c3/d-dev.json",
                '[[["男：你好"], [{"question": "q", "choice": ["甲", "乙"], "answer": "丙"}], "d1"]]')
  _write(tmp_path, "clue/c3/m-dev.json", "[]")
  with pytest.raises(RD.R.DataError, match=rf"{path}\[record 0\] question 0: field 'answer'"):
    RD.read_all("clue", "c3", "validation", root=tmp_path)


def test_wsc_span_must_occur_in_the_text(tmp_path):
  path = _write(tmp_path, "clue/cluewsc2020/dev.json",
                '{"target": {"span1_index": 0, "span1_text": "猫", "span2_index": 3, '
                '"span2_text": "它"}, "idx": 0, "label": "true", "text": "小狗跑了，它很快。"}\n')
  with pytest.raises(RD.R.DataError, match=rf"{path}:1: field 'target.span1_text'"):
    RD.read_all("clue", "cluewsc2020", "validation", root=tmp_path)


def test_cmrc_question_without_reference(tmp_path):
  path = _write(tmp_path, "clue/cmrc2018/dev.json",
                '{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "Q1", '
                '"question": "q", "answers": []}]}]}]}')
  with pytest.raises(RD.R.DataError, match=rf"{path}\[data 0/paragraph 0/qa 0 id=Q1\]: "
                     "field 'answers'"):
    RD.read_all("clue", "cmrc2018", "validation", root=tmp_path)


def test_unlabelled_files_tolerate_placeholder_labels(tmp_path):
  _write(tmp_path, "fewclue/ocnli/test.json",
         '{"sentence1": "a", "sentence2": "b", "label": "-", "id": 0}\n'
         '{"sentence1": "a", "sentence2": "b", "label": "", "id": 1}\n'
         '{"sentence1": "a", "sentence2": "b", "id": 2}\n')
  assert [r["label"] for r in RD.read_all("fewclue", "ocnli", "test", root=tmp_path)] == [None] * 3
  _write(tmp_path, "fewclue/chid/unlabeled.json",
         '{"id": 5, "candidates": ["甲", "乙"], "content": "一#idiom#二", "answer": -1}\n')
  assert RD.read_all("fewclue", "chid", "unlabeled", root=tmp_path)[0]["answer"] is None


def test_cmrc_question_with_empty_text_is_kept(tmp_path):
  # The official trial file's shape: SQuAD-style, two of its questions have text "".
  _write(tmp_path, "clue/cmrc2018/trial.json", json.dumps({"version": "v1.0", "data": [
      {"id": "TRIAL_20", "title": "那须盐原市", "paragraphs": [{"id": "TRIAL_20", "context":
          "那须盐原市（）是位于日本栃木县北部的城市。", "qas": [
              {"question": "", "id": "TRIAL_20_QUERY_0",
               "answers": [{"text": "那须盐原市", "answer_start": 0}]},
              {"question": "那须盐原市位于哪个县？", "id": "TRIAL_20_QUERY_1",
               "answers": [{"text": "栃木县", "answer_start": 13}]}]}]}]}, ensure_ascii=False))
  records = RD.read_all("clue", "cmrc2018", "trial", root=tmp_path)
  assert [(r["id"], r["question"]) for r in records] == [
      ("TRIAL_20_QUERY_0", ""), ("TRIAL_20_QUERY_1", "那须盐原市位于哪个县？")]
  assert records[0]["answers"] == ["那须盐原市"]


def test_cmrc_passage_must_not_be_empty(tmp_path):
  path = _write(tmp_path, "clue/cmrc2018/dev.json",
                '{"data": [{"paragraphs": [{"context": " ", "qas": [{"id": "Q1", '
                '"question": "q", "answers": [{"text": "a", "answer_start": 0}]}]}]}]}')
  with pytest.raises(RD.R.DataError, match=rf"{path}\[data 0/paragraph 0/qa 0 id=Q1\]: "
                     "field 'context'"):
    RD.read_all("clue", "cmrc2018", "validation", root=tmp_path)


def test_cmrc_official_trial_file_reads_every_question(official_data):
  folder = official_data / "clue" / "cmrc2018"
  if not any((folder / name).is_file() for name in ("trial.json", "cmrc2018_trial.json")):
    pytest.skip(f"no CMRC 2018 trial file in {folder}")
  records = RD.read_all("clue", "cmrc2018", "trial", root=official_data)
  assert len(records) == 1002  # what the official cmrc2018_evaluate.py scores
  empty = [r["id"] for r in records if not r["question"].strip()]
  assert sorted(empty) == ["TRIAL_20_QUERY_0", "TRIAL_776_QUERY_4"]
