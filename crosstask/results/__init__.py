"""From runs to results: metric records, re-scoring and the cross-benchmark table.

  records     the one reader and writer of `metrics.jsonl` (pure Python, a leaf)
  rescoring   a saved inference output scored again (`python -m crosstask.score`)
  runs        a run folder's records, model and seed, read from its configs
  columns     table columns and cells: headline metrics, prompt variants, rows
  aggregates  CLUE/FewCLUE scores, LOT overall, SciRepEval averages, CSL Δ_m
  paper       published numbers beside ours
  table       the table itself (`python -m crosstask.results RUN_DIR...`)
"""
