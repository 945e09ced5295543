"""A dataset feature's value as `str`: the one rule every layer reads text features by.

Features come back from TensorFlow or numpy as bytes, numpy or TF scalars, or (from
JSON) as str; the runtime, the results layer and the task layer all read them here.
Pure Python: importing it pulls in no framework.
"""


def feature_text(value, errors: str = "strict") -> str:
  """str of a str, bytes or numpy / TF scalar; bytes decoded as UTF-8 with `errors`
  ("strict" raises on bytes that are not UTF-8; "replace" gives U+FFFD)."""
  if hasattr(value, "numpy"):
    value = value.numpy()
  if hasattr(value, "item") and not isinstance(value, (bytes, str)):
    value = value.item()
  return value.decode("utf-8", errors) if isinstance(value, bytes) else str(value)
