"""Tokenizers for text metrics, so that Chinese text is scored at all.

rouge-score's default tokenizer keeps only [a-z0-9] runs and so drops every
Chinese character; these tokenizers give Chinese a token per character.
"""

import functools
import re
import unicodedata
from typing import Callable

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
# One CJK ideograph, or a run of other letters/digits (no underscore).
_CHAR_TOKEN = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")


def char_tokens(text: str) -> list[str]:
  """CJK characters one token each, Latin/digit runs one lower-cased token.

  Text is NFKC-normalised first (full-width letters and digits become ASCII);
  punctuation, symbols and spaces are dropped.
  """
  text = unicodedata.normalize("NFKC", text).lower()
  return _CHAR_TOKEN.findall(text)


@functools.cache
def _word_tokenizer():
  # rouge-score imports nltk (seconds); only pay for it when words are asked for.
  from rouge_score import tokenizers  # pylint: disable=g-import-not-at-top
  return tokenizers.DefaultTokenizer(use_stemmer=False)


def word_tokens(text: str) -> list[str]:
  """rouge-score's default English tokenizer (lower-cased [a-z0-9] runs)."""
  return _word_tokenizer().tokenize(text)


class _MemoStemmer:
  """The Porter stemmer rouge-score builds, memoised: stemming the same words
  over and over is most of the cost of scoring many references."""

  def __init__(self):
    from nltk.stem import porter  # pylint: disable=g-import-not-at-top
    self.stem = functools.lru_cache(maxsize=1 << 17)(porter.PorterStemmer().stem)


@functools.cache
def _stemmer() -> _MemoStemmer:
  return _MemoStemmer()


def stemmed_word_tokens(text: str) -> list[str]:
  """rouge-score's English tokenizer with its Porter stemming (`use_stemmer=True`).

  Tokens longer than 3 characters are stemmed, as in HF's `rouge` metric (the
  CiteSum/XSum/Gigaword numbers). SciTLDR's ROUGE-1.5.5 `-m` has its own Porter
  stemmer, which `rouge155` carries.
  """
  from rouge_score import tokenize as rouge_tokenize  # pylint: disable=g-import-not-at-top
  return rouge_tokenize.tokenize(text, _stemmer())


def bert4keras_tokens(text: str) -> list[str]:
  """Every character but the ASCII space one lower-cased token, punctuation included.

  Exactly bert4keras's CSL title-generation evaluation, which scores
  `' '.join(title).lower().split(' ')` (other whitespace stays a token), less
  the empty strings that split makes of each space.
  """
  return [c.lower() for c in text if c != " "]


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "char": char_tokens,
    "word": word_tokens,
    "word_stem": stemmed_word_tokens,
    "bert4keras": bert4keras_tokens,
}


def get_tokenizer(name: str) -> Callable[[str], list[str]]:
  """The tokenizer function called `name`; a clear error for unknown names."""
  try:
    return TOKENIZERS[name]
  except KeyError:
    raise ValueError(
        f"unknown tokenizer {name!r}; choose one of {sorted(TOKENIZERS)}") from None


def tokenize(text: str, tokenizer: str = "char") -> list[str]:
  """Tokens of `text` under the named tokenizer."""
  return get_tokenizer(tokenizer)(text)
