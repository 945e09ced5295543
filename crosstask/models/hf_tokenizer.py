"""A model's vocabulary as the tokenizer files transformers' `AutoTokenizer` reads.

Bytes (seqio's `ByteVocabulary`, no extra ids) are `ByT5Tokenizer`'s layout exactly: pad,
eos, unk, then the 256 bytes, so `tokenizer_config.json` naming that class is all it takes.
With extra ids nothing is written: transformers 5's ByT5Tokenizer numbers `<extra_id_N>`
up from id 259, where seqio numbers them down from the top.

SentencePiece: transformers 5's `T5Tokenizer` rebuilds its tokenizer from `spiece.model`
with byte fallback switched off, so a character outside the pieces becomes `<unk>` where
SentencePiece (and so crosstask's training) gives its UTF-8 byte pieces. The files
written here hold the tokenizer transformers' own converter builds from the model's
settings (normalizer, dummy prefix, byte fallback, user-defined pieces), T5's `</s>`
appended, and the vocabulary's extra-id sentinels at the top ids as seqio numbers them;
`tokenizer_config.json` names the generic fast class, so `AutoTokenizer` loads the file
as written and encodes as SentencePiece does.
"""

import json
import os
import pathlib
from typing import Any

# Bytes without a SentencePiece model: pad, eos, unk, then the 256 bytes (seqio's
# ByteVocabulary, crosstask's plain one, ByT5's tokenizer), extra ids on top.
BYTE_IDS = 259
TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
# The generic class: loads `tokenizer.json` unchanged (T5Tokenizer would rebuild it). The
# name is transformers 4's and still an alias of TokenizersBackend in 5.
TOKENIZER_CLASS = "PreTrainedTokenizerFast"


def converter_available() -> bool:
  """Whether transformers (whose SentencePiece converter builds the file) is installed."""
  try:
    # pylint: disable-next=g-import-not-at-top
    from transformers.convert_slow_tokenizer import SpmConverter
  except ImportError:
    return False
  return hasattr(SpmConverter, "build_tokenizer_from_spm_proto")  # transformers >= 5


def save(folder: str | os.PathLike, vocabulary: Any) -> list[str]:
  """Writes `vocabulary`'s tokenizer files into `folder`; returns the names written (none
  where `missing_because` gives a reason)."""
  if missing_because(vocabulary):
    return []
  model_file = getattr(vocabulary, "sentencepiece_model_file", None)
  if model_file is not None:
    return _save_sentencepiece(folder, model_file, vocabulary.extra_ids)
  config = {"tokenizer_class": "ByT5Tokenizer", "extra_ids": 0, "eos_token": "</s>",
            "unk_token": "<unk>", "pad_token": "<pad>"}
  (pathlib.Path(folder) / TOKENIZER_CONFIG).write_text(json.dumps(config, indent=2))
  return [TOKENIZER_CONFIG]


def missing_because(vocabulary: Any) -> str | None:
  """Why `save` writes no tokenizer for `vocabulary`, or None where it writes one."""
  if getattr(vocabulary, "sentencepiece_model_file", None) is not None:
    if not converter_available():
      return ("transformers >= 5, which builds tokenizer.json, is not installed here; "
              "T5Tokenizer reads spiece.model without its byte fallback (characters "
              "outside the pieces become <unk>)")
    return None
  if vocabulary.vocab_size - vocabulary.extra_ids == BYTE_IDS:
    if vocabulary.extra_ids:
      return (f"transformers' ByT5Tokenizer numbers the {vocabulary.extra_ids} <extra_id_N> "
              "up from id 259, seqio down from the top: only bytes without extra ids match")
    return None
  return f"no tokenizer files for a {type(vocabulary).__name__}"


def _save_sentencepiece(folder: str | os.PathLike, model_file: str | os.PathLike,
                        extra_ids: int) -> list[str]:
  """Writes `tokenizer.json` and `tokenizer_config.json` for `model_file` plus `extra_ids`
  sentinels into `folder` (`save` has checked that transformers can build them)."""
  # pylint: disable=g-import-not-at-top
  from tokenizers import processors
  from transformers.convert_slow_tokenizer import SpmConverter, import_protobuf
  # pylint: enable=g-import-not-at-top
  proto = import_protobuf().ModelProto()
  proto.ParseFromString(pathlib.Path(model_file).read_bytes())
  pieces = [p.piece for p in proto.pieces]
  # seqio numbers extra ids down from the top: <extra_id_0> is the last id.
  sentinels = [f"<extra_id_{i}>" for i in range(extra_ids)]
  vocab = [(p.piece, p.score) for p in proto.pieces] + [(s, 0.0) for s in reversed(sentinels)]
  tokenizer = SpmConverter.build_tokenizer_from_spm_proto(proto=proto, vocab=vocab)
  spec = proto.trainer_spec
  eos = pieces[spec.eos_id]
  tokenizer.post_processor = processors.TemplateProcessing(
      single=f"$A {eos}", pair=f"$A {eos} $B {eos}", special_tokens=[(eos, spec.eos_id)])
  folder = pathlib.Path(folder)
  tokenizer.save(str(folder / TOKENIZER_JSON))
  config = {"tokenizer_class": TOKENIZER_CLASS, "eos_token": eos, "unk_token": pieces[spec.unk_id]}
  if spec.pad_id >= 0:  # T5's layout has one (id 0); SentencePiece's default does not
    config["pad_token"] = pieces[spec.pad_id]
  if sentinels:
    config["additional_special_tokens"] = sentinels
  (folder / TOKENIZER_CONFIG).write_text(json.dumps(config, indent=2, ensure_ascii=False))
  return [TOKENIZER_JSON, TOKENIZER_CONFIG]
