"""REF handling: the paper's rule, the released script's rule, and the "We" rewrite."""

import pytest

from crosstask.tasks.citesum import readers
from crosstask.tasks.citesum import ref


def _eval_tldr_script(line: str) -> str:
  """The released pipeline on one prediction: run_seq2seq.py's decode clean-up
  (transformers/tokenization_utils_base.py clean_up_tokenization, vendored there) and
  strip, then `morningmoni/CiteSum eval_tldr.py` post_process_zeroshot_REF, as released."""
  line = (line.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",")
          .replace(" ' ", "'").replace(" n't", "n't").replace(" 'm", "'m")
          .replace(" 's", "'s").replace(" 've", "'ve").replace(" 're", "'re")).strip()
  line = line.replace('In REF,', '')
  if line.startswith('REF'):
    line = line.replace('REF', 'this paper')
  else:
    line = line.replace('REF', '')
  line = line.replace('REF', '')
  return line.strip()


CRAFTED = [
    "REF proposed a convolutional neural network for sentence classification.",
    "In REF, the authors propose a new loss.",
    "In REF , the authors propose a new loss.",
    "Zhang et al REF proposed a graph network.",
    "REF and REF showed that models leak data.",
    "Models leak data REF .",
    "REFERENCE resolution is studied in REF.",
    "  REF introduces a benchmark.",
    "In REF , the authors ' method does n't scale , is it ?",
    "This paper proposes a method.",
    "",
]


@pytest.mark.parametrize("text", CRAFTED)
def test_official_mode_is_the_released_script(text):
  assert ref.strip_ref(text, mode="official") == _eval_tldr_script(text)


def test_official_mode_quirks_are_kept():
  assert ref.strip_ref("REF and REF showed it.", mode="official") == \
      "this paper and this paper showed it."
  assert ref.strip_ref("A REFERENCE resolver", mode="official") == "A ERENCE resolver"
  assert ref.strip_ref("REFERENCE resolution", mode="official") == "this paperERENCE resolution"
  # The decoder's clean-up first: "In REF ," is "In REF," by the time the rule sees it.
  assert ref.strip_ref("In REF , we see", mode="official") == "we see"
  assert ref.strip_ref("Models leak data REF .", mode="official") == "Models leak data ."


@pytest.mark.parametrize("text, expected", [
    ("REF proposed a CNN.", "This paper proposed a CNN."),
    ("In REF , the authors propose a loss.", "the authors propose a loss."),
    ("In REF, the authors propose a loss.", "the authors propose a loss."),
    ("Zhang et al REF proposed a graph network.", "Zhang et al proposed a graph network."),
    ("REF and REF showed that models leak data.", "This paper and showed that models leak data."),
    ("Models leak data REF .", "Models leak data."),
    ("REFERENCE resolution is studied in REF.", "REFERENCE resolution is studied in."),
    ("  REF  introduces a benchmark .", "This paper introduces a benchmark."),
    ("This paper proposes a method.", "This paper proposes a method."),
])
def test_paper_mode(text, expected):
  assert ref.strip_ref(text) == expected


def test_paper_mode_news_lead_deletes_every_ref():
  assert ref.strip_ref("REF reports that oil prices fell REF .", lead="") == \
      "reports that oil prices fell."
  with pytest.raises(ValueError, match="mode='exact'"):
    ref.strip_ref("REF", mode="exact")


def test_rewrite_we():
  assert ref.rewrite_we("We propose X.") == "This paper REF propose X."
  assert ref.rewrite_we(" We propose X.") == " We propose X."
  assert ref.rewrite_we(" We propose X.", strip_first=True) == "This paper REF propose X."
  assert ref.rewrite_we("Weak supervision helps.") == "Weak supervision helps."
  assert ref.strip_ref(ref.rewrite_we("We propose X.")) == "This paper propose X."


def test_rewrite_we_counts_on_scitldr_train(official_data):
  train = [r["tldr"] for r in readers.read_scitldr("train", official_data)]
  assert sum(ref.starts_with_we(t) for t in train) == 872  # = the script's max_train_samples
  assert sum(ref.starts_with_we(t, strip_first=True) for t in train) == 879
