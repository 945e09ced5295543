"""A short hash of what defines a task's numbers, written beside each metrics record.

Two scores of one task name are comparable only when the same preprocessors
built the examples, the same vocabulary tokenized them, and the same
postprocessor and metric functions scored them. The fingerprint hashes those:
each function by its qualified name, its bound arguments and the source code
(docstrings dropped) of every crosstask function it reaches, so a metric fix
deep in `crosstask.metrics` changes the fingerprint of every task it scores;
the vocabulary by its kind, size and model bytes. Dataset files are not part
of it (they are named by split and data root).

A task's plain form (read without SeqIO, `runtime.data.host_inputs`) gets the
fingerprint of the SeqIO task it stands for (`describe_plain`): the two share their
source function, postprocessor and metrics, and the plain tokenizing and vocabularies
give SeqIO's tokens and text (tests/runtime/test_runtime_host_inputs.py), so their
numbers are the same numbers.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import textwrap
import types
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from crosstask.runtime.data import host_inputs
from crosstask.text import feature_text

LENGTH = 8  # hex digits shown in tables: enough to tell versions apart at a glance


@functools.lru_cache(maxsize=None)
def _code_text(code: types.CodeType) -> str:
  try:
    source = textwrap.dedent(inspect.getsource(code))
    tree = ast.parse(source)
  except (OSError, TypeError, SyntaxError):
    return code.co_name + ":" + code.co_code.hex()
  for node in ast.walk(tree):
    body = getattr(node, "body", None)
    if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
        and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)):
      node.body = body[1:] or [ast.Pass()]
  return ast.unparse(tree)


def _names(code: types.CodeType) -> set[str]:
  names = set(code.co_names)
  for const in code.co_consts:
    if isinstance(const, types.CodeType):
      names |= _names(const)
  return names


def _ours(obj: Any) -> bool:
  return (getattr(obj, "__module__", "") or "").startswith("crosstask")


def _reachable(fn: types.FunctionType, seen: dict[str, str]) -> None:
  """Adds the source of `fn` and of every crosstask function it names, transitively."""
  key = f"{fn.__module__}.{fn.__qualname__}"
  if key in seen:
    return
  seen[key] = _code_text(fn.__code__)
  names = _names(fn.__code__)
  found = []
  for name in names:
    value = fn.__globals__.get(name)
    if isinstance(value, types.ModuleType) and value.__name__.startswith("crosstask"):
      found += [getattr(value, attr) for attr in names if hasattr(value, attr)]
    elif value is not None:
      found.append(value)
  for cell in fn.__closure__ or ():
    try:
      found.append(cell.cell_contents)
    except ValueError:
      continue
  for value in found:
    if isinstance(value, functools.partial):
      value = value.func
    if isinstance(value, types.FunctionType) and _ours(value):
      _reachable(value, seen)


def _cell(cell) -> Any:
  try:
    return cell.cell_contents
  except ValueError:
    return None


def describe_callable(fn: Any) -> Any:
  """A JSON-able description of a (partial) function: names, bound arguments, code."""
  if isinstance(fn, functools.partial):
    return {"partial": describe_callable(fn.func),
            "args": [_value(a) for a in fn.args],
            "keywords": {k: _value(v) for k, v in sorted(fn.keywords.items())}}
  if isinstance(fn, types.FunctionType):
    seen: dict[str, str] = {}
    if _ours(fn):
      _reachable(fn, seen)
    out = _function(f"{fn.__module__}.{fn.__qualname__}", seen)
    if fn.__closure__ and _ours(fn):  # what a closure was built with (a prompt, a kind)
      out["closure"] = [_value(_cell(c)) for c in fn.__closure__]
    return out
  if callable(fn):
    return {"callable": f"{type(fn).__module__}.{type(fn).__qualname__}",
            "state": _value(getattr(fn, "__dict__", {}))}
  return _value(fn)


def _function(name: str, seen: dict[str, str]) -> dict:
  """A function by qualified name and the code it reaches (none read outside crosstask)."""
  return {"fn": name, "code": hashlib.sha256(json.dumps(seen, sort_keys=True).encode()
                                             ).hexdigest()[:16]}


def _value(v: Any) -> Any:
  if callable(v):
    return describe_callable(v)
  if isinstance(v, (str, int, float, bool)) or v is None:
    return v
  if isinstance(v, dict):
    return {str(k): _value(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
  if isinstance(v, (list, tuple, set, frozenset)):
    items = [_value(x) for x in v]
    return sorted(items, key=repr) if isinstance(v, (set, frozenset)) else items
  return f"{type(v).__module__}.{type(v).__qualname__}"


def describe_vocabulary(vocab: Any) -> dict:
  """Kind, size, extra ids and (SentencePiece) a hash of the model bytes."""
  vocab = getattr(vocab, "resolved", vocab)
  vocab = vocab() if callable(vocab) and not hasattr(vocab, "vocab_size") else vocab
  kind = getattr(vocab, "seqio_class", type(vocab).__qualname__)  # a plain one: seqio's twin
  out = {"kind": kind, "size": int(vocab.vocab_size),
         "extra_ids": int(getattr(vocab, "extra_ids", 0) or 0)}
  model = getattr(vocab, "sp_model", None)
  if isinstance(model, bytes):
    out["model"] = hashlib.sha256(model).hexdigest()[:16]
  return out


def describe(task: Any) -> dict:
  """What the fingerprint hashes, for a seqio.Task (shown by `crosstask.results --explain`)."""
  features = {}
  for key, feature in sorted(task.output_features.items()):
    features[key] = {"vocabulary": describe_vocabulary(feature.vocabulary),
                     "add_eos": bool(feature.add_eos), "dtype": str(feature.dtype)}
  metrics = [describe_callable(fn) for fn in getattr(task, "metric_fns", ())]
  dataset_fn = getattr(task.source, "_dataset_fn", None)
  return {"source": describe_callable(dataset_fn) if dataset_fn else type(task.source).__name__,
          "preprocessors": [describe_callable(p) for p in task.preprocessors],
          "output_features": features,
          "postprocessor": describe_callable(task.postprocessor),
          "metrics": metrics}


def describe_plain(task: Any, vocabulary: Any) -> dict:
  """`describe` of the SeqIO task that `task` (a `tasks.common.plain.PlainTask`) stands
  for, tokenized with `vocabulary` as `host_inputs.features` tokenizes: SeqIO's
  preprocessors by name, both features ending in EOS."""
  feature = {"vocabulary": describe_vocabulary(vocabulary), "add_eos": True,
             "dtype": host_inputs.SEQIO_DTYPE}
  return {"source": describe_callable(task.source.dataset_fn),
          "preprocessors": [_function(name, {}) for name in host_inputs.SEQIO_PREPROCESSORS],
          "output_features": {"inputs": feature, "targets": feature},
          "postprocessor": describe_callable(task.postprocess_fn),
          "metrics": [describe_callable(fn) for fn in task.metric_fns]}


def _hash(description: dict) -> str:
  text = json.dumps(description, sort_keys=True, ensure_ascii=False)
  return hashlib.sha256(text.encode("utf-8")).hexdigest()[:LENGTH]


def fingerprint(task: Any) -> str:
  """`LENGTH` hex digits of the hash of `describe(task)`."""
  return _hash(describe(task))


def plain_fingerprint(task: Any, vocabulary: Any) -> str:
  """`fingerprint` of the SeqIO task a plain task stands for (`describe_plain`)."""
  return _hash(describe_plain(task, vocabulary))


def data_digest(examples: Iterable[Mapping]) -> str:
  """`LENGTH` hex digits of the hash of the examples a score was computed on, in order:
  each one's inputs and targets text (its tokens where a task keeps no text).

  Why: the fingerprint hashes a task's definition, not its files, so an eval on the
  bundled sample and one on the real data root (or on a user's edited dev file) shared
  a column and were pooled as seeds. A record carries this beside its fingerprint.
  """
  digest = hashlib.sha256()
  for ex in examples:
    parts = []
    for key in ("inputs", "targets"):
      raw = ex.get(f"{key}_pretokenized")
      if raw is not None:
        parts.append(feature_text(raw))
      else:
        parts.append(" ".join(map(str, np.asarray(ex.get(key, [])).reshape(-1).tolist())))
    digest.update((json.dumps(parts, ensure_ascii=False) + "\n").encode("utf-8"))
  return digest.hexdigest()[:LENGTH]
