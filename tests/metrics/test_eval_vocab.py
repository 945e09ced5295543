"""Vocabularies and the vocabulary trainer, on real text and the real Chinese model."""

import functools
import pathlib
import re
import subprocess
import sys

import pytest
import sentencepiece as spm
import seqio
import tensorflow as tf

import runtime_subprocess as rs
from crosstask import vocabularies
from crosstask.tasks import train_vocab

ZH = [
    "深度学习在图像识别中的应用研究", "基于卷积神经网络的遥感影像分类方法",
    "水运工程施工项目全过程管理的有效性探索", "补肾活血汤对老年高血压患者的影响",
    "一种基于平方和优化的飞行器控制器设计方法", "城市轨道交通客流预测模型研究",
    "土壤重金属污染的空间分布特征分析", "高校思想政治教育的创新路径探讨",
    "机器翻译中的注意力机制研究", "新型冠状病毒肺炎的临床特征分析",
    "基于深度学习的中文文本分类", "农作物病虫害智能识别系统设计",
]
EN = [
    "Deep learning for image recognition.", "A survey of neural machine translation.",
    "Graph neural networks for molecules.", "Pretraining text to text transformers.",
    "Keyword generation for scientific papers.", "Summarizing abstracts into titles.",
]
TASK = "test_eval_vocab_tiny"


def _source(split, shuffle_files):
  del split, shuffle_files
  rows = ZH * 3 + EN * 3
  return tf.data.Dataset.from_tensor_slices(
      {"text": rows, "title": [r[:6] for r in rows]})


def _to_text2text(ds):
  # Runs before tokenize: its output is what the vocabulary must be trained on.
  return ds.map(lambda ex: {"inputs": tf.strings.join(["标题: ", ex["text"]]),
                            "targets": ex["title"]})


@pytest.fixture(scope="module")
def tiny_task():
  vocab = vocabularies.byte_vocabulary()
  seqio.TaskRegistry.remove(TASK)
  seqio.TaskRegistry.add(
      TASK,
      source=seqio.FunctionDataSource(_source, splits=["train"]),
      preprocessors=[_to_text2text, seqio.preprocessors.tokenize,
                     seqio.preprocessors.append_eos],
      output_features={"inputs": seqio.Feature(vocab), "targets": seqio.Feature(vocab)})
  yield TASK
  seqio.TaskRegistry.remove(TASK)


def _check_t5_layout(path, pieces, extra_ids):
  raw = spm.SentencePieceProcessor(model_file=path)
  assert raw.get_piece_size() == pieces
  assert [raw.id_to_piece(i) for i in range(3)] == ["<pad>", "</s>", "<unk>"]
  assert raw.bos_id() == -1 and vocabularies.builtin_sentinels(path) == 0
  vocab = vocabularies.sentencepiece_vocabulary(path, extra_ids=extra_ids)
  assert (vocab.pad_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2)
  assert vocab.vocab_size == pieces + extra_ids
  # Sentinels sit at the top, <extra_id_0> highest (T5 convention).
  assert vocab.decode_tf(tf.constant([pieces + extra_ids - 1])).numpy().decode() == (
      "<extra_id_0>")
  # Byte fallback: a character never seen in training round-trips as bytes.
  unseen = "龘"
  ids = vocab.encode(unseen)
  assert 2 not in ids and len(ids) >= 3
  assert vocab.decode(ids) == unseen
  return vocab


def test_pre_tokenize_steps_stop_at_tokenize(tiny_task):
  task = seqio.get_mixture_or_task(tiny_task)
  assert train_vocab.pre_tokenize_steps(task) == [_to_text2text]
  partial_task = functools.partial(seqio.preprocessors.tokenize, copy_pretokenized=False)
  assert train_vocab._is_tokenize_step(partial_task)
  texts = list(train_vocab.task_texts(tiny_task, "train"))
  assert len(texts) == 2 * (3 * len(ZH) + 3 * len(EN))
  assert texts[0] == "标题: " + ZH[0] and texts[1] == ZH[0][:6]


def test_train_from_task_through_main(tiny_task, tmp_path):
  path = train_vocab.main([f"--task={tiny_task}", "--split=train", "--vocab_size=450",
                           "--extra_ids=10", f"--output={tmp_path / 'sp'}"])
  vocab = _check_t5_layout(path, pieces=450, extra_ids=10)
  text = "深度学习的图像识别研究"
  assert vocab.decode(vocab.encode(text)) == text
  # The task text was learned: a common Chinese character is one piece, not bytes.
  assert len(vocab.encode("学")) <= 2


def test_unknown_task_lists_close_matches(tiny_task):
  with pytest.raises(ValueError, match="did you mean test_eval_vocab_tiny"):
    train_vocab.get_task("test_eval_vocab_tiyn")
  with pytest.raises(ValueError, match="has no split 'dev'"):
    list(train_vocab.task_texts(tiny_task, "dev"))


@pytest.mark.slow
def test_train_from_text_file_as_subprocess(tmp_path):
  text_file = tmp_path / "corpus.txt"
  text_file.write_text("\n".join(ZH * 2 + EN * 2) + "\n", encoding="utf-8")
  env = rs.env()  # TensorFlow's log level as a user leaves it: unset
  result = subprocess.run(
      [sys.executable, "-m", "crosstask.tasks.train_vocab", f"--text_file={text_file}",
       "--vocab_size=440", "--extra_ids=4", "--max_sentences=30",
       f"--output={tmp_path / 'out' / 'zh'}"],
      capture_output=True, text=True, env=env, timeout=300, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  assert "extra_ids=4" in result.stdout
  assert not rs.noise_in(result.stdout + result.stderr), result.stderr[-2000:]
  _check_t5_layout(str(tmp_path / "out" / "zh.model"), pieces=440, extra_ids=4)

  missing = subprocess.run(
      [sys.executable, "-m", "crosstask.tasks.train_vocab", "--text_file=/nonexistent.txt",
       f"--output={tmp_path / 'x'}"], capture_output=True, text=True, env=env,
      timeout=300, check=False)
  assert missing.returncode != 0 and "error: --text_file '/nonexistent.txt'" in missing.stderr
  assert "Traceback" not in missing.stderr


def test_the_same_text_trains_the_same_model_file_wherever_it_is_written(tmp_path):
  """A task's fingerprint hashes its vocabulary's bytes: a vocabulary trained again into
  another folder (another `make demo` output directory) must be the same file."""
  from crosstask.runtime.predict import fingerprint  # pylint: disable=g-import-not-at-top
  a, b = (train_vocab.train(ZH * 3 + EN * 3, str(tmp_path / folder / "sp"), vocab_size=450)
          for folder in ("one", "two/deeper"))
  assert pathlib.Path(a).read_bytes() == pathlib.Path(b).read_bytes()
  assert (fingerprint.describe_vocabulary(seqio.SentencePieceVocabulary(a))
          == fingerprint.describe_vocabulary(seqio.SentencePieceVocabulary(b)))
  _check_t5_layout(a, pieces=450, extra_ids=4)  # the file still reads as T5X reads it


def test_a_vocabulary_larger_than_the_text_allows_names_the_flag_and_the_most_it_can_be(
    tmp_path):
  # SentencePiece's own words come with its C++ source line ("INTERNAL: src/trainer_
  # interface.cc(744) [(trainer_spec_.vocab_size()) == ...]").
  with pytest.raises(ValueError) as raised:
    train_vocab.train(["hello world", "foo bar baz"], str(tmp_path / "sp"), vocab_size=8000)
  message = str(raised.value)
  assert re.fullmatch(r"--vocab_size=8000 is more pieces than this text yields: at most "
                      r"\d+ here .*Give a smaller --vocab_size, or more text .*", message)
  assert "src/" not in message and "INTERNAL" not in message
  with pytest.raises(ValueError, match=r"^SentencePiece could not train: Vocabulary size is "
                     r"smaller than required_chars"):
    train_vocab.train(["hello world", "foo bar baz"], str(tmp_path / "sp"), vocab_size=100,
                      model_type="bpe")


def test_vocabularies_are_named_objects_that_gin_does_not_change(tmp_path):
  import gin  # pylint: disable=g-import-not-at-top
  assert isinstance(vocabularies.get(), seqio.ByteVocabulary)
  assert vocabularies.get("byte").encode("中") == [228 + 3, 184 + 3, 173 + 3]
  assert vocabularies.get(None) is vocabularies.get("bytes")
  with pytest.raises(FileNotFoundError, match="nope.model"):
    vocabularies.get(tmp_path / "nope.model")
  path = train_vocab.train(ZH * 3 + EN * 3, str(tmp_path / "sp"), vocab_size=450)
  sp = vocabularies.get(path)
  assert sp is vocabularies.get(pathlib.Path(path)) and sp.vocab_size == 450
  assert vocabularies.task_name("csl_zh_abstract_to_title", sp) == "csl_zh_abstract_to_title.sp"
  assert vocabularies.task_name("csl_zh_abstract_to_title.sp", vocabularies.get()) == (
      "csl_zh_abstract_to_title")
  # The model's gin binding (as the model gin files write it) gives the same object, and
  # binding it changes no vocabulary.
  before = vocabularies.get()
  try:
    with gin.unlock_config():
      gin.parse_config("from __gin__ import dynamic_registration\n"
                       "from crosstask import vocabularies\n"
                       f"vocabularies.model_vocabulary.path = {str(path)!r}\n"
                       "VOCABULARY = @vocabularies.model_vocabulary()\n")
    assert gin.query_parameter("%VOCABULARY").scoped_configurable_fn() is sp
    assert vocabularies.get() is before and before.vocab_size == 259
  finally:
    gin.clear_config()
  assert vocabularies.model_vocabulary() is before


def test_real_chinese_sentencepiece_round_trip(official_data):
  path = official_data / "vocab/sentencepiece_cn.model"
  vocab = vocabularies.get(path)
  assert isinstance(vocab, seqio.SentencePieceVocabulary)
  assert (vocab.pad_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2)
  assert vocab.vocab_size == 32596
  text = "采用修正的Rodrigues参数(MRP),建立了飞行器姿态控制系统的数学模型"
  ids = vocab.encode(text)
  assert len(ids) < len(text) and 2 not in ids  # real pieces, nothing unknown
  assert vocab.decode(ids) == text
  # Its 100 sentinels are built in at the top; adding more is a clear error.
  assert vocabularies.builtin_sentinels(str(path)) == 100
  assert vocab.tokenizer.id_to_piece(32595) == "\u2581<extra_id_0>"
  with pytest.raises(ValueError, match="already holds 100 <extra_id_N>"):
    vocabularies.sentencepiece_vocabulary(str(path), extra_ids=100)
