"""CiteSum/SciTLDR metrics: stemmed ROUGE with rougeLsum, SciTLDR's multi-reference
rule, weighted F1. Hand-computed cases, rouge-score itself, and SciTLDR-A dev anchors."""

import json

import pytest
from rouge_score import rouge_scorer

from crosstask import metrics as ev
from crosstask.metrics import summary_rouge
from crosstask.metrics import sentences
from crosstask.metrics import tokenizers


def _f(p, r):
  return 2 * p * r / (p + r) if p + r else 0.0


# --- sentence splitting and stemmed tokens -----------------------------------


def test_split_sentences_keeps_abbreviations_and_decimals(no_punkt):
  del no_punkt  # pysbd's rules, offline
  text = "We use e.g. BERT on the U.S. data.  It gains 3.5 points (Fig. 1).\nDone."
  assert sentences.split_sentences(text) == [
      "We use e.g. BERT on the U.S. data.", "It gains 3.5 points (Fig. 1).", "Done."]
  assert sentences.split_sentences("  \n ") == []
  assert sentences.sentences_per_line("A cat sat. A dog ran.") == "A cat sat.\nA dog ran."
  # A newline ends a sentence (HF keeps it inside a punkt sentence, and rouge-score's
  # rougeLsum splits at every newline): rougeLsum of a two-line text is per line.
  assert sentences.split_sentences("the model\nlearns fast") == ["the model", "learns fast"]
  lsum = summary_rouge.rouge_stemmed(["the model learns fast"], ["the model\nlearns fast"],
                          score_keys=("rougeLsum",))["rougeLsum"]
  want = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True).score(
      "the model learns fast", "the model\nlearns fast")["rougeLsum"].fmeasure
  assert lsum == pytest.approx(100 * want)


def test_with_punkt_installed_the_sentences_are_the_hf_scripts_own(punkt_model):
  del punkt_model
  import nltk  # pylint: disable=g-import-not-at-top

  def hf_lines(text):  # HF's postprocess_text: sent_tokenize, joined by newlines
    lines = "\n".join(nltk.sent_tokenize(text.strip())).split("\n")
    return [" ".join(line.split()) for line in lines if line.strip()]

  texts = ["We use e.g. BERT here.  Dr. Smith agrees.\nIt gains 3.5 points. done",
           " A cat sat. the dog ran i.e. fast. ", "one line only"]
  for text in texts:
    assert sentences.split_sentences(text) == hf_lines(text), text
  # The toy model knows no `e.g.`, so Punkt ends a sentence there and pysbd does not.
  assert sentences.split_sentences(texts[0]) != sentences.split_sentences(texts[0], punkt=False)
  target, prediction = "Models use e.g. BERT here. It helps a lot.", "We use BERT. e.g. it helps."
  got = summary_rouge.rouge_stemmed([target], [prediction], score_keys=("rougeLsum",))
  want = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True).score(
      "\n".join(hf_lines(target)), "\n".join(hf_lines(prediction)))["rougeLsum"].fmeasure
  assert got["rougeLsum"] == pytest.approx(100 * want)


def test_stemmed_word_tokens_equal_rouge_score_stemming():
  text = "The cats are RUNNING quickly; re-trained models' scores: 3.5%"
  from rouge_score import tokenizers as rs_tokenizers
  expected = rs_tokenizers.DefaultTokenizer(use_stemmer=True).tokenize(text)
  assert tokenizers.stemmed_word_tokens(text) == expected
  assert expected[:5] == ["the", "cat", "are", "run", "quickli"]


# --- stemmed ROUGE ------------------------------------------------------------


def test_rouge_stemmed_hand_computed():
  # stemmed: the cat are run quickli / a cat run quickli -> 3 shared unigrams;
  # unstemmed only "quickly" is shared.
  target, prediction = "The cats are running quickly.", "A cat runs quickly."
  scores = ev.rouge_stemmed([target], [prediction])
  assert scores["rouge1"] == pytest.approx(100 * _f(3 / 4, 3 / 5))
  assert scores["rouge2"] == pytest.approx(100 * _f(1 / 3, 1 / 4))  # "run quickli"
  assert scores["rougeL"] == pytest.approx(100 * _f(3 / 4, 3 / 5))
  unstemmed = ev.rouge_stemmed([target], [prediction], stem=False)
  assert unstemmed["rouge1"] == pytest.approx(100 * _f(1 / 4, 1 / 5))


def test_rouge_lsum_uses_sentences_rouge_l_does_not():
  # Sentence order swapped: one LCS over the whole text finds 3 of 6 tokens;
  # summary-level LCS matches each sentence with its twin, 6 of 6.
  scores = ev.rouge_stemmed(["Cats sit here. Dogs run there."],
                            ["Dogs run there. Cats sit here."])
  assert scores["rougeL"] == pytest.approx(50.0)
  assert scores["rougeLsum"] == pytest.approx(100.0)


def test_rouge_stemmed_equals_rouge_score_with_newline_joined_sentences():
  pairs = [
      ("This paper proposes a new loss-scaling method. It removes tuning.",
       "We propose adaptive loss scaling for mixed precision training."),
      ("REF introduced GANs for image synthesis (Goodfellow et al. 2014).",
       "Generative adversarial networks were introduced by REF. They synthesise images."),
      ("Cats sit here. Dogs run there.", "Dogs ran there. Cats sat here!"),
      ("", "an empty reference scores zero"),
      ("short", ""),
  ]
  scorer = rouge_scorer.RougeScorer(list(summary_rouge.ROUGE_KEYS), use_stemmer=True)
  expected = dict.fromkeys(summary_rouge.ROUGE_KEYS, 0.0)
  for target, prediction in pairs:
    scores = scorer.score(sentences.sentences_per_line(target),
                          sentences.sentences_per_line(prediction))
    for key in expected:
      expected[key] += 100 * scores[key].fmeasure / len(pairs)
  got = ev.rouge_stemmed([t for t, _ in pairs], [p for _, p in pairs])
  assert got == pytest.approx(expected)
  assert got["rougeLsum"] != pytest.approx(got["rougeL"])


def test_rouge_stemmed_bad_input_names_the_example():
  with pytest.raises(ValueError, match="2 targets but 1 predictions"):
    ev.rouge_stemmed(["a", "b"], ["a"])
  with pytest.raises(TypeError, match=r"predictions\[0\] is NoneType"):
    ev.rouge_stemmed(["a"], [None])


# --- SciTLDR multi-reference rule ----------------------------------------------

# Against PRED, REF_BEST_R1 has every unigram (R-1 1.0) but no shared bigram and
# LCS 2; REF_BEST_R2 has 3 of 5 unigrams (R-1 .75), both its bigrams, LCS 3.
PRED = "neural nets learn fast features"
REF_BEST_R1 = "fast neural features learn nets"
REF_BEST_R2 = "neural nets learn"
REF_TIE = "nets neural learn"  # R-1 .75 too, but no shared bigram


def _approx5(expected):
  """The official scorer prints each pair's F to 5 decimals (0-1), so 5e-4 on 0-100."""
  return pytest.approx(expected, abs=5e-4)


def test_rouge_multi_official_rule_takes_all_scores_from_best_rouge1_reference():
  refs = [[REF_BEST_R1, REF_BEST_R2], [REF_BEST_R2]]
  preds = [PRED, ""]
  r2_best = _f(2 / 4, 2 / 2)
  got = ev.rouge_multi(refs, preds)
  assert got["rouge1"] == _approx5(100 * (1.0 + 0) / 2)
  assert got["rouge2"] == _approx5(0.0)
  assert got["rougeL"] == _approx5(100 * _f(2 / 5, 2 / 5) / 2)
  assert got["author_rouge2"] == _approx5(0.0)
  assert got["mean_rouge1"] == _approx5(100 * (1.0 + 0.75) / 2 / 2)
  assert got["mean_rouge2"] == _approx5(100 * r2_best / 2 / 2)
  each = ev.rouge_multi(refs, preds, select="max_each", variants=())
  assert set(each) == {"rouge1", "rouge2", "rougeL"}
  assert each["rouge2"] == _approx5(100 * r2_best / 2)
  assert each["rougeL"] == _approx5(100 * 0.75 / 2)


def test_rouge_multi_ties_go_to_the_first_reference():
  assert ev.rouge_multi([[REF_TIE, REF_BEST_R2]], [PRED])["rouge2"] == 0.0
  assert ev.rouge_multi([[REF_BEST_R2, REF_TIE]], [PRED])["rouge2"] == _approx5(
      100 * _f(2 / 4, 2 / 2))
  # A bare string is one reference; "first" is the author-only score.
  assert ev.rouge_multi([REF_BEST_R2], [PRED], select="first", variants=()) == \
      ev.rouge_multi([[REF_BEST_R2, REF_BEST_R1]], [PRED], select="first", variants=())


def test_rouge_multi_bad_input():
  with pytest.raises(ValueError, match=r"targets\[1\] must be a non-empty list"):
    ev.rouge_multi([["a"], []], ["a", "b"])
  with pytest.raises(ValueError, match="select='max'"):
    ev.rouge_multi([["a"]], ["a"], select="max")
  with pytest.raises(ValueError, match="1 targets but 2 predictions"):
    ev.rouge_multi([["a"]], ["a", "b"])


def _scitldr_dev(root):
  path = root / "scitldr" / "SciTLDR-A" / "dev.jsonl"
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def test_rouge_multi_scitldr_dev_ext_lead_anchor(official_data):
  """Spec §3.2: EXT-LEAD (source[0]) on SciTLDR-A dev, ROUGE-1.5.5 -m as files2rouge runs it."""
  rows = _scitldr_dev(official_data)
  refs = [r["target"] for r in rows]
  lead = [r["source"][0] for r in rows]
  got = ev.rouge_multi(refs, lead)
  assert [round(got[k], 4) for k in ("rouge1", "rouge2", "rougeL")] == [
      30.1232, 10.6436, 23.0865]
  assert [round(got[f"mean_{k}"], 2) for k in ("rouge1", "rouge2", "rougeL")] == [
      23.87, 7.02, 18.43]
  each = ev.rouge_multi(refs, lead, select="max_each", variants=())
  assert [round(each[k], 2) for k in ("rouge1", "rouge2", "rougeL")] == [30.12, 11.45, 23.75]
  # rouge-score (another Porter stemmer, whole-text LCS) is off by up to 0.07.
  other = ev.rouge_multi(refs, lead, variants=(), implementation="rouge_score")
  assert [round(other[k], 2) for k in ("rouge1", "rouge2", "rougeL")] == [30.11, 10.62, 23.02]


# --- weighted F1 ------------------------------------------------------------------


def test_weighted_f1_hand_computed_beside_macro():
  gold = ["CS", "CS", "CS", "CS", "Bio", "Med"]
  pred = ["CS", "CS", "CS", "Bio", "Bio", "Physics"]
  # CS: tp 3 fp 0 fn 1 -> 6/7; Bio: tp 1 fp 1 fn 0 -> 2/3; Med: 0. Physics has no support.
  f_cs, f_bio = 6 / 7, 2 / 3
  assert ev.weighted_f1(gold, pred)["weighted_f1"] == pytest.approx(
      100 * (4 * f_cs + 1 * f_bio + 0) / 6)
  assert ev.macro_f1(gold, pred)["macro_f1"] == pytest.approx(100 * (f_cs + f_bio) / 3)
  with pytest.raises(ValueError, match=r"targets\[5\]='Med' is not in label_set"):
    ev.weighted_f1(gold, pred, label_set=["CS", "Bio"])
