"""From runs to results: metric records, re-scoring and the cross-benchmark table.

`python -m crosstask.results RUN_DIR...` prints the table; `records` is the one
reader and writer of the `metrics.jsonl` files every job writes.
"""
