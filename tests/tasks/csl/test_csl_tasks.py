"""CSL SeqIO tasks: registration, real datasets from the official data, metrics."""

import re

import pytest
import seqio

import crosstask.tasks.csl as csl  # registers the CSL tasks and mixtures
from crosstask import paths
from crosstask.tasks.csl import schema as S
from crosstask.tasks.csl import scenarios
from crosstask.tasks.common import prompts
from crosstask.tasks.common import testing
from crosstask.tasks.csl import tasks as T

LENGTHS = {"inputs": 2048, "targets": 512}


def _rows(root, name):
  path = root / "csl" / "benchmark" / name / "dev.tsv"
  return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[:3]]


def _examples(task, n=3, split="validation"):
  vocab = task.output_features["targets"].vocabulary
  ds = task.get_dataset(LENGTHS, split=split, shuffle=False)
  return [(vocab.decode(ex["inputs"].tolist()), vocab.decode(ex["targets"].tolist()), ex)
          for ex in ds.take(n).as_numpy_iterator()]


def test_registration_counts_and_names():
  assert len(csl.TASKS) == len(set(csl.TASKS)) == 360 + 9  # 3 tasks x 3 prompt variants
  names = [n for n in csl.TASKS if prompts.split_variant(n)[1] is None]
  assert len(names) == 360
  assert sum(n.startswith("csl_zh_") for n in names) == 180 == 3**5 - 2 * 2**5 + 1
  regex = re.compile(r"^[\w\d\.\:_#]+$")
  assert all(regex.match(n) for n in names)
  for n in ("csl_zh_abstract_and_discipline_to_keywords", "csl_en_abstract_to_title_and_category",
            "csl_zh_abstract_to_title", "csl_en_title_and_abstract_and_keywords_and_category_to_discipline"):
    assert n in seqio.TaskRegistry.names()
  assert "csl_zh_abstract_to_abstract" not in seqio.TaskRegistry.names()
  assert len(csl.MIXTURES) == 28 + 3


def test_registration_reads_no_data(monkeypatch, tmp_path):
  monkeypatch.setenv(paths.DATA_DIR_ENV, str(tmp_path / "nowhere"))
  task = T.csl_task(["abstract"], ["abstract"], "zh", register=False)  # identity, on demand
  assert task.name == "csl_zh_abstract_to_abstract"
  with pytest.raises(FileNotFoundError, match=r"nowhere/csl/benchmark/ts/dev\.tsv"):
    task.get_dataset(LENGTHS, split="validation", shuffle=False)
  with pytest.raises(ValueError, match="overlap"):
    T.csl_task(["abstract", "title"], ["title"], "zh", register=False)


def test_summarization_dataset(official_data):
  task = seqio.get_mixture_or_task("csl_zh_abstract_to_title")
  rows = _rows(official_data, "ts")
  for (inputs, targets, ex), row in zip(_examples(task), rows):
    assert inputs == "摘要->标题 摘要：" + row[1]
    assert targets == row[2]
    assert ex["targets"][-1] == 1  # EOS


def test_keywords_dataset_en(official_data):
  task = seqio.get_mixture_or_task("csl_en_abstract_to_keywords")
  rows, ts = _rows(official_data, "kg"), _rows(official_data, "ts")
  for (inputs, targets, _), row, ts_row in zip(_examples(task), rows, ts):
    assert inputs == "Abstract -> Keywords Abstract: " + ts_row[1]
    assert targets == row[2]
    assert task.postprocess_fn(targets, is_target=True) == {"keywords": row[2].split("_")}


@pytest.mark.parametrize("name, tsv, prompt", [
    ("csl_zh_title_to_category", "cls_ctg", "标题->门类 标题："),
    ("csl_zh_abstract_to_discipline", "cls_dcp", "摘要->学科 摘要："),
])
def test_classification_datasets(official_data, name, tsv, prompt):
  task = seqio.get_mixture_or_task(name)
  for (inputs, targets, _), row in zip(_examples(task), _rows(official_data, tsv)):
    assert inputs == prompt + row[1] and targets == row[2]


def test_many_to_many_dataset_and_metrics(official_data):
  task = seqio.get_mixture_or_task("csl_zh_abstract_and_discipline_to_title_and_keywords")
  ts, kg, dcp = (_rows(official_data, n) for n in ("ts", "kg", "cls_dcp"))
  examples = _examples(task)
  for i, (inputs, targets, _) in enumerate(examples):
    assert inputs == f"摘要+学科->标题+关键词 摘要：{ts[i][1]}；学科：{dcp[i][2]}"
    assert targets == f"标题：{ts[i][2]}；关键词：{kg[i][2]}"
  targets = [task.postprocess_fn(t, is_target=True) for _, t, _ in examples]
  assert targets[0] == {"title": ts[0][2], "keywords": kg[0][2].split("_")}
  perfect = task.metric_fns[0](targets, targets)
  assert set(perfect) == {"title/rougeL", "title/bleu", "keywords/bpref", "keywords/keyword_f1",
                          "keywords/keyword_precision", "keywords/keyword_recall"}
  assert perfect["title/rougeL"] == pytest.approx(100, abs=1e-5)
  assert perfect["keywords/keyword_f1"] == pytest.approx(100)
  garbled = [task.postprocess_fn(p) for p in ("胡言乱语", f"关键词：{kg[1][2]}", "")]
  scores = task.metric_fns[0](targets, garbled)
  assert scores["title/rougeL"] < 50
  assert 0 < scores["keywords/keyword_f1"] < 100


def test_keyword_bpref_counts_the_empty_keywords_a_prediction_holds():
  # The official script splits a prediction on "_" and keeps the empty pieces, each a
  # non-relevant keyword: against 深度学习_神经网络, 深度学习__神经网络 scores
  # (1 + (1 - 1/3)) / 2 and _深度学习 scores 1 - 1/2. Dropped, both were 100.
  task = seqio.get_mixture_or_task("csl_zh_abstract_to_keywords")
  gold = task.postprocess_fn("深度学习_神经网络", is_target=True)
  assert gold == {"keywords": ["深度学习", "神经网络"]}
  for prediction, bpref in (("深度学习__神经网络", 100 * 5 / 6), ("_深度学习", 50.0),
                            ("深度学习_神经网络", 100.0), ("", 0.0)):
    scores = task.metric_fns[0]([gold], [task.postprocess_fn(prediction)])
    assert scores["bpref"] == pytest.approx(bpref), prediction
    # Exact-match F1 compares keyword sets, which hold no empty keyword.
    assert scores["keyword_f1"] == pytest.approx(
        {"": 0.0, "_深度学习": 100 * 2 / 3}.get(prediction, 100.0)), prediction


def test_classification_metrics_are_the_official_flavour(official_data):
  task = seqio.get_mixture_or_task("csl_zh_title_to_category")
  targets = [task.postprocess_fn(t, is_target=True) for _, t, _ in _examples(task, n=20)]
  gold = [t["category"] for t in targets]
  preds = [{"category": "工学"}] * len(targets)
  scores = task.metric_fns[0](targets, preds)
  assert scores["accuracy"] == pytest.approx(100 * gold.count("工学") / len(gold))
  # Free text is first mapped to a gold-set label (here: the first gold label).
  free = task.metric_fns[0](targets, [{"category": "某种工科"}] * len(targets))
  assert free["accuracy"] == pytest.approx(100 * gold.count(gold[0]) / len(gold))
  testing.assert_perfect_predictions_score_max(task, "validation", 20)
  testing.assert_prompt_format(task, "标题->门类")
  testing.assert_postprocess_total(task)


def test_scenario_mixtures_hold_table_3():
  for p in scenarios.PARTITIONS:
    meta, few = scenarios.partition_tasks(p)
    assert not set(meta) & set(few) and len(few) == 1
    for kind, names in (("meta", meta), ("few", few)):
      mix = seqio.get_mixture_or_task(scenarios.mixture_name(p, kind))
      assert sorted(t.name for t in mix.tasks) == sorted(names)
  assert scenarios.partition_tasks("2-1") == (
      ["csl_zh_abstract_to_keywords", "csl_zh_keywords_to_title", "csl_zh_title_to_category"],
      ["csl_zh_abstract_to_category"])
  assert scenarios.xtask_mixture("2-1", "few") == "csl_zh_xtask_2_1_few"
  assert scenarios.episode_split(3, "shots", 8) == "s3_k8"
  assert "s3_k8" in seqio.get_mixture_or_task(scenarios.xtask_mixture("2-1", "few")).splits
  with pytest.raises(ValueError, match="PARTITION"):
    scenarios.xtask_mixture("9-9")


def test_epoch_steps_count_the_episode(official_data):
  from crosstask.runtime.data import pipeline as data  # pylint: disable=g-import-not-at-top
  del official_data
  assert scenarios.split_size("2-1", "meta", "s0_meta") == 300
  meta = scenarios.mixture_name("2-1", "meta")
  assert data.epoch_steps(meta, "s0_meta", batch_size=32, epochs=15) == 15 * 10
  few = scenarios.split_size("2-1", "few", "s0_k1")  # one per category present in the pool
  assert 10 <= few <= 13
  few_mixture = scenarios.mixture_name("2-1", "few")
  assert data.epoch_steps(few_mixture, "s0_k1", batch_size=1, epochs=15) == 15 * few
  assert data.epoch_steps(few_mixture, "s0_k0", batch_size=1, epochs=15) == 0  # k=0 trains none


def test_field_constants():
  assert len(S.CATEGORIES) == 13 and len(S.DISCIPLINES) == 67


def test_full_dataset_split_on_sample(monkeypatch):
  monkeypatch.delenv(paths.DATA_DIR_ENV, raising=False)
  task = seqio.get_mixture_or_task("csl_en_title_to_category_and_discipline")
  examples = list(task.get_dataset(LENGTHS, split="full", shuffle=False).as_numpy_iterator())
  assert len(examples) == 130
  parsed = task.postprocess_fn(examples[0]["targets_pretokenized"].decode(), is_target=True)
  assert parsed["category"] in S.CATEGORIES and parsed["discipline"] in S.DISCIPLINES
  with pytest.raises(ValueError, match="unknown CSL split"):
    task.get_dataset(LENGTHS, split="s0_k3x", shuffle=False)


def test_training_order_is_shuffled_reproducibly_and_loses_nothing():
  task = T.csl_task(["abstract"], ["title"], "zh")

  def titles(**kw):
    ds = task.get_dataset(LENGTHS, split="train", **kw)
    return [ex["targets_pretokenized"].decode() for ex in ds.as_numpy_iterator()]

  with paths.use_data_dir(paths.SAMPLE_DIR):
    in_file_order = titles(shuffle=False)
    first, again, other = titles(seed=7), titles(seed=7), titles(seed=8)
  assert first == again
  assert first != in_file_order and first != other
  assert sorted(first) == sorted(in_file_order)


def test_title_rouge_l_wordpiece_splits_with_the_official_vocab_in_the_data_root(tmp_path):
  # The CSL README scores with UER-py's google_zh_with_sentinel_vocab.txt: "lyapunov"
  # becomes ly ##ap ##uno ##v there, and "lyab" ly ##ab, which share a piece.
  (tmp_path / "vocab").mkdir()
  (tmp_path / S.OFFICIAL_VOCAB).write_text(
      "\n".join(["[UNK]", "函", "数", "ly", "##ap", "##uno", "##v", "##ab"]) + "\n",
      encoding="utf-8")
  targets, predictions = ["lyapunov函数"], ["lyab函数"]
  with paths.use_data_dir(tmp_path / "elsewhere"):
    assert S.official_vocab() is None
    whole = S.text_metrics(targets, predictions)["rougeL"]
  with paths.use_data_dir(tmp_path):
    assert S.official_vocab() == str(tmp_path / S.OFFICIAL_VOCAB)
    pieces = S.text_metrics(targets, predictions)["rougeL"]
  # Whole words: LCS 函 数 of 3 and 3 tokens, F 2/3. Pieces: LCS ly 函 数, R 3/6, P 3/4,
  # F = 2PR / (P + R) = 0.6.
  assert whole == pytest.approx(100 * 2 / 3, abs=1e-4)
  assert pieces == pytest.approx(60.0, abs=1e-4)


def test_a_prompt_of_your_own_over_csl_fields(monkeypatch):
  # The README's way to a CSL task could only return the registered arrow-prompt tasks: a
  # new prompt took the module's internals (read_split, SPLIT_FILES, the schema).
  monkeypatch.delenv(paths.DATA_DIR_ENV, raising=False)
  own = T.csl_task(["title"], ["category"], prompt="这篇论文属于哪个门类？",
                   name="csl_test_own_title_to_category")
  assert seqio.get_mixture_or_task("csl_test_own_title_to_category") is own
  paper = seqio.get_mixture_or_task("csl_zh_title_to_category")
  (got_in, got_out, _), = _examples(own, 1)
  (want_in, want_out, _), = _examples(paper, 1)
  assert got_out == want_out and want_in.startswith("标题->门类 ")
  assert got_in == "这篇论文属于哪个门类？ " + want_in[len("标题->门类 "):]
  assert list(map(repr, own.metric_fns)) == list(map(repr, paper.metric_fns))
  assert own.splits == paper.splits
  with pytest.raises(ValueError, match="a prompt of your own needs a task name of your own"):
    T.csl_task(["title"], ["category"], prompt="?")
  with pytest.raises(ValueError, match=r"name= names a task with a prompt of your own"):
    T.csl_task(["title"], ["category"], name="csl_test_unprompted")
