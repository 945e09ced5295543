"""Argument checks shared by the metrics, so errors read the same everywhere."""

from typing import Sequence


def check_pairs(targets: Sequence, predictions: Sequence, metric: str) -> None:
  """Targets and predictions must be non-empty and of equal length."""
  if len(targets) != len(predictions):
    raise ValueError(f"{metric}: {len(targets)} targets but {len(predictions)} "
                     "predictions; they must pair up one to one")
  if not targets:
    raise ValueError(f"{metric}: no examples to score")


def check_text(value, metric: str, field: str, index: int) -> str:
  """A text field must be a string; names the example otherwise."""
  if not isinstance(value, str):
    raise TypeError(f"{metric}: {field}[{index}] is {type(value).__name__}, "
                    "expected str")
  return value
