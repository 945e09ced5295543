"""A SentencePiece vocabulary as transformers' fast-tokenizer files (`tokenizer.json`).

Why: transformers 5's `T5Tokenizer` rebuilds its tokenizer from `spiece.model` with byte
fallback switched off, so a character outside the pieces becomes `<unk>` where
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

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
# The generic class: loads `tokenizer.json` unchanged (T5Tokenizer would rebuild it). The
# name is transformers 4's and still an alias of TokenizersBackend in 5.
TOKENIZER_CLASS = "PreTrainedTokenizerFast"


def converter_available() -> bool:
  """Whether transformers (whose SentencePiece converter builds the file) is installed."""
  try:
    from transformers.convert_slow_tokenizer import SpmConverter  # pylint: disable=g-import-not-at-top
  except ImportError:
    return False
  return hasattr(SpmConverter, "build_tokenizer_from_spm_proto")  # transformers >= 5


def save(folder: str | os.PathLike, model_file: str | os.PathLike,
         extra_ids: int = 0) -> list[str]:
  """Writes `tokenizer.json` and `tokenizer_config.json` for `model_file` plus `extra_ids`
  sentinels into `folder`; returns the names written (none where transformers >= 5 is
  not installed: see `converter_available`)."""
  if not converter_available():
    return []
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
