"""crosstask.text: how every layer reads a text feature (runtime, results, task layer)."""

import subprocess
import sys

import numpy as np
import pytest

from crosstask import text
from crosstask.tasks.common import layout


def test_text_features_read_alike_whatever_container_they_come_in():
  for value in ("摘要", "摘要".encode(), np.bytes_("摘要".encode()), np.array("摘要".encode()),
                np.str_("摘要")):
    assert text.feature_text(value) == "摘要", repr(value)
  assert text.feature_text(np.int64(1)) == "1" and text.feature_text(1) == "1"


def test_bytes_that_are_not_utf8_raise_unless_a_postprocessor_reads_them():
  # Gold text read strictly; model output (layout's postprocessors) never raises.
  with pytest.raises(UnicodeDecodeError):
    text.feature_text(b"\xff1")
  assert text.feature_text(b"\xff1", errors="replace") == "\ufffd1"
  assert layout.feature_text(np.bytes_(b"\xff1")) == "\ufffd1"


def test_importing_it_pulls_in_no_framework():
  code = ("import sys, crosstask.text; "
          "print(sorted(m for m in ('numpy', 'tensorflow', 'jax') if m in sys.modules))")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "[]"
