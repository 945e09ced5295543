"""NLTK's Punkt model present or absent, whatever this machine has installed."""

import pytest

from crosstask.metrics import cmrc
from crosstask.metrics import sentences
from crosstask.metrics import summary_rouge


def _forget_punkt():
  import nltk  # pylint: disable=g-import-not-at-top
  nltk.tokenize._get_punkt_tokenizer.cache_clear()  # pylint: disable=protected-access
  sentences.punkt_installed.cache_clear()
  cmrc._word_tokens.cache_clear()  # pylint: disable=protected-access
  summary_rouge._cached_pair_scores.cache_clear()  # pylint: disable=protected-access


@pytest.fixture
def punkt_model(tmp_path, monkeypatch):
  """A toy English Punkt model (one abbreviation, `dr`; the real one is a download) as
  the only one NLTK finds, with every cache that remembers a model dropped around it."""
  import nltk  # pylint: disable=g-import-not-at-top
  model = tmp_path / "tokenizers" / "punkt_tab" / "english"
  model.mkdir(parents=True)
  for name in ("collocations.tab", "sent_starters.txt", "ortho_context.tab"):
    (model / name).write_text("")
  (model / "abbrev_types.txt").write_text("dr\n")
  monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
  _forget_punkt()
  yield
  _forget_punkt()


@pytest.fixture
def no_punkt(tmp_path, monkeypatch):
  """No Punkt model where NLTK looks, as on an offline machine."""
  import nltk  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
  _forget_punkt()
  yield
  _forget_punkt()
