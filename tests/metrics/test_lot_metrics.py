"""LOT / NLPCC metrics on hand-made cases, one per official-scorer quirk."""

import math
import random

import pytest

from crosstask.metrics import lot


# ------------------------------------------------------------------ clean-up


def test_strb2q_turns_ascii_punctuation_full_width_only():
  assert lot.strb2q('他说,"好!"...a+b=c') == "他说，＂好！＂…a+b=c"


def test_clean_prediction_removes_special_tokens_and_whitespace():
  raw = "<pad> 小猫 <extra_id_1>走了, 真的 .</s> 后面不要"
  assert lot.clean_prediction(raw) == "小猫走了，真的．"
  assert lot.clean_prediction("没有结束符") == "没有结束符"  # LongLM's pro() would drop 符


# ---------------------------------------------------------------------- BLEU


@pytest.mark.filterwarnings("ignore::UserWarning")  # nltk warns on zero n-gram overlaps
def test_sentence_bleu_matches_nltk_without_smoothing():
  bleu_score = pytest.importorskip("nltk.translate.bleu_score")
  rng = random.Random(0)
  vocab = list("abcdefg")
  for _ in range(50):
    ref = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
    hyp = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
    for n in (1, 2, 3, 4):
      expected = bleu_score.sentence_bleu([ref], hyp, weights=(1. / n,) * n)
      assert lot.sentence_bleu(ref, hyp, n) == pytest.approx(expected, rel=1e-12, abs=0)


def test_bleu_has_no_smoothing_and_empty_prediction_scores_zero():
  ref, hyp = ["我", "爱", "你"], ["你", "爱", "我"]
  assert lot.sentence_bleu(ref, hyp, 1) == 1.0
  assert 0 < lot.sentence_bleu(ref, hyp, 2) < 1e-150  # float_info.min, not epsilon smoothing
  assert lot.sentence_bleu(ref, [], 1) == 0.0
  scores = lot.bleu_scores(["小猫在河边钓鱼。", "小狗跑了。"], ["小猫在河边钓鱼。", ""])
  assert scores["bleu-1"] == pytest.approx(0.5)


# ------------------------------------------------------------------ Distinct


def test_distinct_units_words_and_nlpcc_characters_with_spaces():
  words = lot.jieba_words("我们去公园，我们去公园")
  assert words == ["我们", "去", "公园", "，", "我们", "去", "公园"]
  word = lot.distinct_scores(["我们去公园，我们去公园"], orders=(1, 2))
  assert word == {"distinct-1": 4 / 7, "distinct-2": 4 / 6}
  # "我们 去 公园 ， 我们 去 公园": 17 characters including 6 spaces, 7 distinct ones.
  chars = lot.distinct_scores(["我们去公园，我们去公园"], orders=(1,), unit="nlpcc_chars")
  assert chars == {"distinct-1": 7 / 17}
  assert lot.distinct_scores([""], orders=(1,)) == {"distinct-1": 0.0}
  with pytest.raises(ValueError, match="unit"):
    lot.distinct_scores(["a"], unit="chars")


# ------------------------------------------------------------------ Coverage


def test_coverage_has_set_semantics():
  # Textbook LCS recall would be 2/4; the scorer counts unique characters: {明} / {小,猴,明}.
  assert lot.phrase_recall("小猴明明", "明明是小猴") == pytest.approx(1 / 3)


def test_coverage_splits_the_prediction_on_ascii_dots():
  # 'b' and 'a' sit in different "sentences"; their LCS sets unite to {a, b}.
  assert lot.phrase_recall("ab", "b.a") == 1.0
  assert lot.phrase_recall("ab", "ba") == 0.5


def test_coverage_drops_empty_predictions_unless_strict():
  outlines, preds = [["小猫", "钓鱼"], ["小狗"]], ["小猫在钓鱼", ""]
  assert lot.phrase_recall("小狗", "") is None
  assert lot.phrase_recall("小狗", ".") is None  # nothing left after splitting on "."
  assert lot.phrase_recall("小狗", "...") == 0.0  # a blank "sentence" survives the split
  assert lot.coverage_score(outlines, preds) == 1.0  # the empty one does not count
  assert lot.coverage_score(outlines, preds, strict=True) == pytest.approx(2 / 3)


def test_coverage_drops_pairs_whose_lcs_walk_overflows_the_official_stack():
  assert lot.phrase_recall("x", "y" * 989) == 0.0
  assert lot.phrase_recall("x", "y" * 990) is None  # RecursionError in rouge's _recon
  assert lot.phrase_recall("x", "y" * 990, recursion_budget=None) == 0.0


def test_coverage_splits_phrases_on_hash():
  assert lot.outline_phrases(["a#b", "c"]) == ["a", "b", "c"]
  assert lot.coverage_score([["小猫#钓鱼"]], ["小猫"]) == 0.5


# --------------------------------------------------------------------- Order

OUTLINE = ["cd", "ab", "ef"]
STORY = "ab和cd和ef"


def test_order_perfect_and_reversed_with_the_i_equals_j_denominator():
  ranks = lot.gold_ranks(OUTLINE, STORY)
  assert ranks == {"ab": 0, "cd": 1, "ef": 2}
  assert lot.order_one(ranks, "ab,cd,ef") == 1.0
  assert lot.order_one(ranks, "ef,cd,ab") == pytest.approx(1 - 3 / 6)  # not 1 - 3/3
  eight = [f"{c}{c}" for c in "abcdefgh"]
  ranks8 = lot.gold_ranks(eight, "".join(eight))
  assert lot.order_one(ranks8, "".join(reversed(eight))) == pytest.approx(1 - 28 / 36)


def test_order_absent_phrases_come_first_in_reverse_gold_order():
  ranks = lot.gold_ranks(OUTLINE, STORY)
  assert lot.order_one(ranks, "") == pytest.approx(0.5)  # [2,1,0]: every pair inverted
  # A single common character does not place a phrase: 'e' alone leaves ef absent,
  # so it moves to the front: [2, 0, 1] has two inversions.
  assert lot.order_one(ranks, "ab,cd,e") == pytest.approx(1 - 2 / 6)


def test_order_uses_longest_common_substring_ending_first():
  assert lot.longest_common_substring("abcxbc", "bcab") == "ab"  # 'ab' and 'bc': ab ends first
  assert lot.longest_common_substring("abcd", "zabz") == "ab"
  assert lot.longest_common_substring("ab", "xy") == ""
  # 'cdX' is not in the prediction, but its substring 'cd' is: placed at 'cd'.
  ranks = lot.gold_ranks(["abX", "cdX"], "abXcdX")
  assert lot.order_one(ranks, "cd-ab") == pytest.approx(1 - 1 / 3)


def test_order_duplicate_phrases_collapse_like_the_official_dict():
  # Positions [0, 3, 0], stable sort: ab gets rank 0 then 1, cd rank 2.
  ranks = lot.gold_ranks(["ab", "cd", "ab"], "ab cd")
  assert ranks == {"ab": 1, "cd": 2}  # the later rank wins
  assert list(ranks) == ["ab", "cd"]
  assert lot.order_one(ranks, "ab cd") == 1.0


# ------------------------------------------------------------------- Overall


@pytest.mark.parametrize("split,scores,printed", [
    # Table 11 LongLM-small val: the paper prints 21.02 (a rounding slip).
    ("validation", [21.78, 7.11, 20.17, 59.63, 35.03, 19.17, 10.80, 39.70, 62.53, 56.53], 21.03),
    ("validation", [23.76, 8.70, 25.93, 72.18, 42.79, 24.91, 16.13, 57.71, 80.46, 64.36], 26.12),
    ("test", [24.20, 9.06, 25.75, 71.08, 42.10, 24.77, 12.04, 50.29, 81.48, 64.82], 25.29),
    ("test", [22.94, 5.76, 24.69, 70.30, 30.17, 14.91, 7.62, 36.87, 60.87, 55.90], 19.21),
])
def test_lot_generation_overall_recomputes_table_11(split, scores, printed):
  overall = lot.lot_overall(dict(zip(lot.LOT_GENERATION, scores)), "generation", split)
  assert overall == pytest.approx(printed, abs=0.005)


@pytest.mark.parametrize("split,scores,printed", [
    ("validation", [79.93, 70.00], 73.64),
    ("test", [80.61, 69.41], 73.79),  # the paper prints 73.39 (a slip)
    ("test", [69.39, 43.68], 53.74),
    ("val", [73.81, 48.75], 57.94),
])
def test_lot_understanding_overall_recomputes_table_10(split, scores, printed):
  overall = lot.lot_overall(dict(zip(lot.LOT_UNDERSTANDING, scores)), "understanding", split)
  assert overall == pytest.approx(printed, abs=0.005)


def test_overall_rejects_missing_scores_and_bad_splits():
  with pytest.raises(KeyError, match="senpos/accuracy"):
    lot.lot_overall({"clozet/accuracy": 1.0}, "understanding", "test")
  with pytest.raises(ValueError, match="split"):
    lot.nlpcc_overall({}, "train")


def test_nlpcc_overall_of_the_baseline_itself_is_the_weight_sum():
  # Scoring exactly the "small" constants: sum_i w_i * small_i = 6 / sum_i (h_i/s_i) * ...
  human, small = lot.NLPCC_WEIGHTS["validation"]
  scores = dict(zip(lot.NLPCC_METRICS, small))
  w = [h / s for h, s in zip(human, small)]
  assert lot.nlpcc_overall(scores) == pytest.approx(sum(human) / sum(w))


# ------------------------------------------------------------ SeqIO metric fns


def test_outgen_metric_reports_every_score_on_0_100():
  targets = [{"story": "小猫在河边钓鱼。它钓到了一条大鱼。", "outline": ["河边钓鱼", "大鱼"]}]
  result = lot.lot_outgen_metrics(targets, ["小猫在河边钓鱼。它钓到了一条大鱼。"])
  assert result["bleu-1"] == result["bleu-4"] == 100.0
  assert result["coverage"] == result["order"] == 100.0
  assert {"distinct-1", "nlpcc_distinct-4", "overall"} <= set(result)
  assert 0 < result["overall"] <= 100
  with pytest.raises(TypeError, match="targets\\[0\\]"):
    lot.lot_outgen_metrics(["a story"], ["a story"])
  assert not math.isnan(lot.lot_story_metrics(["甲乙"], [""])["bleu-1"])
