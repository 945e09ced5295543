"""Assertions every benchmark's tests call, in the spirit of `seqio.test_utils`.

Plain `assert`s and AssertionErrors with the failing case in the message, so
they work under pytest and without it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from crosstask import tracing
from crosstask.tasks.common import layout
from crosstask.text import feature_text

# Predictions a model can produce: empty, unlabelled, half-labelled, markers
# only, other languages' markers, control characters, undecodable bytes.
DEFAULT_GARBAGE = ("", " ", "随便写的", "标题：", "；学科：；门类：", "Title: ; Keywords:",
                   ":::", "；；；", "\x00\n\t", "a" * 2000, "->", "None", b"\xff\xfe")


def _nfkc(text: str) -> str:
  return unicodedata.normalize("NFKC", text)


def _expected(field, text: str):
  """What parsing one field's text must give, computed apart from `layout.typed_value`."""
  if field.is_list:
    items = [v.strip() for v in text.split(field.separator)] if text.strip() else []
    return items if field.keep_empty_items else [v for v in items if v]
  return text.strip()


def assert_layout_round_trip(schema, records: Iterable[Mapping],
                             fields_sets: Iterable[Sequence[str]],
                             langs: Sequence[str] = ("zh", "en")) -> None:
  """parse(format(r)) gives back every field of r, exactly and after NFKC.

  A value is compared in its written form (`value_text`: one line, markers
  inside it defused), since that is all a layout can promise to bring back.
  """
  records = list(records)
  for lang in langs:
    for fields in fields_sets:
      fields = schema.check(fields)
      for i, record in enumerate(records):
        for norm in (lambda t: t, _nfkc):
          text = norm(layout.format_fields(schema, record, fields, lang))
          parsed = layout.parse_fields(schema, text, fields, lang)
          expected = {f: _expected(schema[f], norm(layout.value_text(schema[f], record[f], schema)))
                      for f in fields}
          assert parsed == expected, (f"record {i}, fields {fields}, lang {lang}: "
                                      f"{text!r} parsed to {parsed}, expected {expected}")


def _examples(task, split: str, n: int) -> list[dict]:
  splits = list(task.splits)
  if split not in splits:
    raise AssertionError(f"task {task.name!r} has no split {split!r}; it has {splits}")
  ds = tracing.without_autograph(task.get_dataset, None, split=split, shuffle=False)
  return list(ds.take(n).as_numpy_iterator())


def assert_prompt_format(task, expected_prompt: str, split: str = "validation",
                         n: int = 3) -> None:
  """The first `n` examples' decoded inputs start with `expected_prompt` and a space."""
  vocab = task.output_features["inputs"].vocabulary
  examples = _examples(task, split, n)
  assert examples, f"task {task.name!r}: split {split!r} is empty"
  for ex in examples:
    text = vocab.decode(ex["inputs"].tolist())
    assert text.startswith(expected_prompt + " "), (
        f"task {task.name!r}: input {text[:80]!r} does not start with {expected_prompt!r}")


def _targets_as_predictions(task, split: str, n: int) -> list:
  out = []
  for ex in _examples(task, split, n):
    target = feature_text(ex["targets_pretokenized"])
    out.append(task.postprocess_fn(target, example=ex, is_target=True))
  return out


def _score(task, targets, predictions) -> dict:
  scores = {}
  for fn in task.metric_fns:
    scores.update(fn(targets, predictions))
  return scores


def assert_metric_keys(task, expected: set[str], split: str = "validation", n: int = 5) -> dict:
  """The task's metric fns, run on targets as predictions, give exactly `expected` keys."""
  targets = _targets_as_predictions(task, split, n)
  scores = _score(task, targets, targets)
  assert set(scores) == set(expected), (
      f"task {task.name!r}: metric keys {sorted(scores)} != expected {sorted(expected)}")
  return scores


def assert_postprocess_total(task, garbage: Sequence = DEFAULT_GARBAGE) -> None:
  """The postprocessor returns (never raises) on any text a model may produce."""
  for text in garbage:
    try:
      task.postprocess_fn(text, example={}, is_target=False)
    except Exception as e:  # pylint: disable=broad-except
      raise AssertionError(f"task {task.name!r}: postprocess_fn raised {e!r} on "
                           f"{text!r}") from e


def assert_perfect_predictions_score_max(task, split: str = "validation",
                                         max_examples: int = 20, *,
                                         keys: Iterable[str] | None = None,
                                         top: float = 100.0, tol: float = 1e-6) -> dict:
  """Targets as predictions score `top` on every metric (or on `keys`)."""
  targets = _targets_as_predictions(task, split, max_examples)
  scores = _score(task, targets, targets)
  for key in (scores if keys is None else keys):
    assert abs(scores[key] - top) <= tol, (
        f"task {task.name!r}: perfect predictions score {key}={scores[key]}, not {top}")
  return scores
