"""ROUGE-1.5.5 as files2rouge runs it: SciTLDR's official scorer, in Python.

`allenai/scitldr scripts/cal-rouge.py` scores every (prediction, reference)
pair with `files2rouge.run`, which splits both texts into sentences at " .",
writes them in pyrouge's SEE html and runs `ROUGE-1.5.5.pl -c 95 -r 1000 -n 2
-a -m` on the pair. The differences from rouge-score are small but real, so
this module follows the Perl line by line:

- tokens: ASCII letters lower-cased, runs of [a-z0-9]; everything else
  (hyphens, non-ASCII, punctuation) separates tokens and is dropped;
- a sentence's text ends at its first "<" (the SEE reader's `[^<]+`), and a
  sentence that starts with "<" is dropped;
- tokens longer than 3 characters go through the script's own Porter stemmer
  (Martin Porter's Perl release with Chin-Yew Lin's 2004 change to step 4),
  after a WordNet-exception lookup. files2rouge ships `WordNet-2.0.exc.db` as
  an empty Berkeley DB (12,288 bytes, no keys), so the lookup never hits
  there; pass `exceptions` to model a rebuilt database;
- ROUGE-L is summary level: each reference sentence's union LCS against every
  predicted sentence, each token clipped by its unigram counts;
- recall and precision are printed to 5 decimals, F is computed from those
  printed values and printed to 5 decimals, and cal-rouge parses the print.
"""

import functools
import re
from typing import Mapping

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_TOKEN = re.compile(r"[a-z0-9]+")
_SEE_TEXT = re.compile(r"[^<]+")
KEYS = ("rouge1", "rouge2", "rougeL")

# --- Porter stemmer, as `sub stem` in ROUGE-1.5.5.pl --------------------------

_c = "[^aeiou]"
_v = "[aeiouy]"
_C = f"{_c}[^aeiouy]*"
_V = f"{_v}[aeiou]*"
_MGR0 = re.compile(f"^({_C})?{_V}{_C}")
_MEQ1 = re.compile(f"^({_C})?{_V}{_C}({_V})?$")
_MGR1 = re.compile(f"^({_C})?{_V}{_C}{_V}{_C}")
_HAS_VOWEL = re.compile(f"^({_C})?{_v}")
_CVC = re.compile(f"^{_C}{_v}[^aeiouwxy]$")
_STEP2 = {"ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance",
          "izer": "ize", "bli": "ble", "alli": "al", "entli": "ent", "eli": "e",
          "ousli": "ous", "ization": "ize", "ation": "ate", "ator": "ate",
          "alism": "al", "iveness": "ive", "fulness": "ful", "ousness": "ous",
          "aliti": "al", "iviti": "ive", "biliti": "ble", "logi": "log"}
_STEP2_RE = re.compile(
    "(ational|tional|enci|anci|izer|bli|alli|entli|eli|ousli|ization|ation|"
    "ator|alism|iveness|fulness|ousness|aliti|iviti|biliti|logi)$")
_STEP3 = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic",
          "ful": "", "ness": ""}
_STEP3_RE = re.compile("(icate|ative|alize|iciti|ical|ful|ness)$")
_STEP4_RE = re.compile("(al|ance|ence|er|ic|able|ible|ant|ement|ou|ism|ate|iti|ous|ive|ize)$")


def porter_stem(word: str) -> str:
  """ROUGE-1.5.5's Porter stemmer (its `sub stem`), for a lower-case token."""
  if len(word) < 3:
    return word
  w = word
  initial_y = w[0] == "y"
  if initial_y:  # an initial y is a consonant: hide it from the vowel classes
    w = "Y" + w[1:]
  # Step 1a
  if m := re.search("(ss|i)es$", w):
    w = w[:m.start()] + m.group(1)
  elif m := re.search("([^s])s$", w):
    w = w[:m.start()] + m.group(1)
  # Step 1b
  if m := re.search("eed$", w):
    if _MGR0.search(w[:m.start()]):
      w = w[:-1]
  elif m := re.search("(ed|ing)$", w):
    stem = w[:m.start()]
    if _HAS_VOWEL.search(stem):
      w = stem
      if re.search("(at|bl|iz)$", w):
        w += "e"
      elif re.search(r"([^aeiouylsz])\1$", w):
        w = w[:-1]
      elif _CVC.search(w):
        w += "e"
  # Step 1c
  if m := re.search("y$", w):
    stem = w[:m.start()]
    if _HAS_VOWEL.search(stem):
      w = stem + "i"
  # Step 2
  if m := _STEP2_RE.search(w):
    stem = w[:m.start()]
    if _MGR0.search(stem):
      w = stem + _STEP2[m.group(1)]
  # Step 3
  if m := _STEP3_RE.search(w):
    stem = w[:m.start()]
    if _MGR0.search(stem):
      w = stem + _STEP3[m.group(1)]
  # Step 4, with Lin's change: "-ement" is tried first, then "-ment" and "-ent"
  # each on its own (not as alternatives of one rule).
  if m := _STEP4_RE.search(w):
    stem = w[:m.start()]
    if _MGR1.search(stem):
      w = stem
  if m := re.search("ment$", w):
    stem = w[:m.start()]
    if _MGR1.search(stem):
      w = stem
  if m := re.search("ent$", w):
    stem = w[:m.start()]
    if _MGR1.search(stem):
      w = stem
  elif m := re.search("(s|t)(ion)$", w):
    stem = w[:m.start()] + m.group(1)
    if _MGR1.search(stem):
      w = stem
  # Step 5
  if m := re.search("e$", w):
    stem = w[:m.start()]
    if _MGR1.search(stem) or (_MEQ1.search(stem) and not _CVC.search(stem)):
      w = stem
  if re.search("ll$", w) and _MGR1.search(w):
    w = w[:-1]
  if initial_y:
    w = w[0].lower() + w[1:]
  return w


_cached_stem = functools.lru_cache(maxsize=1 << 16)(porter_stem)

# --- text to sentences to tokens ----------------------------------------------


def sentences(text: str, eos: str = ".") -> list[str]:
  """The sentences ROUGE-1.5.5 reads from files2rouge's file for `text`.

  files2rouge strips the line and turns every " <eos>" into " <eos>\\n";
  pyrouge puts each line in a SEE anchor, and the script keeps a line's text
  up to its first "<" (a line that is empty or starts with "<" is skipped).
  """
  lines = (" %s\n" % eos).join(text.strip().split(" %s" % eos)).split("\n")
  kept = []
  for line in lines:
    if m := _SEE_TEXT.match(line):
      kept.append(m.group(0))
  return kept


def tokens(sentence: str, *, stem: bool = True,
           exceptions: Mapping[str, str] | None = None) -> list[str]:
  """One sentence's tokens as `readText` + `tokenizeText` make them (`-m` = stem)."""
  words = _TOKEN.findall(sentence.translate(_LOWER))
  if not stem:
    return words
  out = []
  for word in words:
    if len(word) > 3:
      if exceptions is not None and word in exceptions:
        word = exceptions[word]
      else:
        word = _cached_stem(word)
    out.append(word)
  return out


# --- scores -------------------------------------------------------------------


def _printed(x: float) -> float:
  """A value as the script prints it (`sprintf("%7.5f")`) and cal-rouge reads it."""
  return float("%.5f" % x)


def _f(hit: int, reference_count: int, prediction_count: int) -> float:
  recall = _printed(hit / reference_count) if reference_count else 0.0
  precision = _printed(hit / prediction_count) if prediction_count else 0.0
  alpha = 0.5
  denominator = (1 - alpha) * precision + alpha * recall
  if denominator > 0:
    return _printed((precision * recall) / denominator)
  return 0.0


def _ngrams(words: list[str], n: int) -> dict[str, int]:
  counts: dict[str, int] = {}
  for i in range(len(words) - n + 1):
    gram = " ".join(words[i:i + n])
    counts[gram] = counts.get(gram, 0) + 1
  return counts


def _ngram_f(reference: list[str], prediction: list[str], n: int) -> float:
  ref, pred = _ngrams(reference, n), _ngrams(prediction, n)
  hit = sum(min(count, pred[gram]) for gram, count in ref.items() if gram in pred)
  return _f(hit, sum(ref.values()), sum(pred.values()))


def _mark_lcs(model: list[str], peer: list[str], hit_mask: list[int]) -> None:
  """`lcs_inner` + `markLCS`: mark the model tokens on the script's LCS path."""
  m, n = len(model), len(peer)
  if m == 0:
    return
  c = [[0] * (n + 1) for _ in range(m + 1)]
  b = [[0] * (n + 1) for _ in range(m + 1)]  # 1 diagonal, 2 up, 3 left
  for i in range(1, m + 1):
    for j in range(1, n + 1):
      if model[i - 1] == peer[j - 1]:
        c[i][j] = c[i - 1][j - 1] + 1
        b[i][j] = 1
      elif c[i - 1][j] >= c[i][j - 1]:
        c[i][j] = c[i - 1][j]
        b[i][j] = 2
      else:
        c[i][j] = c[i][j - 1]
        b[i][j] = 3
  i, j = m, n
  while i and j:
    move = b[i][j]
    if move == 1:
      i -= 1
      j -= 1
      hit_mask[i] = 1
    elif move == 2:
      i -= 1
    else:
      j -= 1


def _lcs_f(reference: list[list[str]], prediction: list[list[str]]) -> float:
  """`computeLCSScore`: summary-level union LCS, clipped by unigram counts."""
  ref_counts = _ngrams([w for s in reference for w in s], 1)
  pred_counts = _ngrams([w for s in prediction for w in s], 1)
  hit = base = 0
  for model_sentence in reference:
    hit_mask = [0] * len(model_sentence)
    base += len(model_sentence)
    for peer_sentence in prediction:
      _mark_lcs(model_sentence, peer_sentence, hit_mask)
    for token, marked in zip(model_sentence, hit_mask):
      if marked and ref_counts.get(token, 0) > 0 and pred_counts.get(token, 0) > 0:
        hit += 1
        ref_counts[token] -= 1
        pred_counts[token] -= 1
  return _f(hit, base, sum(len(s) for s in prediction))


def pair_scores(reference: str, prediction: str, *, stem: bool = True,
                exceptions: Mapping[str, str] | None = None,
                eos: str = ".") -> dict[str, float]:
  """ROUGE-1/2/L Average_F (0-1, 5 decimals) that files2rouge prints for one pair.

  An empty side scores 0 (files2rouge itself refuses an empty line).
  """
  ref = [tokens(s, stem=stem, exceptions=exceptions) for s in sentences(reference, eos)]
  pred = [tokens(s, stem=stem, exceptions=exceptions) for s in sentences(prediction, eos)]
  ref_words = [w for s in ref for w in s]
  pred_words = [w for s in pred for w in s]
  return {"rouge1": _ngram_f(ref_words, pred_words, 1),
          "rouge2": _ngram_f(ref_words, pred_words, 2),
          "rougeL": _lcs_f(ref, pred)}
