"""Evaluation-format fixtures derived from the shared SciRepEval training samples.

The shared root holds only training formats; the official evaluation formats
(meta rows keyed by doc_id, probe splits, qrels) are written here from them.
"""

import csv
import json
import pathlib

SAMPLE = ("scirepeval", "sample_data")


def _jsonl(path: pathlib.Path, rows) -> pathlib.Path:
  path.parent.mkdir(parents=True, exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    for r in rows:
      f.write(json.dumps(r) + "\n")
  return path


def write_fos(root: pathlib.Path, out: pathlib.Path, n_train: int = 150) -> pathlib.Path:
  """`out/fos/{meta.jsonl, train.csv, test.csv}`: multi-hot labels over the 23 fields."""
  papers = json.loads((root.joinpath(*SAMPLE) / "fos_small.json").read_text())
  d = out / "fos"
  _jsonl(d / "meta.jsonl", ({"doc_id": p["corpus_id"], "title": p["title"],
                             "abstract": p["abstract"]} for p in papers))
  for split, part in (("train", papers[:n_train]), ("test", papers[n_train:])):
    with open(d / f"{split}.csv", "w", newline="") as f:
      w = csv.writer(f)
      w.writerow(["paper_id", "label"])
      for p in part:
        w.writerow([p["corpus_id"], json.dumps([int(i in p["labels"]) for i in range(23)])])
  return d


def write_search(root: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
  """`out/search/{meta.jsonl, test_qrel.jsonl}`: query ids q0.., graded candidates."""
  rows = [json.loads(l) for l in (root.joinpath(*SAMPLE) / "search_small.jsonl").open()]
  d = out / "search"
  meta, qrels = [], []
  for i, r in enumerate(rows):
    qid = f"q{i}"
    meta.append({"doc_id": qid, "query": r["query"], "candidates": [
        {k: c[k] for k in ("title", "abstract", "venue", "year")} | {"doc_id": c["corpus_id"]}
        for c in r["candidates"]]})
    qrels.extend({"query_id": qid, "cand_id": c["corpus_id"], "score": c["score"]}
                 for c in r["candidates"])
  _jsonl(d / "meta.jsonl", meta)
  _jsonl(d / "test_qrel.jsonl", qrels)
  return d


def write_init_checkpoint(model_gin: str, directory: pathlib.Path, return_model: bool = False):
  """A step-0 checkpoint of the gin model's random initialisation (no training needed)."""
  import gin  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import gin_utils
  from crosstask.runtime.config import run as run_lib
  from crosstask.runtime.state import checkpoints
  from crosstask.runtime.state import optimizers
  from crosstask.runtime.state import trainer as trainer_lib
  gin.clear_config()
  try:
    gin_utils.parse([model_gin], [])
    model = gin.query_parameter("%MODEL").scoped_configurable_fn()
    tx, schedule = optimizers.create_optimizer(optimizers.adamw, 0.0, param_axes=None)
    run = run_lib.resolve(model, batch_size=8, lengths={"inputs": 8, "targets": 4})
    trainer = trainer_lib.Trainer(run, tx, schedule)
    manager = checkpoints.manager(str(directory))
    checkpoints.save(manager, 0, trainer.init_state(0), 0)
    manager.wait_until_finished()
  finally:
    gin.clear_config()
  return (directory, model) if return_model else directory
