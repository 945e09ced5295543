"""Arrow prompts, the multi-field text layout, and lenient parsing: the one implementation.

Layout (why: a generated target must parse back into fields with whatever
vocabulary, so it uses no newlines, which SentencePiece normalises away):

* A single field is written as its bare value (list fields joined by their
  separator), as benchmarks ship their targets.
* Several fields are written in schema order as `<label>：<value>` joined by
  `；` (zh) or as `<Label>: <value>` joined by `; ` (en), e.g.
  `标题：基于…的研究；关键词：a_b_c` / `Title: …; Keywords: a_b_c`.
* Inputs are the arrow prompt, a space, and every input field labelled
  (`摘要->标题 摘要：…`), even a single one.
* A field is found by its marker: separator + label + colon (for the first
  field, label + colon at the start). `sanitize` rewrites the colon of any
  marker that occurs inside a value (zh: to U+2236 `∶`, which NFKC keeps; en:
  `: ` to ` :`), so markers never collide with content, also after
  SentencePiece decoding.

`parse_fields` never raises on text: missing or garbled markers give empty
fields (model predictions are untrusted); it also accepts the NFKC form
(`标题:…;关键词:…`) that SentencePiece decoding produces.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence

from crosstask.tasks.common.schema import Field
from crosstask.tasks.common.schema import Schema
from crosstask.text import feature_text as _read_text

LANGS = ("zh", "en")
COLON = {"zh": "：", "en": ": "}
SEP = {"zh": "；", "en": "; "}
ARROW = {"zh": "->", "en": " -> "}
PLUS = {"zh": "+", "en": " + "}
# What a marker's colon becomes inside a value. For zh it is U+2236 (RATIO): it
# looks like a colon and, unlike `：` and `:`, survives the NFKC normalisation
# that SentencePiece decoding applies, so a defused marker stays defused there.
_DEFUSED_COLON = {"zh": "\u2236", "en": " :"}


def _nfkc(text: str) -> str:
  return unicodedata.normalize("NFKC", text)


def _check_lang(lang: str) -> str:
  if lang not in LANGS:
    raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
  return lang


def marker(field: Field, lang: str, first: bool) -> str:
  """The string that opens `field` in a multi-field layout."""
  head = "" if first else SEP[lang]
  return f"{head}{field.label(lang)}{COLON[lang]}"


def sanitize(value: str, schema: Schema | None = None) -> str:
  """`value` on one line, with any of `schema`'s field markers inside it defused.

  Both languages' markers are defused, in exact and NFKC form, since
  `parse_fields` matches either.
  """
  value = " ".join(value.split())
  if schema is None:
    return value
  for lang in LANGS:
    colons = (COLON[lang], _nfkc(COLON[lang]))
    for f in schema.fields:
      if lang not in f.labels:
        continue
      m = marker(f, lang, first=False)
      for form, colon in zip((m, _nfkc(m)), colons):
        value = value.replace(form, form[:-len(colon)] + _DEFUSED_COLON[lang])
  return value


def value_text(field: Field, value, schema: Schema | None = None) -> str:
  """One field's value as one line of text (a list joined by the separator).

  Pass the schema to defuse its markers inside the value (the layout does).
  """
  if field.is_list and not isinstance(value, str):
    return field.separator.join(sanitize(str(v), schema) for v in value)
  return sanitize(str(value), schema)


def _labelled(schema: Schema, record: Mapping, fields: Sequence[str], lang: str) -> str:
  return "".join(marker(schema[f], lang, i == 0) + value_text(schema[f], record[f], schema)
                 for i, f in enumerate(fields))


def format_fields(schema: Schema, record: Mapping, fields: Sequence[str], lang: str) -> str:
  """The layout of `fields` of `record`: a bare value, or labelled fields."""
  _check_lang(lang)
  fields = schema.check(fields)
  if len(fields) == 1:
    return value_text(schema[fields[0]], record[fields[0]], schema)
  return _labelled(schema, record, fields, lang)


def prompt(schema: Schema, inputs: Sequence[str], outputs: Sequence[str], lang: str) -> str:
  """The arrow prompt, e.g. `摘要+学科->关键词` or `Abstract + Discipline -> Keywords`."""
  _check_lang(lang)
  left = PLUS[lang].join(schema[f].label(lang) for f in schema.check(inputs, "inputs"))
  right = PLUS[lang].join(schema[f].label(lang) for f in schema.check(outputs, "outputs"))
  return f"{left}{ARROW[lang]}{right}"


def format_inputs(schema: Schema, record: Mapping, inputs: Sequence[str],
                  outputs: Sequence[str], lang: str, prompt_text: str | None = None) -> str:
  """Model input: the arrow prompt, a space, then every input field labelled.

  `prompt_text` replaces the arrow prompt (a prompt variant); the labelled fields
  after it stay the same, so variants of one task differ only in that text.
  """
  inputs = schema.check(inputs, "inputs")
  if prompt_text is None:
    prompt_text = prompt(schema, inputs, outputs, lang)
  return f"{prompt_text} {_labelled(schema, record, inputs, lang)}"


def example(schema: Schema, record: Mapping, inputs: Sequence[str], outputs: Sequence[str],
            lang: str, prompt_text: str | None = None) -> dict[str, str]:
  """{"inputs", "targets"} text of one record for the task inputs -> outputs."""
  return {"inputs": format_inputs(schema, record, inputs, outputs, lang, prompt_text),
          "targets": format_fields(schema, record, outputs, lang)}


def typed_value(field: Field, text: str):
  """Parsed text of one field: stripped text, or for a list field its stripped items,
  the empty ones dropped unless the field keeps them (none from empty text)."""
  text = text.strip()
  if not field.is_list:
    return text
  items = [v.strip() for v in text.split(field.separator)] if text else []
  return items if field.keep_empty_items else [v for v in items if v]


def _find_markers(schema, text, fields, lang, nfkc) -> list[tuple[int, str, int]]:
  """(position, field, marker length) of each field marker found, sorted."""
  norm = _nfkc if nfkc else (lambda m: m)
  lead = len(text) - len(text.lstrip())
  starts = {}
  for f in fields:
    m = norm(marker(schema[f], lang, first=True))
    if text.startswith(m, lead):  # any field may come first in a garbled prediction
      starts[f] = (lead, len(m))
      continue
    m = norm(marker(schema[f], lang, first=False))
    pos = text.find(m)
    if pos >= 0:
      starts[f] = (pos, len(m))
  return sorted((pos, f, n) for f, (pos, n) in starts.items())


def feature_text(value) -> str:
  """str of a str, bytes or numpy/TF scalar, as a feature comes back from a dataset.

  Undecodable bytes become U+FFFD: a postprocessor must not raise on model output.
  """
  return _read_text(value, errors="replace")


def parse_fields(schema: Schema, text, fields: Sequence[str], lang: str) -> dict:
  """A layout parsed back into {field: value}; never raises on any text (or bytes).

  Text decoded by a SentencePiece vocabulary comes back NFKC-normalised, so
  when the exact markers are not all found the text is matched again in NFKC form.
  """
  _check_lang(lang)
  fields = schema.check(fields)
  if isinstance(text, (bytes, bytearray, memoryview)):
    text = bytes(text).decode("utf-8", "replace")
  elif not isinstance(text, str):
    text = "" if text is None else str(text)
  if len(fields) == 1:
    field = schema[fields[0]]
    body = text.strip()
    label = field.label(lang) + COLON[lang]
    for form in (label, _nfkc(label)):
      if body.startswith(form):
        body = body[len(form):]
        break
    return {field.name: typed_value(field, body)}
  found = _find_markers(schema, text, fields, lang, nfkc=False)
  if len(found) < len(fields):
    normalized = _nfkc(text)
    found_nfkc = _find_markers(schema, normalized, fields, lang, nfkc=True)
    if len(found_nfkc) > len(found):
      text, found = normalized, found_nfkc
  out = {f: schema[f].empty() for f in fields}
  for j, (pos, f, n) in enumerate(found):
    end = found[j + 1][0] if j + 1 < len(found) else len(text)
    out[f] = typed_value(schema[f], text[pos + n:end])
  return out
