"""crosstask.score without a model: the task's own postprocessors and metrics on saved lines."""

import json

import pytest
import seqio

import crosstask.tasks.all  # noqa: F401  Registers the tasks.
from crosstask import paths
from crosstask import score as cli
from crosstask import records
from crosstask.results import rescoring


@pytest.fixture
def sample_root():
  with paths.use_data_dir(paths.SAMPLE_DIR) as root:
    yield root


def _write_inferences(path, task_name, split, predict, target_score=None):
  """An infer-shaped file whose predictions are `predict(example)`."""
  task = seqio.get_mixture_or_task(task_name)
  ds = task.get_dataset(None, split=split, shuffle=False, num_epochs=1)
  with open(path, "w", encoding="utf-8") as f:
    for i, ex in enumerate(ds.as_numpy_iterator()):
      line = {"index": i, "prediction": predict(ex), "score": -1.0, "step": 12}
      if target_score is not None:
        line["target_score"] = target_score(ex)
      f.write(json.dumps(line, ensure_ascii=False) + "\n")
  return i + 1


def test_cmrc_answers_map_back_to_the_passage(sample_root, tmp_path):
  path = tmp_path / "clue_cmrc2018-validation.jsonl"
  n = _write_inferences(path, "clue_cmrc2018", "validation",
                        lambda ex: ex["targets_pretokenized"].decode())
  rec = rescoring.score_file(path)
  assert (rec.step, rec.split, rec.metrics["em"], rec.metrics["f1"]) == (12, "validation",
                                                                         100.0, 100.0)
  assert rec.source == "score:clue_cmrc2018-validation.jsonl" and n >= 2
  (written,) = records.read(tmp_path)
  assert written.metrics == rec.metrics and written.fingerprint == rec.fingerprint
  # Scored again: the same numbers, already on record, are not appended twice.
  assert rescoring.score_file(path) == rec and len(records.read(tmp_path)) == 1
  # An answer found nowhere in the passage scores nothing; that record is new, and scoring
  # the first predictions again after it is new again (the last line is what counts).
  (tmp_path / "right.txt").write_bytes(path.read_bytes())
  _write_inferences(path, "clue_cmrc2018", "validation", lambda ex: "不在文中的回答")
  assert rescoring.score_file(path, output_dir=tmp_path / "o").metrics["em"] == 0.0
  assert rescoring.score_file(path).metrics["em"] == 0.0
  path.write_bytes((tmp_path / "right.txt").read_bytes())
  rescoring.score_file(path)
  assert [r.metrics["em"] for r in records.read(tmp_path)] == [100.0, 0.0, 100.0]


def test_rank_classification_is_scored_from_target_scores(sample_root, tmp_path):
  path = tmp_path / "fewclue_eprstmt_k0_rank-validation.jsonl"
  gold = lambda ex: 0.0 if ex["rank_correct"] == b"1" else -5.0  # noqa: E731
  _write_inferences(path, "fewclue_eprstmt_k0_rank", "validation", lambda ex: "", gold)
  assert rescoring.score_file(path).metrics == {"accuracy": 100.0}
  _write_inferences(path, "fewclue_eprstmt_k0_rank", "validation", lambda ex: "",
                    lambda ex: -gold(ex))
  assert rescoring.score_file(path).metrics == {"accuracy": 0.0}
  _write_inferences(path, "fewclue_eprstmt_k0_rank", "validation", lambda ex: "")
  with pytest.raises(ValueError, match=r"jsonl:1: no 'target_score'; task "
                     "'fewclue_eprstmt_k0_rank' is scored by the model's likelihood"):
    rescoring.score_file(path)


def test_a_file_inferred_on_other_examples_is_refused(sample_root, tmp_path):
  """infer's lines carry their inputs and targets: another data root's file, or another
  task's given this one's name, had been scored against references it never saw."""
  path = tmp_path / "csl_zh_title_to_category-validation.jsonl"
  _write_inferences(path, "csl_zh_title_to_category", "validation", lambda ex: "工学")
  lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
  task = seqio.get_mixture_or_task("csl_zh_title_to_category")
  exs = list(task.get_dataset(None, split="validation", shuffle=False).as_numpy_iterator())
  for line, ex in zip(lines, exs):
    line.update(inputs=ex["inputs_pretokenized"].decode(), targets=ex["targets_pretokenized"]
                .decode())
  path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
  assert rescoring.score_file(path).split == "validation"  # the same examples: scored
  lines[1]["targets"] = "理学" if lines[1]["targets"] != "理学" else "工学"
  path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
  with pytest.raises(ValueError, match=r"validation\.jsonl:2: its targets '.*' are not those "
                     r"of example 1 of 'csl_zh_title_to_category' split 'validation' as read "
                     r"now .*other data \(CROSSTASK_DATA_DIR\)"):
    rescoring.score_file(path)


@pytest.mark.parametrize("task_name", ["fewclue_bustm", "fewclue_eprstmt_k0_rank"])
def test_a_split_without_labels_is_refused_not_scored_zero(sample_root, tmp_path, task_name):
  # FewCLUE's test.json has no labels: scored, it read as accuracy 0 and was recorded.
  path = tmp_path / f"{task_name}-test.jsonl"
  _write_inferences(path, task_name, "test", lambda ex: "", lambda ex: 0.0)
  with pytest.raises(ValueError, match=rf"{task_name}-test.jsonl: task '{task_name}' split "
                     r"'test' carries no labels \(.*\): there is nothing to score"):
    rescoring.score_file(path)
  assert not (tmp_path / "metrics.jsonl").exists()
  # The labelled copy of the same test set scores.
  public = tmp_path / f"{task_name}-test_public.jsonl"
  _write_inferences(public, task_name, "test_public", lambda ex: "", lambda ex: 0.0)
  assert "accuracy" in rescoring.score_file(public).metrics


@pytest.mark.parametrize("task_name", ["fewclue_bustm", "fewclue_eprstmt_k0_rank"])
def test_the_eval_job_refuses_a_split_without_labels(sample_root, tmp_path, task_name):
  from crosstask.runtime.data import pipeline  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.predict import evaluation  # pylint: disable=g-import-not-at-top
  cfg = lambda split: pipeline.DatasetConfig(  # noqa: E731
      task_name, {"inputs": 64, "targets": 16}, split, 2, False, 0,
      module="crosstask.tasks.clue")
  with pytest.raises(ValueError, match=rf"task '{task_name}' split 'test' carries no labels: "
                     "there is nothing to evaluate"):
    evaluation.Evaluator(cfg("test"), str(tmp_path / "test"))
  assert evaluation.Evaluator(cfg("test_public"), str(tmp_path / "public")).has_tasks


def test_cli_errors_name_the_problem(sample_root, tmp_path, capsys):
  bad = tmp_path / "predictions.txt"
  bad.write_text('{"index": 0, "prediction": "x"}\n', "utf-8")
  assert cli.main([str(bad)]) == 2
  assert "not an inference output name" in capsys.readouterr().err
  past = tmp_path / "csl_zh_title_to_category-validation.jsonl"
  past.write_text('{"index": 999, "prediction": "工学", "step": 1}\n', "utf-8")
  assert cli.main([str(past)]) == 2
  assert capsys.readouterr().err == (
      f"error: {past}:1: example index 999 is past the end of task 'csl_zh_title_to_category' "
      "split 'validation', which holds 30 examples: is this the split the predictions were "
      "made on?\n")
  past.write_text('{"index": 0, "prediction": "工学"}\n', "utf-8")
  assert cli.main([str(past)]) == 2
  assert "carry no checkpoint step; give it with --step" in capsys.readouterr().err
  assert cli.main([str(past), "--step", "7"]) == 0
  assert "csl_zh_title_to_category step 7" in capsys.readouterr().out
  # DIR/*.jsonl takes in the metrics beside the predictions: skipped, said, the rest scored.
  seqio_metrics = tmp_path / "csl_zh_title_to_category-metrics.jsonl"
  seqio_metrics.write_text('{"step": 7, "accuracy": 100.0}\n', "utf-8")
  metrics = tmp_path / "metrics.jsonl"
  assert cli.main([str(seqio_metrics), str(past), str(metrics), "--step", "7",
                   "--task", "csl_zh_title_to_category"]) == 0  # one file to name a task for
  out = capsys.readouterr().out
  assert f"skipped {seqio_metrics}: metrics, not predictions" in out
  assert f"skipped {metrics}: metrics" in out and "csl_zh_title_to_category step 7" in out
  assert f"note: {metrics}:1 already records these numbers; nothing appended" in out
  assert len(records.read(tmp_path)) == 1  # the earlier score's, which said the same
  assert cli.main([str(past), str(past), "--task", "csl_zh_title_to_category"]) == 2
  assert "--task/--split name one file's task" in capsys.readouterr().err
  # A misspelt --task names the close registered ones.
  assert cli.main([str(past), "--step", "7", "--task", "csl_zh_title_to_catgory"]) == 2
  assert ("task 'csl_zh_title_to_catgory' is registered by none of crosstask.tasks.all; did "
          "you mean 'csl_zh_title_to_category'") in capsys.readouterr().err
  assert cli.main([str(metrics)]) == 2
  assert "metrics.jsonl: a metrics file (what a score or an eval wrote), not predictions" in (
      capsys.readouterr().err)
  assert cli.main(["--scirepeval_task", "fos"]) == 2
  assert "needs --embeddings" in capsys.readouterr().err


def test_an_output_dir_that_is_a_file_is_refused_before_scoring(sample_root, tmp_path,
                                                              capsys):
  """--output_dir FILE would append the records into that file: refused, naming it,
  with nothing scored or written."""
  predictions = tmp_path / "csl_zh_title_to_category-validation.jsonl"
  predictions.write_text('{"index": 0, "prediction": "工学", "step": 1}\n', "utf-8")
  for name in ("notes.txt", "metrics.jsonl"):
    file = tmp_path / "out" / name
    file.parent.mkdir(exist_ok=True)
    file.write_text("mine\n", "utf-8")
    assert cli.main([str(predictions), "--output_dir", str(file)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == (f"error: --output_dir {file} is a file, not a folder "
                                    "(metrics.jsonl goes into it)")
    assert not captured.out and file.read_text("utf-8") == "mine\n"
    assert cli.main(["--scirepeval_task", "fos", "--embeddings", str(predictions), "--data",
                     str(tmp_path), "--step", "1", "--output_dir", str(file)]) == 2
    assert f"--output_dir {file} is a file, not a folder" in capsys.readouterr().err
  assert not (tmp_path / "metrics.jsonl").exists()
  # A folder, there or not, takes the record.
  assert cli.main([str(predictions), "--output_dir", str(tmp_path / "scores")]) == 0
  (record,) = records.read(tmp_path / "scores")
  assert (record.task, record.step) == ("csl_zh_title_to_category", 1)


def test_flatten_round_trips_the_official_result_shape():
  result = {"complete": {"f1": 70.1}, "few_shot": [{"sample_size": 5, "results": {"f1": 40.0}},
                                                   {"sample_size": 10, "results": {"f1": 50.0}}]}
  flat = rescoring.flatten(result)
  assert flat["few_shot/1/results/f1"] == 50.0
  assert rescoring.unflatten(flat) == result


_OWN_MODULE = '''
import seqio
import tensorflow as tf
from crosstask import metrics, vocabularies

@seqio.map_over_dataset
def _parse(line):
  inputs, targets = tf.io.decode_csv(line, ["", ""], field_delim="\\t", use_quote_delim=False)
  return {"inputs": inputs, "targets": targets}

vocab = vocabularies.get("bytes")
seqio.TaskRegistry.add(
    "score_own_module_task", source=seqio.TextLineDataSource({"validation": %r}),
    preprocessors=[_parse, seqio.preprocessors.tokenize, seqio.preprocessors.append_eos_after_trim],
    output_features={"inputs": seqio.Feature(vocab), "targets": seqio.Feature(vocab)},
    metric_fns=[metrics.accuracy])
'''


def test_a_task_of_the_researchers_own_module_is_found_through_the_runs_config(
    tmp_path, monkeypatch, capsys):
  # A README-style task in the researcher's module: crosstask.score had looked only in
  # crosstask.tasks.all ("not registered") though infer's config beside the file names it.
  (tmp_path / "dev.tsv").write_text("一\tyes\n二\tno\n三\tyes\n", "utf-8")
  (tmp_path / "score_own_tasks.py").write_text(_OWN_MODULE % str(tmp_path / "dev.tsv"), "utf-8")
  infer_dir = tmp_path / "infer"
  infer_dir.mkdir()
  (infer_dir / "config.gin").write_text("MIXTURE_OR_TASK_MODULE = 'score_own_tasks'\n", "utf-8")
  path = infer_dir / "score_own_module_task-validation.jsonl"
  path.write_text("".join(json.dumps({"index": i, "prediction": p, "step": 5}) + "\n"
                          for i, p in enumerate(["yes", "yes", "yes"])), "utf-8")
  # Where the module cannot be imported, the error says which and what to do.
  assert cli.main([str(path), "--bootstrap=0"]) == 2
  err = capsys.readouterr().err
  assert "task 'score_own_module_task' is registered by none of crosstask.tasks.all; the " in err
  assert "run's config names 'score_own_tasks'" in err and "PYTHONPATH" in err
  monkeypatch.syspath_prepend(str(tmp_path))
  assert cli.main([str(path), "--bootstrap=0"]) == 0
  (rec,) = records.read(infer_dir)
  assert (rec.task, rec.step, rec.split) == ("score_own_module_task", 5, "validation")
  assert rec.metrics == {"accuracy": pytest.approx(200 / 3)}


def test_a_run_whose_task_module_cannot_be_imported_says_so_in_place_of_intervals(tmp_path):
  # crosstask.results from another folder than the researcher's module: a traceback
  # (ModuleNotFoundError) had ended the table.
  from crosstask.results import table  # pylint: disable=g-import-not-at-top
  run = tmp_path / "run"
  (run / "inference_eval").mkdir(parents=True)
  (run / "config.gin").write_text("MIXTURE_OR_TASK_MODULE = 'absent_own_tasks'\n", "utf-8")
  records.append(run / "inference_eval", [records.Record(
      7, "absent_own_task", {"accuracy": 50.0}, "ffff0000", source="eval", split="validation")])
  (run / "inference_eval" / "absent_own_task-000007.jsonl").write_text(
      "".join(json.dumps({"input": {}, "target": t, "output": p, "prediction": p}) + "\n"
              for t, p in (("a", "a"), ("b", "a"))), "utf-8")
  built = table.build([run], paper="none")
  (cell,) = built.rows[0].cells.values()
  assert cell["mean"] == 50.0 and cell["ci95"] is None
  assert cell["no_ci95"].startswith("its task module 'absent_own_tasks' cannot be imported "
                                    "from here")
  assert "No 95% interval in run: its task module 'absent_own_tasks'" in built.markdown()


def test_a_file_short_of_its_split_is_scored_as_the_examples_it_holds(sample_root, tmp_path,
                                                                      capsys):
  # An infer cut short, or a file with its last lines deleted, had been scored and recorded
  # as the whole split, and shown in the whole split's column.
  whole = tmp_path / "csl_zh_title_to_category-validation.jsonl"
  assert _write_inferences(whole, "csl_zh_title_to_category", "validation", lambda ex: "工学") == 30
  lines = whole.read_text("utf-8").splitlines(keepends=True)
  assert rescoring.score_file(whole, resamples=0).split == "validation"
  short = tmp_path / "short" / whole.name
  short.parent.mkdir()
  short.write_text("".join(lines[:20]), "utf-8")
  assert rescoring.score_file(short, resamples=0).split == "validation[:20]"
  assert capsys.readouterr().out.endswith(
      f"note: {short} holds the first 20 examples of 'validation': scored as "
      "'validation[:20]', not 'validation'\n")
  # Labelled a subset by infer (NUM_EXAMPLES: `_first20`; `[:20]` before) and whole: kept.
  for name in ("csl_zh_title_to_category-validation_first20.jsonl",
               "csl_zh_title_to_category-validation[:20].jsonl"):
    (tmp_path / name).write_text("".join(lines[:20]), "utf-8")
    assert rescoring.score_file(tmp_path / name, resamples=0).split == "validation[:20]"
  # Lines lost within, or an example twice: refused, naming them.
  short.write_text("".join(lines[:5] + lines[6:20]), "utf-8")
  with pytest.raises(ValueError, match=r"short/csl_zh_title_to_category-validation\.jsonl: no "
                     r"line for example\(s\) \[5\] of the first 20 it indexes: lines were lost"):
    rescoring.score_file(short, resamples=0)
  short.write_text("".join(lines[:20] + lines[3:4]), "utf-8")
  with pytest.raises(ValueError, match=r"validation\.jsonl:21: example index 3 again \(first at "
                     r"line 4\)"):
    rescoring.score_file(short, resamples=0)


def test_a_score_written_without_its_interval_gets_one_from_its_infer_file(sample_root,
                                                                           tmp_path):
  # `crosstask.score --bootstrap 0` leaves its record without `ci95`; the table said "no
  # saved predictions to resample" with the infer file beside the record.
  from crosstask.results import table  # pylint: disable=import-outside-toplevel
  path = tmp_path / "csl_zh_title_to_category-validation.jsonl"
  _write_inferences(path, "csl_zh_title_to_category", "validation",
                    lambda ex: "工学" if ex["targets_pretokenized"].decode() == "工学" else "理学")
  with_interval = rescoring.score_file(path).ci95
  assert rescoring.score_file(path, resamples=0).ci95 is None
  assert [r.ci95 is None for r in records.read(tmp_path)] == [False, True]  # the newest: none
  ((column, cell),) = table.build([tmp_path], prefer=["accuracy"]).rows[0].cells.items()
  assert cell["ci95"] == pytest.approx(list(with_interval[column.metric]))
  assert cell["ci95"][0] < cell["mean"] < cell["ci95"][1]
  # The file no longer what was scored (an example index past the split): the table is
  # still built, and says why that cell has no interval.
  lines = path.read_text("utf-8").splitlines()
  path.write_text("\n".join(lines + [lines[-1].replace('"index": 29', '"index": 99')]), "utf-8")
  built = table.build([tmp_path], prefer=["accuracy"])
  assert next(iter(built.rows[0].cells.values()))["ci95"] is None
  assert "its infer file could not be read again" in built.markdown()
