"""The benchmark scripts are not a package: put benchmarks/ on the path for their tests."""

import pathlib
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
  sys.path.insert(0, str(BENCHMARKS))
