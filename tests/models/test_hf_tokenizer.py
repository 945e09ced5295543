"""An exported folder's tokenizer, as transformers' `AutoTokenizer` loads it, gives the ids
crosstask trained with: SentencePiece's own, byte fallback, sentinels and `</s>` included."""

import itertools
import shutil
import sys
import unicodedata

import seqio
import transformers

import runtime_helpers
from crosstask import plain_vocabularies
from crosstask.models import hf_import
from crosstask.models import hf_tokenizer

# Beside the letter words the test vocabulary was trained on: characters it lacks (spelt
# in UTF-8 byte pieces by SentencePiece), runs of whitespace, compatibility forms.
TEXTS = ("abcd efgh ijab", "  two  spaces,\ta tab and\nA newline ", "中文，标点！", "emoji 😀 𠀀 龘",
         "ﬁ ① ＡＢＣ", "", "cafe\u0301 x\u3000y")


def _exported(folder, vocabulary):
  """The tokenizer files an export writes, in `folder`, as AutoTokenizer loads them."""
  folder.mkdir()
  (folder / 'config.json').write_text('{"model_type": "t5"}')
  model_file = getattr(vocabulary, 'sentencepiece_model_file', None)
  if model_file:
    shutil.copyfile(model_file, folder / hf_import.TOKENIZER_FILE)
  written = hf_tokenizer.save(folder, vocabulary)
  assert written == ([hf_tokenizer.TOKENIZER_JSON, hf_tokenizer.TOKENIZER_CONFIG] if model_file
                     else [hf_tokenizer.TOKENIZER_CONFIG])
  return transformers.AutoTokenizer.from_pretrained(str(folder))


def _assert_encodes_as(tokenizer, vocabulary, texts):
  for text in texts:
    ids = vocabulary.encode(text)
    assert tokenizer(text).input_ids == ids + [vocabulary.eos_id], text
    assert tokenizer.decode(ids + [vocabulary.eos_id], skip_special_tokens=True) == \
        vocabulary.decode(ids), text


def test_auto_tokenizer_reads_an_export_as_sentencepiece_encodes_with_byte_fallback(tmp_path):
  vocabulary = seqio.SentencePieceVocabulary(
      runtime_helpers.sentencepiece_model(tmp_path / 'trained'), extra_ids=100)
  tokenizer = _exported(tmp_path / 'hf', vocabulary)
  _assert_encodes_as(tokenizer, vocabulary, TEXTS)
  # The Chinese line is spelt in byte pieces (ids 3-258 after pad, eos and unk), not <unk>:
  # one a byte of its NFKC form (the trainer's normaliser: full-width commas become ',').
  chinese = vocabulary.encode(TEXTS[2])
  assert 2 not in chinese and sum(3 <= i < 259 for i in chinese) == len(
      unicodedata.normalize('NFKC', TEXTS[2]).encode())
  # seqio's sentinels: <extra_id_0> is the top id, <extra_id_99> 99 below it; written in
  # text, as span-corrupted inputs are, each is its one id.
  assert len(tokenizer) == vocabulary.vocab_size
  assert tokenizer.convert_tokens_to_ids(['<extra_id_0>', '<extra_id_99>']) == [
      vocabulary.vocab_size - 1, vocabulary.vocab_size - 100]
  assert tokenizer('abcd <extra_id_0> efgh').input_ids == (
      vocabulary.encode('abcd') + [vocabulary.vocab_size - 1] + vocabulary.encode('efgh') + [1])
  assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)


def test_auto_tokenizer_reads_the_csl_vocabulary_as_sentencepiece_on_the_benchmarks_text(
    tmp_path, official_data):
  # The CSL models' vocabulary (NFKC normaliser, 100 sentinel pieces of its own, byte
  # fallback) on the Chinese text it tokenizes in training: CSL and LOT lines as read.
  vocabulary = seqio.SentencePieceVocabulary(
      str(official_data / 'vocab' / 'sentencepiece_cn.model'))
  tokenizer = _exported(tmp_path / 'hf', vocabulary)
  files = sorted(official_data.glob('csl/**/*.tsv')) + sorted(official_data.glob('lot/**/*.jsonl'))
  texts = [line.rstrip('\n') for f in files[:12]
           for line in itertools.islice(f.open(encoding='utf-8'), 100)]
  assert len(texts) >= 600
  _assert_encodes_as(tokenizer, vocabulary, texts + ['<extra_id_0> 𠀀'])


def test_a_bytes_model_exports_byt5s_tokenizer_which_reads_as_seqios_bytes(tmp_path):
  # crosstask's default vocabulary: ByT5's layout (pad, eos, unk, then the 256 bytes).
  vocabulary = seqio.ByteVocabulary()
  tokenizer = _exported(tmp_path / 'hf', vocabulary)
  assert type(tokenizer).__name__ == 'ByT5Tokenizer' and len(tokenizer) == 259
  _assert_encodes_as(tokenizer, vocabulary, TEXTS)
  # With extra ids the two number the sentinels from opposite ends: nothing is written.
  with_sentinels = seqio.ByteVocabulary(extra_ids=4)
  assert hf_tokenizer.save(tmp_path, with_sentinels) == []
  assert 'up from id 259' in hf_tokenizer.missing_because(with_sentinels)


def test_without_transformers_nothing_is_written_and_the_reason_is_given(tmp_path, monkeypatch):
  # An export on a machine without transformers keeps spiece.model alone; the export
  # job prints `missing_because`.
  vocabulary = plain_vocabularies.get(runtime_helpers.sentencepiece_model(tmp_path / 'trained'))
  assert hf_tokenizer.missing_because(vocabulary) is None
  monkeypatch.setitem(sys.modules, 'transformers.convert_slow_tokenizer', None)
  assert not hf_tokenizer.converter_available()
  assert hf_tokenizer.save(tmp_path, vocabulary) == [] and not (
      tmp_path / hf_tokenizer.TOKENIZER_JSON).exists()
  assert 'without its byte fallback' in hf_tokenizer.missing_because(vocabulary)
