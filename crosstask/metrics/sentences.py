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
  """Sentences of `text`, none empty: each line's (whitespace collapsed within it).

  A newline always ends a sentence, as it does for HF's scorers: they join punkt's
  sentences with newlines, a newline inside a punkt sentence stays, and rouge-score's
  rougeLsum breaks at every one."""
  out = []
  for line in text.split("\n"):
    line = _SPACES.sub(" ", line).strip()
    if line:
      out.extend(s.strip() for s in _segmenter().segment(line) if s.strip())
  return out


def sentences_per_line(text: str) -> str:
  """`text` with one sentence per line: the input rouge-score's rougeLsum expects."""
  return "\n".join(split_sentences(text))
