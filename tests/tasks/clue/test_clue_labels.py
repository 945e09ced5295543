"""Label maps: complete, distinct, and safe as generation targets."""

import pytest

from crosstask.tasks.clue import labels as L


def test_label_maps():
  assert len(L.LABELS["tnews"]) == 15 and len(L.LABELS["iflytek"]) == 119
  assert len(L.LABELS["csldcp"]) == 67
  assert L.LABELS["iflytek"]["61"] == "语言(非英语)" and L.LABELS["iflytek"]["90"] == "体育咨讯"
  for kind, labels in L.LABELS.items():
    assert len(set(labels.values())) == len(labels), kind  # words map back uniquely
  assert L.label_id("tnews", " 教育 ") == "108" and L.label_id("tnews", "news_edu") is None


def test_csldcp_labels_are_the_csl_disciplines():
  try:
    from crosstask.tasks.csl.schema import DISCIPLINES  # pylint: disable=g-import-not-at-top
  except ImportError:
    from crosstask.tasks.csl.fields import DISCIPLINES  # pylint: disable=g-import-not-at-top
  assert L.CSLDCP == tuple(DISCIPLINES)


def test_every_label_word_survives_sentencepiece(official_data):
  spm = pytest.importorskip("sentencepiece")
  sp = spm.SentencePieceProcessor(
      model_file=str(official_data / "vocab" / "sentencepiece_cn.model"))
  for kind in L.LABELS:
    for word in L.words(kind):
      ids = sp.encode(word)
      assert sp.unk_id() not in ids and sp.decode(ids) == word, (kind, word)
