"""English sentence splitting for `rougeLsum`, as HF's scripts split where they can run.

HF's `rouge` scripts join `nltk.sent_tokenize` sentences with newlines before
scoring `rougeLsum`. That needs NLTK's Punkt model, a download
(`nltk.download('punkt_tab')`): where it is installed crosstask splits with it, as
they do; where it is not (offline, and where those scripts stop) it uses pysbd
(rule-based, no data files; SciTLDR's own requirements pin it).
"""

import functools
import re

_SPACES = re.compile(r"\s+")


@functools.cache
def punkt_installed() -> bool:
  """Whether NLTK finds its English Punkt model (`sent_tokenize` and `word_tokenize`
  need it). Asked once a process: `cache_clear()` after installing it."""
  import nltk  # pylint: disable=g-import-not-at-top  # seconds to import: on first use
  try:
    nltk.data.find("tokenizers/punkt_tab/english/")
  except LookupError:
    return False
  return True


@functools.cache
def _segmenter():
  import pysbd  # pylint: disable=g-import-not-at-top  # only metrics that split need it
  return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str, *, punkt: bool | None = None) -> list[str]:
  """Sentences of `text`, none empty (whitespace collapsed within each): Punkt's
  where `punkt` (None: where `punkt_installed()`), else pysbd's.

  A newline always ends a sentence, as it does for HF's scorers: they join punkt's
  sentences with newlines, a newline inside a punkt sentence stays, and rouge-score's
  rougeLsum breaks at every one."""
  if punkt is None:
    punkt = punkt_installed()
  if punkt:
    from nltk.tokenize import sent_tokenize  # pylint: disable=g-import-not-at-top
    lines = [line for sentence in sent_tokenize(text.strip()) for line in sentence.split("\n")]
    return [line for line in (_SPACES.sub(" ", l).strip() for l in lines) if line]
  out = []
  for line in text.split("\n"):
    line = _SPACES.sub(" ", line).strip()
    if line:
      out.extend(s.strip() for s in _segmenter().segment(line) if s.strip())
  return out


def sentences_per_line(text: str) -> str:
  """`text` with one sentence per line: the input rouge-score's rougeLsum expects."""
  return "\n".join(split_sentences(text))
