"""Leaderboard files from `crosstask.infer` predictions, with the official names and types.

CLUE (submission guide of CLUEbenchmark/CLUE, 2021-09-04): `<task>_predict.json`,
or `<task>11_`/`<task>10_predict.json` for the tasks whose test changed in 1.1
(TNEWS, CLUEWSC2020, C3, ChID). Classification files hold one JSON object per
line `{"id": <as in test.json>, "label": "<label id>"}` in test order; C3 lines
carry the option index; ChID is one object `{"#idiomNNNNNN#": index}`; CMRC one
object `{query_id: answer}`. FewCLUE (resources/fewclue_submit_examples):
`eprstmt_predict.json`, `tnewsf_predict.json` (`{"id": "0", "label": "101"}`), …,
`chidf_predict.json` (`{"id", "answer": int}`), and `<name>_predict_<k>.json`
for the per-split board.

Predictions are aligned with the split's records re-read in order: a
generation task has one infer row per record; a rank-classification task one
per (record, option), its answer the option with the best `target_score`.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import sys
from collections.abc import Sequence
from typing import NamedTuple

from crosstask import records
from crosstask import startup
from crosstask import vocabularies
from crosstask.metrics import cmrc
from crosstask.tasks.clue import examples as E
from crosstask.tasks.clue import labels as L
from crosstask.tasks.clue import readers as RD
from crosstask.tasks.common import readers as R

CLUE_NAMES = {
    "afqmc": "afqmc", "tnews": "tnews11", "iflytek": "iflytek", "cmnli": "cmnli",
    "ocnli": "ocnli_50k", "cluewsc2020": "cluewsc11", "csl": "csl", "cmrc2018": "cmrc2018",
    "chid": "chid11", "c3": "c311", "diagnostics": "diagnostics"}
CLUE_1_0_NAMES = {"tnews": "tnews10", "cluewsc2020": "cluewsc10", "chid": "chid10", "c3": "c310"}
FEWCLUE_NAMES = {
    "eprstmt": "eprstmt", "csldcp": "csldcp", "tnews": "tnewsf", "iflytek": "iflytekf",
    "ocnli": "ocnlif", "bustm": "bustm", "chid": "chidf", "csl": "cslf", "cluewsc": "cluewscf"}
_TASK_NAME = re.compile(r"^(clue|fewclue)_([a-z0-9]+?)(?:_k(\d|all))?(_rank)?$")


def parse_task_name(name: str) -> tuple[str, str, str | None, bool]:
  """`fewclue_eprstmt_k0_rank` (or its `.<vocabulary>` twin) -> ('fewclue', 'eprstmt', '0', True)."""
  match = _TASK_NAME.match(vocabularies.base_task_name(name))
  if not match or match.group(2) not in RD.TASKS[match.group(1)]:
    raise ValueError(f"{name!r} is not a CLUE/FewCLUE task name (clue_<task>, "
                     "fewclue_<task>[_k<0-4|all>][_rank])")
  benchmark, task, k, rank = match.groups()
  return benchmark, task, k, bool(rank)


def file_name(benchmark: str, task: str, split: str, k: str | None = None) -> str:
  """The leaderboard file name of a task's predictions on `split`."""
  if benchmark == RD.CLUE:
    if split == "test_1_0":
      return f"{CLUE_1_0_NAMES.get(task, task)}_predict.json"
    return f"{CLUE_NAMES[task]}_predict.json"
  suffix = f"_{k}" if k is not None else ""
  return f"{FEWCLUE_NAMES[task]}_predict{suffix}.json"


def read_predictions(path: str | os.PathLike) -> list[dict]:
  """The rows of a `crosstask.infer` file; errors name path:line."""
  rows = []
  for row in R.read_jsonl(path):
    for key in ("prediction", "targets"):
      if key not in row.value:
        raise R.DataError(f"{row.where}: infer row lacks {key!r}")
    rows.append(row.value)
  return rows


def choose(kind: str, records: Sequence[dict], rows: Sequence[dict], rank: bool,
           source: str = "predictions", joint: bool = False) -> list:
  """Per record: the chosen option index (−1: none matched), or the CMRC answer text.

  `joint` (CLUE ChID, rank classification only): the blanks of a line get distinct
  candidates by `examples.joint_assignment` over their scores.
  """
  if rank:
    expanded = E.expand_options(kind, records, train=False)
    if len(rows) != len(expanded):
      raise ValueError(f"{source}: {len(rows)} rows, but rank classification of "
                       f"{len(records)} records has {len(expanded)} (record, option) pairs")
    best: dict[int, tuple[float, int]] = {}
    for row, ex in zip(rows, expanded):
      if " ".join(row["targets"].split()) != " ".join(ex["_text"].split()):
        raise ValueError(f"{source}: row {row.get('index')} scores {row['targets']!r}, but "
                         f"record {ex['_example']} option {ex['_option']} is {ex['_text']!r}; "
                         "were the predictions made on this split?")
      score = float(row["target_score"])
      if ex["_example"] not in best or score > best[ex["_example"]][0]:
        best[ex["_example"]] = (score, ex["_option"])
    if kind == "chid" and joint:
      return _joint_chid(records, expanded, rows)
    return [best[i][1] for i in range(len(records))]
  if len(rows) != len(records):
    raise ValueError(f"{source}: {len(rows)} rows for {len(records)} records")
  if kind == "cmrc":
    return [cmrc.span_in_context(r["prediction"], rec["context"]) for r, rec in zip(rows, records)]
  return [E.option_index(r["prediction"], E.options(kind, rec)) for r, rec in zip(rows, records)]


def _joint_chid(records, expanded, rows) -> list[int]:
  scores: dict[int, list[float]] = {}
  for row, ex in zip(rows, expanded):
    scores.setdefault(ex["_example"], []).append(float(row["target_score"]))
  lines: dict = {}
  for i, record in enumerate(records):
    lines.setdefault(record["line_id"], []).append(i)
  answers = [-1] * len(records)
  for blanks in lines.values():
    for i, choice in zip(blanks, E.joint_assignment([scores[i] for i in blanks])):
      answers[i] = choice
  return answers


def _label_value(kind: str, index: int) -> str:
  """A classification answer as the leaderboard's label id (first label if none matched)."""
  return list(L.LABELS[kind])[max(index, 0)]


def submission(benchmark: str, task: str, records: Sequence[dict], answers: Sequence) -> str:
  """The file content for `answers` (from `choose`) to `records`."""
  kind = RD.task_spec(benchmark, task).kind
  if kind == "cmrc":
    return json.dumps({r["id"]: a for r, a in zip(records, answers)}, ensure_ascii=False,
                      indent=2) + "\n"
  if kind == "chid" and benchmark == RD.CLUE:
    return json.dumps({r["tag"]: max(a, 0) for r, a in zip(records, answers)}, indent=2) + "\n"
  lines = []
  for record, answer in zip(records, answers):
    if kind == "chid":
      line = {"id": record["id"], "answer": max(answer, 0)}
    elif kind == "c3":
      line = {"id": record["id"], "label": max(answer, 0)}
    else:
      line = {"id": record["id"], "label": _label_value(kind, answer)}
    lines.append(json.dumps(line, ensure_ascii=False) + "\n")
  return "".join(lines)


class Written(NamedTuple):
  """A leaderboard file written, and how many of its answers no prediction chose: a
  generated text that names no option still needs an answer on its line (option 0, the
  first label), which would otherwise pass for the model's."""
  path: pathlib.Path
  unmatched: int
  answers: int


def write_submission(task_name: str, split: str, predictions: str | os.PathLike,
                     output_dir: str | os.PathLike, *, root: str | os.PathLike | None = None,
                     folder: str | os.PathLike | None = None,
                     joint: bool = True) -> Written:
  """Writes the leaderboard file for `crosstask.infer` output of `task_name` on `split`.

  `joint`: CLUE ChID rank predictions are decoded jointly per line (distinct answers).

  Returns the file written (under `output_dir`, with its official name) and its count of
  answers no prediction matched.
  """
  benchmark, task, k, rank = parse_task_name(task_name)
  read_split = split
  if k is not None and split in ("train", "validation"):
    read_split = f"{'train' if split == 'train' else 'dev'}_{'few_all' if k == 'all' else k}"
  records = RD.read_all(benchmark, task, read_split, root=root, folder=folder)
  kind = RD.task_spec(benchmark, task).kind
  answers = choose(kind, records, read_predictions(predictions), rank, str(predictions),
                   joint=joint and kind == "chid" and benchmark == RD.CLUE)
  out = pathlib.Path(output_dir) / file_name(benchmark, task, split, k)
  out.parent.mkdir(parents=True, exist_ok=True)
  tmp = out.with_suffix(".tmp")
  tmp.write_text(submission(benchmark, task, records, answers), encoding="utf-8")
  tmp.replace(out)  # a failure above leaves any earlier file untouched
  unmatched = 0 if kind == "cmrc" else sum(1 for a in answers if a < 0)
  return Written(out, unmatched, len(answers))


def split_of(predictions: str | os.PathLike, task_name: str, given: str | None = None) -> str:
  """The split infer's file `<task>-<split>.jsonl` was made on, as `crosstask.score`
  reads it; a ValueError where the name says neither that task nor a whole split.
  `given` (--split) is the split for a file named otherwise; one infer named says the
  same, or the file answers another split's examples under this one's ids."""
  parts = records.inference_file(predictions)
  if parts is None:
    if given:
      return given
    raise ValueError(f"{predictions}: not an inference output name (<task>-<split>.jsonl); "
                     "give the split with --split")
  task, split = parts
  if vocabularies.base_task_name(task) != task_name:
    raise ValueError(f"{predictions} holds predictions of task {task!r}, not {task_name!r}")
  if given and given != split:
    raise ValueError(f"{predictions} holds predictions on split {split!r}, not --split "
                     f"{given!r}: their lines would answer another split's examples")
  if records.base_split(split) != split:
    raise ValueError(f"{predictions} holds a subset of split {records.base_split(split)!r} "
                     f"({split}): a leaderboard file answers every example of the split")
  return split


def main(argv: Sequence[str] | None = None) -> int:
  """The command line; `python -m crosstask.clue_submissions` quiets TensorFlow first."""
  import argparse  # pylint: disable=g-import-not-at-top
  parser = argparse.ArgumentParser(prog="python -m crosstask.clue_submissions",
                                   description=__doc__.split("\n")[0])
  parser.add_argument("--task", required=True, help="e.g. fewclue_eprstmt_rank, clue_tnews")
  parser.add_argument("--split", help="the split the predictions were made on (default: "
                      "the one their file name says, <task>-<split>.jsonl)")
  parser.add_argument("--predictions", required=True,
                      help="<task>-<split>.jsonl written by crosstask.infer")
  parser.add_argument("--output_dir", required=True)
  startup.add_verbose_flag(parser)
  args = parser.parse_args(argv)
  try:
    split = split_of(args.predictions, args.task, args.split)
    written = write_submission(args.task, split, args.predictions, args.output_dir)
  except (FileNotFoundError, ValueError) as e:  # a bad name, path or file, named in `e`
    print(f"ERROR: {e}", file=sys.stderr)
    return 2
  print(written.path)
  if written.unmatched:
    print(f"note: {written.unmatched} of {written.answers} predictions name no option of "
          "their example; their lines answer option 0 (the first label)", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())
