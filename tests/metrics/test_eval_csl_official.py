"""CSL's official scorer flavour equals independent implementations on the real CSL dev data."""

import random
import re
import unicodedata

import numpy as np
import pytest

from crosstask import metrics as ev
from crosstask.metrics import csl_official as off
from crosstask.metrics import pypi_rouge


def _independent_tokens(text, uer=False):
  """BERT BasicTokenizer as HF `tokenizers` implements it (Rust), uncased; `uer`: with
  UER-py's `_clean_text` (transcribed: drops NUL, U+FFFD, Cc and Cf; whitespace to a
  space) in place of HF's, which drops every C* category."""
  from tokenizers.normalizers import BertNormalizer  # pylint: disable=g-import-not-at-top
  from tokenizers.pre_tokenizers import BertPreTokenizer  # pylint: disable=g-import-not-at-top
  if uer:
    text = "".join(
        " " if c in " \t\n\r" or unicodedata.category(c) == "Zs" else c for c in text
        if not (ord(c) in (0, 0xFFFD) or (c not in "\t\n\r"
                                          and unicodedata.category(c) in ("Cc", "Cf"))))
  normalized = BertNormalizer(clean_text=not uer, handle_chinese_chars=True,
                              strip_accents=None, lowercase=True).normalize_str(text)
  return [t for t, _ in BertPreTokenizer().pre_tokenize_str(normalized)]


def _lcs_tokens(x, y):
  """Tokens of the LCS of x and y, backtracking as the official `rouge` package does."""
  t = np.zeros((len(x) + 1, len(y) + 1), dtype=int)
  for i in range(1, len(x) + 1):
    for j in range(1, len(y) + 1):
      t[i, j] = t[i - 1, j - 1] + 1 if x[i - 1] == y[j - 1] else max(t[i - 1, j], t[i, j - 1])
  out, i, j = [], len(x), len(y)
  while i and j:
    if x[i - 1] == y[j - 1]:
      out.append(x[i - 1])
      i, j = i - 1, j - 1
    elif t[i - 1, j] > t[i, j - 1]:
      i -= 1
    else:
      j -= 1
  return out


def _independent_rouge_l(hyp, ref):
  """Summary-level ROUGE-L of `rouge` 1.0.1: '.'-sentences, union LCS, unique tokens."""
  sents = lambda s: [" ".join(p.split()) for p in s.split(".") if p]  # noqa: E731
  hs, rs = sents(hyp), sents(ref)
  if not hs or not rs:
    raise ValueError("empty")
  n = len({w for s in hs for w in s.split(" ")})
  m = len({w for s in rs for w in s.split(" ")})
  union, total = set(), 0
  for r in rs:
    before = len(union)
    for h in hs:
      union |= set(_lcs_tokens(r.split(" "), h.split(" ")))
    total += len(union) - before
  p, r = total / n, total / m
  return 2.0 * (p * r / (p + r + 1e-8))


@pytest.fixture
def dev(official_data):
  """Dev records from the TSVs directly (the CSL task package would pull in TensorFlow)."""
  from crosstask.tasks.common import readers  # pylint: disable=g-import-not-at-top
  bench = official_data / "csl" / "benchmark"
  ts = [r.value for r in readers.read_tsv(bench / "ts" / "dev.tsv", 3)]
  dcp = [r.value for r in readers.read_tsv(bench / "cls_dcp" / "dev.tsv", 3)]
  return [{"abstract": a[1], "title": a[2], "discipline": d[2]} for a, d in zip(ts, dcp)]


def test_tokenizer_is_bert_basic(dev):
  texts = [r["title"] for r in dev] + [r["abstract"] for r in dev[:300]]
  texts += ["Café ＡＢＣ 52.645m\u00a0x\u200b,y", "采用修正的Rodrigues参数(MRP)"]
  for text in texts:
    assert off.bert_basic_tokens(text) == _independent_tokens(text, uer=True), text
  # Three dev abstracts hold private-use characters, which UER keeps and HF drops.
  assert sum(_independent_tokens(t) != _independent_tokens(t, uer=True) for t in texts) >= 1


def test_rouge_l_equals_the_official_definition(dev):
  targets = [r["title"] for r in dev]
  predictions = [re.split("[，。；]", r["abstract"])[0][:24] for r in dev]  # a lead baseline
  predictions[3], predictions[4], predictions[5] = "", "方法.结果.讨论", "..."
  expected = []
  for t, p in zip(targets, predictions):
    hyp = " ".join(_independent_tokens(p, uer=True))
    ref = " ".join(_independent_tokens(t, uer=True))
    try:
      expected.append(_independent_rouge_l(hyp, ref))
    except ValueError:  # the official script stops here; crosstask scores 0
      expected.append(0.0)
  ours = ev.rouge_l_csl(targets, predictions)["rougeL"]
  assert abs(ours - 100 * np.mean(expected)) < 1e-9
  assert 20 < ours < 60  # the lead baseline, for scale
  rouge_score_flavour = ev.rouge(targets, predictions, score_keys=("rougeL",))["rougeL"]
  assert abs(ours - rouge_score_flavour) > 0.1  # the two flavours really differ


def test_accuracy_maps_to_the_nearest_gold_label(dev):
  gold = [r["discipline"] for r in dev]
  labels = list(dict.fromkeys(gold))
  rng = random.Random(1)
  predictions = []
  for i, g in enumerate(gold):
    kind = i % 5
    predictions.append([g, rng.choice(labels), g + "学科", f"{g}.{labels[3]}", ""][kind])
  expected_rng = random.Random(0)
  mapped = []
  for p in predictions:
    try:
      scores = np.asarray([_independent_rouge_l(p, label) for label in labels], np.float32)
      mapped.append(labels[int(np.argmax(scores))])
    except ValueError:
      mapped.append(expected_rng.choice(labels))
  expected = 100 * np.mean([m == g for m, g in zip(mapped, gold)])
  scores = ev.classification_csl(gold, predictions)
  assert abs(scores["accuracy"] - expected) < 1e-9
  assert ev.accuracy_csl(gold, predictions)["accuracy"] == scores["accuracy"]
  assert scores["macro_f1"] == pytest.approx(ev.macro_f1(gold, mapped)["macro_f1"], abs=1e-9)
  # "X学科" matches no label as one unspaced word, so it becomes the first gold label
  assert off.map_to_gold_labels(gold[:3], [gold[1] + "学科"] * 3)[1] == [gold[0]] * 3


def test_small_cases():
  assert ev.rouge_l_csl(["深度 学习"], ["深度学习"])["rougeL"] == pytest.approx(100, abs=1e-5)
  assert ev.rouge_l_csl(["深度学习"], [""])["rougeL"] == 0.0
  # "..." is ". . ." once tokenized: two sentences of one empty word to the
  # `rouge` package, which match the reference's empty words (P 1, R 1/4).
  assert ev.rouge_l_csl(["省略...号"], ["..."])["rougeL"] == pytest.approx(40, abs=1e-5)
  # A gold "." alone is, with the space kept before [SEP], one empty sentence to the
  # package: the script scores it 0 (as the package does), and so does crosstask. Cut to
  # its "." by the script's target length, no space follows, and the package (so the
  # script) raises: so does crosstask, naming the target.
  assert ev.rouge_l_csl([" . "], ["x"])["rougeL"] == 0.0 == pypi_rouge.rouge_l_f("x", ". ")
  with pytest.raises(ValueError, match="targets\\[0\\]"):
    ev.rouge_l_csl([". x"], ["x"], gold_max_tokens=1)
  # The reference keeps the space the script leaves before [SEP]: after a last "." the
  # package finds one more sentence, the empty word, so "a model . " holds 3 unigrams
  # (R 2/3, P 1) and a copy of "深度学习方法." recalls 6 of 7 (F 12/13).
  assert ev.rouge_l_csl(["a model."], ["a model"])["rougeL"] == pytest.approx(80, abs=1e-5)
  assert ev.rouge_l_csl(["深度学习方法."], ["深度学习方法."])["rougeL"] == pytest.approx(
      100 * 12 / 13, abs=1e-5)
  assert ev.classification_csl(["工学", "理学"], ["工学", "理学"]) == {"accuracy": 100.0, "macro_f1": 100.0}


def test_the_tokenizer_is_uers_where_it_differs_from_hf(tmp_path):
  # UER-py uer/utils/tokenizers.py (the CSL script's): only Cc and Cf are dropped, so a
  # private-use character stays (and is [UNK] under a vocabulary), where HF drops it;
  # WordPiece gives up on a word past 200 characters (HF: 100).
  assert off.bert_basic_tokens("钢筋\ue000混凝土\u200b梁\x07") == [
      "钢", "筋", "\ue000", "混", "凝", "土", "梁"]
  assert _independent_tokens("钢筋\ue000混") == ["钢", "筋", "混"]  # HF's rule
  (tmp_path / "vocab.txt").write_text("\n".join(["[UNK]", "钢", "筋", "a", "##a"]) + "\n")
  vocab = str(tmp_path / "vocab.txt")
  assert off.bert_tokens("钢\ue000筋", vocab) == ["钢", "[UNK]", "筋"]
  assert off.bert_tokens("a" * 150, vocab) == ["a"] + ["##a"] * 149
  assert off.bert_tokens("a" * 201, vocab) == ["[UNK]"]
  assert ev.rouge_l_csl(["钢筋\ue000混凝土梁"], ["钢筋混凝土梁"])["rougeL"] < 100


def test_wordpiece_with_a_vocab_file_matches_hf_tokenizers(tmp_path):
  from tokenizers import Tokenizer  # pylint: disable=g-import-not-at-top
  from tokenizers.models import WordPiece  # pylint: disable=g-import-not-at-top
  from tokenizers.normalizers import BertNormalizer  # pylint: disable=g-import-not-at-top
  from tokenizers.pre_tokenizers import BertPreTokenizer  # pylint: disable=g-import-not-at-top
  vocab = ["[PAD]", "[UNK]", "trans", "##form", "##er", "##s", "深", "度", "学", "(", ")", "52",
           ".", "##6", "6", "m", "##m"]
  (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
  hf = Tokenizer(WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
  hf.normalizer = BertNormalizer(lowercase=True)
  hf.pre_tokenizer = BertPreTokenizer()
  text = "深度学习 Transformers(52.66m) 习题 transx"
  ours = off.bert_tokens(text, str(tmp_path / "vocab.txt"))
  assert ours == hf.encode(text, add_special_tokens=False).tokens
  assert ours[:5] == ["深", "度", "学", "[UNK]", "trans"]
  scores = ev.rouge_l_csl(["transformers 学习"], ["transformer"], vocab_file=str(tmp_path / "vocab.txt"))
  assert 0 < scores["rougeL"] < 100


def _official_gold_row(tokens, tgt_seq_length):
  """run_text2text_csl.py's `read_dataset` target row, read back as `evaluate` does:
  [CLS] + tokens + [SEP] cut to tgt_seq_length, shifted into tgt_out, padded, and
  everything but the last two positions kept (transcribed, token strings for ids)."""
  tgt_in = (["[CLS]"] + list(tokens) + ["[SEP]"])[:tgt_seq_length]
  tgt_out = tgt_in[1:] + ["[PAD]"]
  tgt_out += ["[PAD]"] * (tgt_seq_length - len(tgt_out))
  return tgt_out[:-2]


def _official_references(text, tgt_seq_length):
  """The script's gold for ROUGE-L (`--metrics 1`) and for Bpref (`--metrics 2`)."""
  row = _official_gold_row(_independent_tokens(text, uer=True), tgt_seq_length)
  return " ".join(row).split("[SEP]")[0], "".join(row).split("[SEP]")[0].split("_")


def test_the_gold_cut_equals_the_scripts_target_row(official_data):
  # The script's default --tgt_seq_length 32 keeps 30 tokens of each gold string.
  from crosstask.tasks.common import readers  # pylint: disable=g-import-not-at-top
  rows = [r.value for r in readers.read_tsv(official_data / "csl/benchmark/kg/dev.tsv", 3)]
  gold = [r[2] for r in rows]
  cut = sum(len(_independent_tokens(g, uer=True)) > 30 for g in gold)
  assert cut == 152 and len(gold) == 1000
  # Predictions: the gold's last keyword (which a cut removes or shortens), then its first two.
  predictions = []
  for g in gold:
    keywords = g.split("_")
    predictions.append("_".join(keywords[-1:] + keywords[:2]))
  from test_eval_metrics import _official_bpref  # pylint: disable=g-import-not-at-top
  want_bpref, want_rouge = [], []
  for g, p in zip(gold, predictions):
    ref, ref_keywords = _official_references(g, 32)
    pred_keywords = "".join(_independent_tokens(p, uer=True)).split("_")
    want_bpref.append(_official_bpref(pred_keywords, ref_keywords))
    want_rouge.append(_independent_rouge_l(" ".join(_independent_tokens(p, uer=True)), ref))
  got = ev.bpref(gold, predictions, gold_max_tokens=30)["bpref"]
  assert got == pytest.approx(100 * np.mean(want_bpref), abs=1e-9)
  assert got < ev.bpref(gold, predictions)["bpref"] - 1  # the cut really moves the score
  got = ev.rouge_l_csl(gold, predictions, gold_max_tokens=30)["rougeL"]
  assert got == pytest.approx(100 * np.mean(want_rouge), abs=1e-9)
  assert got != pytest.approx(ev.rouge_l_csl(gold, predictions)["rougeL"], abs=1e-3)
  # The title task's --tgt_seq_length 48 cuts no dev title: the score is unchanged.
  titles = [r.value[2] for r in readers.read_tsv(official_data / "csl/benchmark/ts/dev.tsv", 3)]
  leads = [t[:8] for t in titles]
  assert (ev.rouge_l_csl(titles, leads, gold_max_tokens=46)
          == ev.rouge_l_csl(titles, leads))


def test_gold_cut_small_cases(tmp_path):
  # A gold of exactly gold_max_tokens tokens has no [SEP] in the row, so its reference
  # loses the space before "[SEP]" that makes a last "." count an empty word: 100, not 80.
  assert ev.rouge_l_csl(["a model."], ["a model"], gold_max_tokens=2)["rougeL"] == pytest.approx(
      100, abs=1e-5)
  assert ev.rouge_l_csl(["a model."], ["a model"], gold_max_tokens=3)["rougeL"] == pytest.approx(
      100, abs=1e-5)
  assert ev.rouge_l_csl(["a model."], ["a model"], gold_max_tokens=4)["rougeL"] == pytest.approx(
      80, abs=1e-5)
  # Accuracy compares the cut labels: two disciplines that share their first tokens merge.
  gold = ["计算机科学与技术", "计算机应用"]
  assert ev.accuracy_csl(gold, ["计算机", "计算机"], gold_max_tokens=3)["accuracy"] == 100.0
  assert ev.accuracy_csl(gold, ["计算机", "计算机"])["accuracy"] == 50.0
  # Bpref: the last keyword is cut short; under a vocabulary the cut counts WordPieces.
  assert ev.bpref(["cnn_深度"], ["深_cnn"], gold_max_tokens=3)["bpref"] == 100.0
  assert ev.bpref(["cnn_深度"], ["深_cnn"])["bpref"] == 50.0
  (tmp_path / "vocab.txt").write_text("\n".join(["[UNK]", "_", "深", "度", "c", "##nn"]))
  vocab = str(tmp_path / "vocab.txt")
  assert ev.bpref(["深度_cnn"], ["cnn_深度"], gold_max_tokens=4, vocab_file=vocab)["bpref"] == 50.0
  assert ev.bpref(["深度_cnn"], ["cnn_深度"], gold_max_tokens=5, vocab_file=vocab)["bpref"] == 100.0
  assert ev.bpref(["深度_cnn"], ["cnn_深度"], gold_max_tokens=4)["bpref"] == 100.0
  with pytest.raises(ValueError, match="gold_max_tokens"):
    ev.rouge_l_csl(["a"], ["a"], gold_max_tokens=0)
