"""Where data lives: the official benchmark root and the bundled sample, and the error a
file there that cannot be read as its format raises."""

import contextlib
import os
import pathlib
from collections.abc import Iterator

DATA_DIR_ENV = "CROSSTASK_DATA_DIR"
SAMPLE_DIR = pathlib.Path(__file__).parent / "data" / "sample"


class DataError(ValueError):
  """Malformed or inconsistent data; the message names where ("path:line", "path[record 3]").

  Here, beside the data root, so that the entry points, which may not import the task
  layer whose readers raise it, report it in one line."""


def data_dir() -> pathlib.Path | None:
  """The root of the official data (laid out like `shared/data`, `~` expanded), or None
  if unset."""
  value = os.environ.get(DATA_DIR_ENV)
  return pathlib.Path(os.path.expanduser(value)) if value else None


@contextlib.contextmanager
def use_data_dir(path: str | os.PathLike) -> Iterator[pathlib.Path]:
  """Reads data from `path` inside the block (readers resolve the root at read time)."""
  old = os.environ.get(DATA_DIR_ENV)
  os.environ[DATA_DIR_ENV] = str(path)
  try:
    yield pathlib.Path(path)
  finally:
    if old is None:
      os.environ.pop(DATA_DIR_ENV, None)
    else:
      os.environ[DATA_DIR_ENV] = old
