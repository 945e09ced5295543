"""Encoder inputs of the embedding path: `<format code> <labelled fields>`.

`[CLF] Title: …; Abstract: …` for classification, `[RGN] …` regression,
`[PRX] …` proximity and search candidates, `[QRY] Query: …` search queries
(the official `TASK_IDS`). The official `title [SEP] abstract` is not copied:
T5 vocabularies have no [SEP] (the official code would insert the text "None").
With `ctrl=False` no code is prepended (the MTL CLS / base-model analogue).
Each doc_id is embedded once per meta file, queries and candidates alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crosstask.tasks.scirepeval import benchmark as B
from crosstask.tasks.scirepeval import readers

FIELD_LABELS = {"title": "Title", "abstract": "Abstract", "venue": "Venue", "year": "Year",
                "query": "Query"}
CODES = ("[CLF]", "[PRX]", "[QRY]", "[RGN]")  # Sorted, as the official all_tasks list.


def clean(text: str) -> str:
  """One line; '; ' inside a value would read as a field separator, so it becomes ', '."""
  return re.sub(r"\s+", " ", text).replace("; ", ", ").strip()


def document_text(item: Mapping[str, Any], fields: Sequence[str] = ("title", "abstract")) -> str:
  """`Title: …; Abstract: …` over the non-empty fields (a text query: `Query: …`)."""
  if "query" in item:
    return f"Query: {clean(item['query'])}"
  parts = [f"{FIELD_LABELS[f]}: {clean(str(item[f]))}" for f in fields if item.get(f)]
  return "; ".join(parts)


def code_for(task_type: str, role: str = "candidates") -> str:
  code = B.FORMAT_CODES[task_type]
  return code[role] if isinstance(code, dict) else code


def with_code(code: str, text: str, ctrl: bool = True) -> str:
  return f"{code} {text}" if ctrl and code else text


def embedding_inputs(records: Sequence[Mapping[str, Any]], task_type: str, *,
                     fields: Sequence[str] = ("title", "abstract"),
                     ctrl: bool = True) -> list[tuple[str, str, str]]:
  """(doc_id, code, encoder text) per distinct paper of simple or IR meta records."""
  if records and "candidates" in records[0]:
    items: Iterable = readers.iter_papers_of_ir_rows(records)
  else:
    items = (("candidates", r) for r in records)
  out, seen = [], set()
  for role, item in items:
    if item["doc_id"] in seen:
      continue
    if not item["doc_id"]:
      raise readers.DataError(
          f"a {role[:-1] if role.endswith('s') else role} has no doc_id to key its embedding by "
          f"({document_text(item)[:60]!r}); meta rows need doc_id")
    seen.add(item["doc_id"])
    code = code_for(task_type, "query" if role == "query" else "candidates")
    out.append((item["doc_id"], code if ctrl else "",
                with_code(code, document_text(item, fields), ctrl)))
  return out


def read_meta_any(path) -> list[dict[str, Any]]:
  """A meta file in either official form (IR rows when records carry candidates)."""
  first = next(iter(readers.json_rows(path)), None)
  if first is None:
    raise readers.DataError(f"{path}: empty meta file")
  if isinstance(first.value, dict) and "candidates" in first.value:
    return readers.read_ir_rows(path)
  return readers.read_meta(path)


def code_token_ids(vocabulary: Any, codes: Sequence[str]) -> dict[str, int]:
  """The sentinel id of each control code (`<extra_id_k>` = vocab_size - 1 - k)."""
  extra = int(getattr(vocabulary, 'extra_ids', 0) or 0)
  if extra < len(codes):
    raise ValueError(f'sentinel_codes=True needs a vocabulary with at least {len(codes)} '
                     f'extra_ids (sentinels); this one has {extra}. Set the vocabulary\'s '
                     'extra_ids (e.g. seqio.ByteVocabulary.extra_ids = 4).')
  return {code: vocabulary.vocab_size - 1 - k for k, code in enumerate(codes)}


def tokenize(items: Iterable[tuple[str, str, str]], vocabulary: Any, *, max_length: int, sentinel_codes: bool, pooling: str
             ) -> tuple[list[list[int]], int]:
  """Token ids per (doc_id, code, text) item, and how many were truncated."""
  eos = int(getattr(vocabulary, 'eos_id', 1) or 1)
  ids = code_token_ids(vocabulary, CODES) if sentinel_codes else {}
  out, truncated = [], 0
  for doc_id, code, text in items:
    if sentinel_codes and code:
      body = text[len(code):].lstrip()
      tokens = [ids[code]] + list(vocabulary.encode(body))
    else:
      tokens = list(vocabulary.encode(text))
    if pooling == 'first':
      n_code = (1 if sentinel_codes else len(vocabulary.encode(code))) if code else 0
      if n_code != 1:
        raise ValueError(f"pooling='first' takes the control code's state, so the code must be "
                         f"one token; {code or 'no code'!r} is {n_code} tokens here (doc "
                         f"{doc_id}). Use sentinel_codes=True or pooling='mean'.")
    if len(tokens) + 1 > max_length:
      tokens = tokens[:max_length - 1]
      truncated += 1
    out.append(tokens + [eos])
  return out, truncated
