"""English sentence splitting for `rougeLsum`, offline and deterministic.

HF's `rouge` scripts join `nltk.sent_tokenize` sentences with newlines before
scoring `rougeLsum`; nltk's punkt model is a download, so crosstask uses pysbd
(rule-based, no data files; SciTLDR's own requirements pin it) instead.
"""

import functools
import re

_SPACES = re.compile(r"\s+")


@functools.cache
def _segmenter():
  import pysbd  # pylint: disable=g-import-not-at-top  # only metrics that split need it
  return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
  """Sentences of `text` (whitespace collapsed first), none empty."""
  text = _SPACES.sub(" ", text).strip()
  if not text:
    return []
  return [s.strip() for s in _segmenter().segment(text) if s.strip()]


def sentences_per_line(text: str) -> str:
  """`text` with one sentence per line: the input rouge-score's rougeLsum expects."""
  return "\n".join(split_sentences(text))
