"""The FewCLUE report: mean ± std over k = 0..4 and few_all, beside the README rows."""

import json

import pytest

from crosstask.metrics import clue_scores
from crosstask.tasks.clue import paper
from crosstask.tasks.clue import report


def _metrics(path, rows):
  path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
  return path


def test_report_from_eval_metrics(tmp_path, capsys):
  pet = paper.FEWCLUE_README["PET"]
  rows = []
  for task in clue_scores.FEWCLUE_TASKS:  # PET's mean with a spread of ±2 over k, and few_all
    for k, delta in zip("01234", (-2, -1, 0, 1, 2)):
      rows.append({"step": 100, "task": f"fewclue_{task}_k{k}_rank",
                   "metrics": {"accuracy": pet[task] + delta}})
    rows.append({"step": 100, "task": f"fewclue_{task}_kall", "metrics": {"accuracy": 60.0}})
  rows.append({"step": 50, "task": "fewclue_eprstmt_k0_rank", "metrics": {"accuracy": 1.0}})
  rows.append({"step": 100, "task": "csl_zh_abstract_to_title", "metrics": {"rouge1": 3.0}})
  text = report.report([_metrics(tmp_path / "m.jsonl", rows)])
  assert capsys.readouterr().out.strip() == text
  assert "| eprstmt | 86.66 ± 1.41 (60.00) | 86.66 | 90.00 |" in text  # step 100 beats 50
  assert "| FewCLUE score | 57.44 | 57.44 | 82.49 |" in text
  summary = report.summarize(report.collect([tmp_path / "m.jsonl"]))
  assert summary["chid"]["std"] == pytest.approx(2 ** 0.5)


def test_partial_runs_and_bad_lines(tmp_path):
  path = _metrics(tmp_path / "m.jsonl", [
      {"step": 1, "task": "fewclue_bustm_k0", "metrics": {"accuracy": 50.0}}])
  summary = report.summarize(report.collect([path]))
  assert report.fewclue_score(summary) is None
  assert "| bustm | - (1/5 splits) |" in report.format_report(summary)
  path.write_text('{"step": 1}\n', "utf-8")
  with pytest.raises(ValueError, match=rf"{path}:1: not a crosstask metrics line"):
    report.collect([path])


@pytest.mark.parametrize("gin_file,bindings", [
    ("clue/fewclue_k.gin", ["MODEL_DIR='/tmp/x'"]),
    ("clue/clue_classification.gin", ["MODEL_DIR='/tmp/x'"]),
    ("clue/clue_mrc.gin", ["MODEL_DIR='/tmp/x'"]),
    ("clue/fewclue_test_public.gin", ["CHECKPOINT_PATH='/tmp/x'", "EVAL_OUTPUT_DIR='/tmp/y'"]),
])
def test_run_configs_parse_and_name_registered_tasks(gin_file, bindings):
  import gin  # pylint: disable=g-import-not-at-top
  import seqio  # pylint: disable=g-import-not-at-top
  import crosstask.tasks.clue  # noqa: F401  pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import gin_utils  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  try:
    gin_utils.parse(["t5_1_1/tiny.gin", gin_file], bindings)
    name = gin.query_parameter("%MIXTURE_OR_TASK_NAME")
    assert name in seqio.MixtureRegistry.names() or name in seqio.TaskRegistry.names()
    assert gin.query_parameter("%MIXTURE_OR_TASK_MODULE") == "crosstask.tasks.clue"
  finally:
    gin.clear_config()
