"""Benchmark data: the bundled samples (`sample/`) and `python -m crosstask.data fetch`."""
