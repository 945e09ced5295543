"""Metrics: hand-computed small cases, and the official definitions on CSL dev data."""

import collections
import math
import os
import subprocess
import sys
import unicodedata

from nltk.translate import bleu_score
import pytest
from rouge_score import rouge_scorer

from crosstask import metrics as ev
from crosstask.metrics import keywords
from crosstask.metrics import tokenizers


# --- tokenizers -------------------------------------------------------------


def test_char_tokens_split_cjk_keep_latin_runs_drop_punctuation():
  assert tokenizers.char_tokens("基于BERT的ＮＥＲ模型, v2.0!") == [
      "基", "于", "bert", "的", "ner", "模", "型", "v2", "0"]
  assert tokenizers.bert4keras_tokens("Ab 模,\u3000") == ["a", "b", "模", ",", "\u3000"]
  with pytest.raises(ValueError, match="unknown tokenizer 'chr'"):
    ev.rouge(["a"], ["a"], tokenizer="chr")


# --- rouge ------------------------------------------------------------------


def test_rouge_chinese_hand_computed():
  # target 11 chars, prediction 10 chars; 8 shared unigrams, 6 shared bigrams,
  # LCS 8 (深度学习图像识别).
  scores = ev.rouge(["基于深度学习的图像识别"], ["深度学习图像识别方法"])
  assert scores["rouge1"] == pytest.approx(100 * 2 * 8 / (11 + 10))
  assert scores["rouge2"] == pytest.approx(100 * 2 * 6 / (10 + 9))
  assert scores["rougeL"] == pytest.approx(100 * 2 * 8 / (11 + 10))


def test_rouge_default_tokenizer_scores_chinese_zero():
  # Why the custom tokenizer exists: rouge-score alone sees no Chinese tokens.
  plain = rouge_scorer.RougeScorer(["rouge1"]).score("深度学习", "深度学习")
  assert plain["rouge1"].fmeasure == 0.0
  assert ev.rouge(["深度学习"], ["深度学习"], tokenizer="word")["rouge1"] == 0.0
  assert ev.rouge(["深度学习"], ["深度学习"])["rouge1"] == pytest.approx(100.0)


def test_rouge_mixed_latin_and_mean_over_examples():
  # "BERT模型" vs "bert 模型!": tokens [bert, 模, 型] on both sides -> 100;
  # second pair shares nothing -> 0; the mean is 50.
  scores = ev.rouge(["BERT模型", "图像"], ["bert 模型!", "语音"], score_keys=("rouge1",))
  assert scores == {"rouge1": pytest.approx(50.0)}


def test_rouge_word_tokenizer_english():
  scores = ev.rouge(["the cat sat"], ["the cat"], tokenizer="word")
  assert scores["rouge1"] == pytest.approx(100 * 2 * 2 / 5)


def test_metrics_reject_mismatched_lengths():
  with pytest.raises(ValueError, match="2 targets but 1 predictions"):
    ev.rouge(["a", "b"], ["a"])
  with pytest.raises(TypeError, match=r"predictions\[0\]"):
    ev.bleu(["a"], [3])


# --- bleu -------------------------------------------------------------------


def test_bleu_brevity_penalty_hand_computed():
  # All n-gram precisions are 1; BP = exp(1 - 5/4).
  assert ev.bleu(["甲乙丙丁戊"], ["甲乙丙丁"])["bleu"] == pytest.approx(
      100 * math.exp(-0.25))


def test_bleu_method1_smoothing_hand_computed():
  # p1 = 4/4, p2 = 1/3, p3 = 0/2 -> 0.1/2, p4 = 0/1 -> 0.1/1, BP = 1.
  expected = (1 * (1 / 3) * (0.1 / 2) * (0.1 / 1)) ** 0.25
  assert ev.bleu(["甲乙丙丁"], ["甲乙丁丙"])["bleu"] == pytest.approx(100 * expected)


def test_bleu_empty_prediction_counts_as_zero():
  # bert4keras skips a blank prediction (it still counts in the mean); punctuation is a
  # token there, and none under "char".
  assert ev.bleu(["甲乙丙丁", "甲乙丙丁"], ["甲乙丙丁", " \u3000"])["bleu"] == pytest.approx(50)
  assert ev.bleu(["甲乙丙丁!"], ["甲乙丙丁!"])["bleu"] == 100.0
  assert ev.bleu(["甲乙丙丁!"], ["甲乙丙丁"])["bleu"] < 100.0  # BP: '!' was a token
  assert ev.bleu(["甲乙丙丁", "甲乙丙丁"], ["甲乙丙丁", "!!"], tokenizer="char")[
      "bleu"] == pytest.approx(50)


def test_bleu_default_is_bert4keras_evaluate_spaces_included():
  # ' '.join("BP 神经").split(' ') == ['b', 'p', '', '', '神', '经']: a space is two
  # empty tokens, which match each other (the helper audit's dev example).
  from nltk.translate import bleu_score  # pylint: disable=g-import-not-at-top
  ref, hyp = "基于BP 神经网络的预测", "BP 神经网络预测"
  want = bleu_score.sentence_bleu([" ".join(ref).lower().split(" ")],
                                  " ".join(hyp).lower().split(" "),
                                  smoothing_function=bleu_score.SmoothingFunction().method1)
  assert ev.bleu([ref], [hyp])["bleu"] == pytest.approx(100 * want)
  assert ev.bleu([ref], [hyp])["bleu"] == pytest.approx(61.5, abs=0.1)
  # A blank target too is scored as bert4keras splits it: [''] against " a"'s
  # ['', '', 'a'] matches one empty token (its Evaluate skips blank predictions only).
  blank = bleu_score.sentence_bleu([" ".join("").split(" ")], " ".join(" a").split(" "),
                                   smoothing_function=bleu_score.SmoothingFunction().method1)
  got = ev.bleu([""], [" a"])["bleu"]
  assert got == pytest.approx(100 * blank) and got == pytest.approx(11.36, abs=0.01)


# --- keywords ---------------------------------------------------------------


def test_keyword_f1_and_bpref_hand_computed():
  targets = ["深度学习_图像 识别_CNN"]
  predictions = [["cnn", "语音", "图像识别"]]
  # Normalised gold {深度学习, 图像识别, cnn}; 2 of 3 predictions are gold.
  f1 = ev.keyword_f1(targets, predictions)
  assert f1["keyword_precision"] == pytest.approx(100 * 2 / 3)
  assert f1["keyword_recall"] == pytest.approx(100 * 2 / 3)
  assert f1["keyword_f1"] == pytest.approx(100 * 2 / 3)
  # CSL Bpref: cnn -> 1 - 0/3; 语音 non-relevant; 图像识别 -> 1 - 1/3; / 2 found.
  assert ev.bpref(targets, predictions)["bpref"] == pytest.approx(100 * (1 + 2 / 3) / 2)


def test_bpref_is_rank_sensitive_and_zero_without_hits():
  gold = ["a_b"]
  assert ev.bpref(gold, ["a_b_x"])["bpref"] == pytest.approx(100.0)
  assert ev.bpref(gold, ["x_a_b"])["bpref"] == pytest.approx(100 * (2 / 3))
  assert ev.bpref(gold, ["x_y"])["bpref"] == 0.0
  assert ev.keyword_f1(gold, ["a_b_x"])["keyword_f1"] == ev.keyword_f1(
      gold, ["x_a_b"])["keyword_f1"]


def test_keywords_bad_input_names_the_example():
  with pytest.raises(TypeError, match=r"predictions\[1\]"):
    ev.keyword_f1(["a", "b"], ["a", 5])


# --- classification ---------------------------------------------------------


def test_accuracy_and_macro_f1_hand_computed():
  targets = ["A", "A", "B", "C"]
  predictions = ["A", "B", "B", "zzz"]
  assert ev.accuracy(targets, predictions)["accuracy"] == pytest.approx(50.0)
  # A: tp1 fn1 -> 2/3; B: tp1 fp1 -> 2/3; C: fn1 -> 0. "zzz" is no class's FP.
  assert ev.macro_f1(targets, predictions)["macro_f1"] == pytest.approx(100 * 4 / 9)
  # A class D that occurs in neither list is no class of this set: the mean stays.
  assert ev.macro_f1(targets, predictions, label_set=["A", "B", "C", "D"])[
      "macro_f1"] == pytest.approx(100 * 4 / 9)
  # D predicted once (never right) occurs: it counts with F1 0.
  assert ev.macro_f1(targets, ["A", "B", "B", "D"], label_set=["A", "B", "C", "D"])[
      "macro_f1"] == pytest.approx(100 * (4 / 3) / 4)
  assert ev.macro_f1(["A"], ["A"], label_set=["A", "B", "C"])["macro_f1"] == 100.0
  with pytest.raises(ValueError, match=r"targets\[3\]='C' is not in label_set"):
    ev.macro_f1(targets, predictions, label_set=["A", "B"])


# --- official definitions on the real CSL dev data --------------------------


def _read_tsv(path):
  rows = []
  with open(path, encoding="utf-8") as f:
    for line in f:
      rows.append(line.rstrip("\n").split("\t"))
  return rows


def _ref_char_tokens(text):
  """Straightforward re-implementation of the "char" tokenizer."""
  tokens, run = [], ""
  for c in unicodedata.normalize("NFKC", text).lower():
    is_cjk = "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf" or (
        "\uf900" <= c <= "\ufaff") or c >= "\U00020000"
    if c.isalnum() and not is_cjk:
      run += c
      continue
    if run:
      tokens.append(run)
      run = ""
    if is_cjk:
      tokens.append(c)
  return tokens + ([run] if run else [])


def _ref_f(overlap, n_pred, n_ref):
  if not overlap:
    return 0.0
  p, r = overlap / n_pred, overlap / n_ref
  return 2 * p * r / (p + r)


def _ref_rouge_n(ref, hyp, n):
  ref_ngrams = collections.Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
  hyp_ngrams = collections.Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
  overlap = sum((ref_ngrams & hyp_ngrams).values())
  return _ref_f(overlap, sum(hyp_ngrams.values()), sum(ref_ngrams.values()))


def _ref_rouge_l(ref, hyp):
  table = [[0] * (len(hyp) + 1) for _ in range(len(ref) + 1)]
  for i, a in enumerate(ref):
    for j, b in enumerate(hyp):
      table[i + 1][j + 1] = table[i][j] + 1 if a == b else max(table[i][j + 1],
                                                               table[i + 1][j])
  return _ref_f(table[-1][-1], len(hyp), len(ref))


def test_csl_ts_lead_baseline_matches_official_definitions(official_data):
  rows = _read_tsv(official_data / "csl/benchmark/ts/dev.tsv")
  assert len(rows) == 1000 and all(len(r) == 3 for r in rows)
  titles = [r[2] for r in rows]
  leads = [r[1][:24] for r in rows]  # lead-24 characters of the abstract as title

  ours = ev.rouge(titles, leads)
  ours.update(ev.bleu(titles, leads, tokenizer="char"))
  refs = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0, "bleu": 0.0}
  smooth = bleu_score.SmoothingFunction().method1
  for title, lead in zip(titles, leads):
    ref, hyp = _ref_char_tokens(title), _ref_char_tokens(lead)
    refs["rouge1"] += _ref_rouge_n(ref, hyp, 1)
    refs["rouge2"] += _ref_rouge_n(ref, hyp, 2)
    refs["rougeL"] += _ref_rouge_l(ref, hyp)
    if hyp:
      refs["bleu"] += bleu_score.sentence_bleu([ref], hyp, smoothing_function=smooth)
  for key, total in refs.items():
    assert ours[key] == pytest.approx(100 * total / len(rows), abs=1e-6), key
  assert 5 < ours["rougeL"] < 60 and 0 < ours["bleu"] < ours["rouge1"]

  # The default: bert4keras's evaluate() (examples/task_seq2seq_autotitle_csl.py),
  # transcribed: ' '.join(text).lower().split(' '), the empty strings a space leaves
  # included (20 dev titles have spaces), and a blank prediction skipped.
  b4k = ev.bleu(titles, leads)["bleu"]
  total = 0.0
  for title, lead in zip(titles, leads):
    title, pred_title = " ".join(title).lower(), " ".join(lead).lower()
    if pred_title.strip():
      total += bleu_score.sentence_bleu(references=[title.split(" ")],
                                        hypothesis=pred_title.split(" "),
                                        smoothing_function=smooth)
  assert b4k == pytest.approx(100 * total / len(rows), abs=1e-6)
  assert sum(" " in t for t in titles) == 20


def _official_bpref(pred, gold):
  """Transcribed shape of CSL run_text2text_csl.py's bpref()."""
  score, n, p = 0, 0, 0
  for word in pred:
    if word in gold:
      score += (1 - n / len(pred))
      p += 1
    else:
      n += 1
  return score / p if p != 0 else score


def _official_keywords(text):
  """What run_text2text_csl.py makes of a keyword string: its UER-py BERT tokens (the
  independent tokenizer of test_eval_csl_official) joined without spaces, split on `_`."""
  import test_eval_csl_official  # pylint: disable=g-import-not-at-top
  tokens = test_eval_csl_official._independent_tokens(text, uer=True)  # pylint: disable=protected-access
  return "".join(tokens).split("_")


@pytest.mark.parametrize("prediction", [
    "深度学习_神经网络", "深度学习__神经网络", "_深度学习_神经网络", "深度学习_神经网络_",
    "图像_深度学习__神经网络", "深度学习 _ 神经 网络", "", "_", "__", "CNN_深度学习",
    "cafe\u0301_x", "Café_x", "神经\u200b网络_深度学习", "深度学习_深度学习_图像",
    "神经网络\t_\u3000深度学习", "神经\ue000网络_深度学习"])
def test_bpref_equals_the_official_scorer_on_untidy_predictions(prediction):
  # Empty keywords between, before or after separators are non-relevant predictions
  # there, and accents, case and spacing never count.
  gold = "深度学习_神经网络_cnn_café"
  want = _official_bpref(_official_keywords(prediction), _official_keywords(gold))
  assert ev.bpref([gold], [prediction])["bpref"] == pytest.approx(100 * want, abs=1e-9)


def test_keyword_f1_ignores_empty_keywords_bpref_counts_them():
  assert ev.keyword_f1(["a_b"], ["a__b_"])["keyword_f1"] == 100.0
  assert ev.bpref(["a_b"], ["_a"])["bpref"] == pytest.approx(50.0)
  assert ev.bpref(["a_b"], ["a__b"])["bpref"] == pytest.approx(100 * (1 + 2 / 3) / 2)


def test_csl_kg_substring_baseline_matches_official_bpref(official_data):
  rows = _read_tsv(official_data / "csl/benchmark/kg/dev.tsv")[:400]
  gold = [r[2] for r in rows]
  vocabulary = sorted({k for g in gold for k in g.split("_") if k})
  # Baseline: every known keyword that occurs in the text, ranked by position.
  predictions = []
  for r in rows:
    found = [(r[1].find(k), k) for k in vocabulary if k in r[1]]
    predictions.append("_".join(k for _, k in sorted(found)))

  bp = sum(_official_bpref("".join(p.lower().split(" ")).split("_") if p else [],
                           "".join(g.lower().split(" ")).split("_"))
           for p, g in zip(predictions, gold))
  assert ev.bpref(gold, predictions)["bpref"] == pytest.approx(100 * bp / len(rows), abs=1e-6)

  f1 = 0.0
  for p, g in zip(predictions, gold):
    ps = {k.lower() for k in p.split("_") if k}
    gs = {k.lower() for k in g.split("_") if k}
    hits = len(ps & gs)
    f1 += 2 * hits / (len(ps) + len(gs)) if hits else 0.0
  ours = ev.keyword_f1(gold, predictions)
  assert ours["keyword_f1"] == pytest.approx(100 * f1 / len(rows), abs=1e-6)
  assert 10 < ours["keyword_f1"] < 90


def test_csl_ctg_rule_baseline_accuracy_and_macro_f1(official_data):
  rows = _read_tsv(official_data / "csl/benchmark/cls_ctg/dev.tsv")
  targets = [r[2] for r in rows]
  rules = {"患者": "医学", "治疗": "医学", "教学": "教育学", "土壤": "农学"}
  predictions = [next((v for k, v in rules.items() if k in r[1]), "工学")
                 for r in rows]
  classes = sorted(set(targets))
  assert len(classes) == 13
  f1s = []
  for c in classes:
    tp = sum(t == c and p == c for t, p in zip(targets, predictions))
    fp = sum(t != c and p == c for t, p in zip(targets, predictions))
    fn = sum(t == c and p != c for t, p in zip(targets, predictions))
    f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
  assert ev.macro_f1(targets, predictions)["macro_f1"] == pytest.approx(
      100 * sum(f1s) / 13, abs=1e-9)
  correct = sum(t == p for t, p in zip(targets, predictions))
  assert ev.accuracy(targets, predictions)["accuracy"] == pytest.approx(100 * correct / 1000)
  assert correct > 443  # beats the majority class (443 工学) on this dev set


def test_package_import_stays_light():
  # The metrics package is a leaf: importing it loads no jax, TensorFlow, seqio or nltk.
  code = ("import sys, crosstask.metrics; print(sorted({m.split('.')[0] for m in sys.modules}"
          " & {'jax', 'tensorflow', 'seqio', 'nltk', 'rouge_score', 'torch'}))")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
  assert out.stdout.strip() == "[]"
