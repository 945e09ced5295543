"""A benchmark's fields: what they are called in each language and how they are scored.

A `Schema` is the whole of what the layout, the parser and the per-field
metrics need to know about a benchmark's records, so that those live once in
`layout` and `factory` instead of once per benchmark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

KINDS = ("text", "list", "label", "number", "span")


@dataclasses.dataclass(frozen=True)
class Field:
  """One record field.

  `separator` makes the field list-valued (its value is a list of strings,
  written joined by the separator); `keep_empty_items` keeps the empty items a
  parsed list holds (`a__b`, `a_`), where its metric counts them; `label_set`
  closes a classification field; `metric_fn(targets, predictions) -> {name: 0..100}`
  scores it.
  """
  name: str
  labels: Mapping[str, str]
  separator: str | None = None
  label_set: tuple[str, ...] | None = None
  kind: str = "text"
  metric_fn: Callable[[list, list], dict] | None = None
  keep_empty_items: bool = False

  def __post_init__(self):
    if self.kind not in KINDS:
      raise ValueError(f"field {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
    if (self.kind == "list") != (self.separator is not None):
      raise ValueError(f"field {self.name!r}: a 'list' field needs a separator, and only a "
                       f"'list' field may have one (kind={self.kind!r}, "
                       f"separator={self.separator!r})")
    if self.keep_empty_items and self.separator is None:
      raise ValueError(f"field {self.name!r}: keep_empty_items is for 'list' fields")
    if not self.labels:
      raise ValueError(f"field {self.name!r} needs a label in at least one language")

  @property
  def is_list(self) -> bool:
    return self.separator is not None

  def label(self, lang: str) -> str:
    try:
      return self.labels[lang]
    except KeyError:
      raise ValueError(f"field {self.name!r} has no label in language {lang!r}; it has "
                       f"{sorted(self.labels)}") from None

  def empty(self):
    """The value of this field when a prediction lacks it."""
    return [] if self.is_list else ""


@dataclasses.dataclass(frozen=True)
class Schema:
  """A benchmark's fields in canonical order (the order of layouts and task names)."""
  name: str
  fields: tuple[Field, ...]

  def __post_init__(self):
    names = [f.name for f in self.fields]
    if not names or len(set(names)) != len(names):
      raise ValueError(f"schema {self.name!r} needs distinct field names, got {names}")

  def __getitem__(self, name: str) -> Field:
    for f in self.fields:
      if f.name == name:
        return f
    raise KeyError(f"schema {self.name!r} has no field {name!r}; it has {self.names}")

  @property
  def names(self) -> tuple[str, ...]:
    return tuple(f.name for f in self.fields)

  @property
  def langs(self) -> tuple[str, ...]:
    """Languages every field has a label in."""
    common = set.intersection(*(set(f.labels) for f in self.fields))
    return tuple(sorted(common))

  def check(self, fields: Sequence[str], what: str = "fields") -> tuple[str, ...]:
    """`fields` as a canonical-order tuple; a clear error for unknown or no names."""
    fields = (fields,) if isinstance(fields, str) else tuple(fields)
    unknown = [f for f in fields if f not in self.names]
    if unknown or not fields:
      raise ValueError(f"{what} must be a non-empty subset of {self.names}, got {fields}")
    return tuple(f for f in self.names if f in fields)
