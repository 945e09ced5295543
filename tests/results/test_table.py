"""`crosstask.results`: runs pooled over seeds, columns kept apart by task definition."""

import json
import pathlib

import pytest

from crosstask.metrics import clue_scores
from crosstask.results import __main__ as cli
from crosstask import records
from crosstask.results import rescoring
from crosstask.results import table

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "scirepeval"


def _run(root, name, seed, rows, d_model=64, split="validation", data=None):
  """A run folder like a training run's: operative config and inference_eval/metrics.jsonl."""
  folder = root / name
  (folder / "inference_eval").mkdir(parents=True)
  (folder / "operative_config.gin").write_text(
      f"MODEL_DIR = '{folder}'\nRANDOM_SEED = {seed}\n"  # as operative_config.gin writes it
      f"MODEL/config.TransformerConfig.d_model = {d_model}\nconfig.TransformerConfig:\n"
      "  num_encoder_layers = 2\n  num_decoder_layers = 2\n"
      "train.random_seed = %RANDOM_SEED\n", "utf-8")
  records.append(folder / "inference_eval", [
      records.Record(step, task, metrics, fingerprint=fp, source="eval", split=split, data=data)
      for step, task, metrics, fp in rows])
  return folder


def test_seeds_pool_and_models_stay_apart(tmp_path):
  a = _run(tmp_path, "small_seed0", 0, [(100, "csl_zh_title_to_category", {"accuracy": 60.0,
                                                                           "macro_f1": 20.0},
                                         "aaaa0000")])
  b = _run(tmp_path, "small_seed1", 1, [(100, "csl_zh_title_to_category", {"accuracy": 70.0,
                                                                           "macro_f1": 30.0},
                                         "aaaa0000")])
  c = _run(tmp_path, "big_seed0", 0, [(200, "csl_zh_title_to_category", {"accuracy": 90.0},
                                       "aaaa0000")], d_model=128)
  result = table.build([a, b, c])
  assert [r.label for r in result.rows] == ["small", "big_seed0"]
  assert [r.model for r in result.rows] == ["T5 d64 2+2L", "T5 d128 2+2L"]
  (column,) = result.columns
  assert (column.name, column.metric, column.fingerprint) == (
      "csl_zh_title_to_category", "accuracy", "aaaa0000")
  assert result.rows[0].cells[column]["mean"] == 65.0
  assert result.rows[0].cells[column]["std"] == 5.0  # population std over the two seeds
  text = result.markdown()
  # Steps differ between rows: each cell names its own; the column carries the fingerprint.
  assert "| csl_zh_title_to_category accuracy (validation) [aaaa0000] |" in text
  # Two seeds: the t interval of their mean, 65 ± 12.71 * 7.07 / sqrt(2).
  assert result.rows[0].cells[column]["ci95"] == pytest.approx([1.47, 128.53], abs=0.01)
  assert "| small | T5 d64 2+2L | 0,1 | 65.00 ± 5.00 [1.47, 128.53] @100 |" in text
  assert "| big_seed0 | T5 d128 2+2L | 0 | 90.00 @200 |" in text


def test_seeds_that_scored_other_examples_are_not_pooled(tmp_path):
  # One task definition (fingerprint), two data sets: the bundled sample's 4 examples
  # and the data root's 32 had been one column, pooled as two seeds.
  rows = lambda acc: [(100, "fewclue_eprstmt_k0", {"accuracy": acc}, "7dd52592")]
  a = _run(tmp_path, "small_seed0", 0, rows(50.0), data="11111111")
  b = _run(tmp_path, "small_seed1", 1, rows(40.6), data="22222222")
  c = _run(tmp_path, "small_seed2", 2, rows(44.0), data="22222222")
  result = table.build([a, b, c])
  assert [(r.label, r.seeds) for r in result.rows] == [("small", ["0", "1", "2"])]
  cells = {c.data: result.rows[0].cells[c] for c in result.columns}
  assert {d: (cell["mean"], cell["n"]) for d, cell in cells.items()} == {
      "11111111": (50.0, 1), "22222222": (pytest.approx(42.3), 2)}
  assert sorted(result.headers()) == [
      "fewclue_eprstmt_k0 accuracy (validation) @100 [7dd52592 data 11111111]",
      "fewclue_eprstmt_k0 accuracy (validation) @100 [7dd52592 data 22222222]"]
  assert ("Different task definitions or examples, kept apart: fewclue_eprstmt_k0 accuracy "
          "(validation).") in result.markdown()
  # One data set: the header stays as it was.
  assert table.build([b, c]).headers() == ["fewclue_eprstmt_k0 accuracy (validation) @100 "
                                           "[7dd52592]"]


def test_a_folder_of_runs_is_each_of_its_runs(tmp_path):
  # `crosstask.results runs/` over runs/small_seed0 and runs/small_seed1: read as one run,
  # each cell was the newest file's (seed 1's 70) under the first config's seed (0).
  rows = lambda acc: [(100, "csl_zh_title_to_category", {"accuracy": acc}, "aaaa0000")]
  _run(tmp_path / "runs", "small_seed0", 0, rows(60.0))
  _run(tmp_path / "runs", "small_seed1", 1, rows(70.0))
  result = table.build([tmp_path / "runs"])
  ((column, cell),) = result.rows[0].cells.items()
  assert [(r.label, r.seeds) for r in result.rows] == [("small", ["0", "1"])]
  assert (cell["mean"], cell["std"]) == (65.0, 5.0) and not result.disagreements()
  # A record in the folder itself, outside both runs: read as one run still, none left out.
  records.append(tmp_path / "runs", [records.Record(100, "csl_zh_title_to_category",
                                                    {"accuracy": 50.0}, source="eval")])
  assert [r.label for r in table.build([tmp_path / "runs"]).rows] == ["runs"]


def test_a_run_without_a_config_has_no_seed_and_one_without_its_seed_says_so(tmp_path):
  """A baseline's folder (records, no config) is no model's seed: '-' as a paper row's; a
  trained run whose config does not name its seed is '?'."""
  baseline = tmp_path / "majority"
  records.append(baseline, [records.Record(0, "clue_afqmc", {"accuracy": 50.0},
                                           fingerprint="11111111", source="eval",
                                           split="validation")])
  trained = _run(tmp_path, "tiny", 0, [(10, "clue_afqmc", {"accuracy": 60.0}, "11111111")])
  config = trained / "operative_config.gin"
  config.write_text(config.read_text("utf-8").replace("RANDOM_SEED = 0\n", ""), "utf-8")
  text = table.build([trained, baseline], paper="none").markdown()
  assert "| tiny | T5 d64 2+2L | ? | 60.00 @10 |" in text
  assert "| majority | - | - | 50.00 @0 |" in text


def test_different_task_definitions_are_never_pooled(tmp_path):
  a = _run(tmp_path, "s0", 0, [(10, "clue_afqmc", {"accuracy": 60.0}, "11111111")])
  b = _run(tmp_path, "s1", 1, [(10, "clue_afqmc", {"accuracy": 80.0}, "22222222")])
  result = table.build([a, b], paper="none")
  assert len(result.rows) == 1 and len(result.columns) == 2
  assert sorted(c.fingerprint for c in result.columns) == ["11111111", "22222222"]
  cells = [result.rows[0].cells[c] for c in result.columns]
  assert [(x["mean"], x["n"]) for x in cells] == [(60.0, 1), (80.0, 1)]
  assert "Different task definitions or examples, kept apart: clue_afqmc accuracy (validation)" in (
      result.markdown())
  assert "@10" in result.markdown()  # one step for the whole column: in its header


def test_two_measurements_of_one_step_show_the_newest_and_say_so(tmp_path):
  # Training evaluated step 300 greedily; a later `crosstask.eval --run_dir` with beam
  # search wrote another number for the same step. The table had kept whichever file
  # sorted last ('inference_eval' after 'eval'): the training number, silently.
  import os  # pylint: disable=g-import-not-at-top
  task = "csl_zh_abstract_to_title"
  run = _run(tmp_path, "title", 0, [(300, task, {"rougeL": 5.15}, "aaaa0000")])
  (run / "eval").mkdir()
  records.append(run / "eval", [records.Record(300, task, {"rougeL": 4.71}, fingerprint="aaaa0000",
                                               source="eval", split="validation")])
  os.utime(run / "inference_eval" / records.FILENAME, (1, 1))  # the older file
  result = table.build([run])
  (column,) = result.columns
  assert result.rows[0].cells[column]["mean"] == 4.71
  [note] = result.disagreements()
  assert note == (f"title: {task} (validation) @300: rougeL 4.71 (eval/metrics.jsonl:1) vs "
                  "5.15 (inference_eval/metrics.jsonl:1); the first, the newest, is shown")
  assert f"Two measurements of one step differ in {note}." in result.markdown()
  assert result.json()["disagreements"] == [note]
  # Written the other way round, the training number is the newest, and shown.
  os.utime(run / "eval" / records.FILENAME, (0, 0))
  assert table.build([run]).rows[0].cells[column]["mean"] == 5.15
  # The same numbers twice (a re-score) are no disagreement.
  records.append(run / "eval", [records.Record(300, task, {"rougeL": 5.15}, fingerprint="aaaa0000",
                                               source="eval", split="validation")])
  assert not table.build([run]).disagreements()


def test_a_tasks_vocabulary_copies_share_its_column_and_aggregates(tmp_path):
  # A SentencePiece run evaluates `<task>.<vocabulary>` (the model's vocabulary's copy of
  # the task; same definition, same fingerprint): its numbers are the task's, beside a byte
  # run's and another vocabulary's, and they count towards the benchmark's score.
  rows = [(8, f"fewclue_{task}_k{k}_rank", {"accuracy": 40.0 + i + k}, "f" * 8)
          for i, task in enumerate(clue_scores.FEWCLUE_TASKS) for k in range(5)]
  runs = [_run(tmp_path, "bytes", 0, rows, split="test_public"),
          _run(tmp_path, "pieces", 0, [(s, f"{t}.spiece", m, f) for s, t, m, f in rows],
               d_model=128, split="test_public"),
          _run(tmp_path, "prompts", 0, [(8, f"fewclue_bustm_k0_rank.p{p}.sentencepiece_cn",
                                         {"accuracy": 50.0 + 10 * p}, "e" * 8) for p in (0, 1)],
               d_model=256, split="test_public")]
  result = table.build(runs, tasks="^(FewCLUE score|fewclue bustm)", paper="none")
  assert [c.name for c in result.columns] == ["FewCLUE score", "fewclue bustm k=0..4"]
  score = result.columns[0]
  assert [r.cells[score]["mean"] for r in result.rows[:2]] == [46.0, 46.0]
  (bustm,) = [c for c in table.build(runs[2:], paper="none").columns]
  assert bustm.name == "fewclue_bustm_k0_rank"
  assert table.build(runs[2:], paper="none").rows[0].cells[bustm]["prompts"] == 2


def test_the_model_label_names_the_run_or_folder_it_starts_from(tmp_path):
  for start, label in (("/runs/meta_seed1/checkpoint_3000", "meta_seed1"),
                       ("/models/longlm-base", "longlm-base")):
    run = _run(tmp_path, label, 0, [(1, "clue_afqmc", {"accuracy": 50.0}, "a" * 8)])
    config = run / "operative_config.gin"
    config.write_text(config.read_text() + f"INITIAL_CHECKPOINT_PATH = {start!r}\n")
    assert table.build([run], paper="none").rows[0].model == f"T5 d64 2+2L from {label}"


def test_prompt_variants_score_as_mean_and_spread(tmp_path):
  run = _run(tmp_path, "r", 0, [(5, "fewclue_bustm.p0", {"accuracy": 50.0}, "aaaaaaaa"),
                                (5, "fewclue_bustm.p1", {"accuracy": 70.0}, "bbbbbbbb"),
                                (5, "fewclue_bustm.p2", {"accuracy": 60.0}, "cccccccc")])
  result = table.build([run], paper="none")
  (column,) = result.columns
  assert column.name == "fewclue_bustm" and len(column.fingerprint) == 8
  cell = result.rows[0].cells[column]
  assert cell["mean"] == 60.0 and cell["prompts"] == 3
  assert cell["prompt_std"] == pytest.approx((200 / 3) ** 0.5)
  assert "60.00 (σ 8.16 over 3 prompts)" in result.markdown()
  assert table.prompt_base("clue_afqmc.p12") == ("clue_afqmc", 12)
  assert table.prompt_base("clue_afqmc") == ("clue_afqmc", None)


def test_fewclue_score_and_readme_rows(tmp_path):
  rows = []
  for i, task in enumerate(clue_scores.FEWCLUE_TASKS):
    for k in range(5):
      rows.append((8, f"fewclue_{task}_k{k}_rank", {"accuracy": 40.0 + i + k}, "f" * 8))
  run = _run(tmp_path, "few", 0, rows, split="test_public")
  result = table.build([run], tasks="^(FewCLUE|fewclue eprstmt)")
  names = [c.name for c in result.columns]
  assert names == ["FewCLUE score", "fewclue eprstmt k=0..4"]
  ours = result.rows[0].cells
  score = next(c for c in result.columns if c.name == "FewCLUE score")
  expected = clue_scores.fewclue_score({t: [40.0 + i + k for k in range(5)]
                                        for i, t in enumerate(clue_scores.FEWCLUE_TASKS)})
  assert ours[score]["mean"] == pytest.approx(expected) == 46.0
  pet = next(r for r in result.rows if r.label.startswith("PET"))
  assert pet.cells[score]["mean"] == 57.44
  assert "| PET (FewCLUE README, test_public) | paper | - | 57.44 | 86.66 |" in result.markdown()


def test_scirepeval_from_saved_embeddings(tmp_path):
  out = tmp_path / "emb_run"
  for task in ("relish", "Paper-Reviewer Matching"):
    rescoring.score_embeddings(task, FIXTURES / "embeddings.jsonl", FIXTURES, step=3,
                               output_dir=out)
  rows = {r.task: r for r in records.read(out)}
  assert rows["scirepeval:RELISH"].metrics == {"ndcg": 50.0}
  assert rescoring.unflatten(rows["scirepeval:Paper-Reviewer Matching"].metrics) == {
      "hard_P_10": 20.0, "hard_P_5": 30.0, "soft_P_10": 30.0, "soft_P_5": 40.0}
  result = table.build([out], paper="none")
  cells = {c.name: result.rows[0].cells[c]["mean"] for c in result.columns}
  assert cells["SciRepEval RELISH"] == 50.0
  assert cells["SciRepEval Paper-Reviewer Matching"] == 30.0  # mean of its four P@k
  assert cells["SciRepEval out-of-train (2/20 numbers)"] == 40.0


def test_cli_formats_and_errors(tmp_path, capsys):
  run = _run(tmp_path, "r", 0, [(5, "csl_zh_abstract_to_title", {"rougeL": 31.0, "bleu": 9.0},
                                 "abcdef12")])
  assert cli.main([str(run), "--format", "json"]) == 0
  data = json.loads(capsys.readouterr().out)
  assert data["columns"][0]["header"] == "csl_zh_abstract_to_title rougeL (validation) @5 [abcdef12]"
  assert data["rows"][0]["cells"][data["columns"][0]["header"]]["mean"] == 31.0
  assert cli.main([str(run), "--format", "csv", "--metric", "bleu"]) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0].startswith("run,model,seeds,csl_zh_abstract_to_title bleu")
  assert lines[1].startswith("r,T5 d64 2+2L,0,9.0,")
  assert cli.main([str(tmp_path / "nowhere")]) == 2
  assert "does not exist" in capsys.readouterr().err


def test_a_filter_that_matches_nothing_names_what_there_is(tmp_path, capsys):
  """A mistyped --step, --tasks or --metric is a usage error naming the runs' steps, columns
  or metrics, not an empty table (or another metric) that reads as what was asked for."""
  a = _run(tmp_path, "a", 0, [(5, "csl_zh_abstract_to_title", {"rougeL": 31.0}, "abcdef12"),
                              (10, "csl_zh_abstract_to_title", {"rougeL": 33.0}, "abcdef12")])
  b = _run(tmp_path, "b", 0, [(20, "csl_zh_title_to_category", {"accuracy": 60.0}, "aaaa0000")],
           d_model=128)
  assert cli.main([str(a), str(b), "--step", "7"]) == 2
  captured = capsys.readouterr()
  assert not captured.out
  assert captured.err.strip() == (f"error: --step 7 matches no record in {a}, {b}; "
                                  "their steps: 5, 10, 20")
  assert cli.main([str(a), str(b), "--tasks", "^clue_"]) == 2
  captured = capsys.readouterr()
  assert not captured.out
  assert captured.err.strip() == ("error: --tasks '^clue_' matches no column; the runs' "
                                  "columns: csl_zh_abstract_to_title, csl_zh_title_to_category")
  assert cli.main([str(a), "--tasks", "(csl"]) == 2
  assert "--tasks '(csl' is not a regular expression" in capsys.readouterr().err
  # A misspelt --metric names the close ones, not a silent fall back to the headline.
  assert cli.main([str(a), str(b), "--metric", "rogueL"]) == 2
  captured = capsys.readouterr()
  assert not captured.out
  assert captured.err.strip() == ("error: --metric 'rogueL' is reported by no record of these "
                                  "runs (did you mean 'rougeL'?); their metrics: accuracy, rougeL")
  # A step one run has: its row, the other's cells empty ("-"), and a note that says why.
  assert cli.main([str(a), str(b), "--step", "10", "--tasks", "title"]) == 0
  out = capsys.readouterr().out
  assert "| a | T5 d64 2+2L | 0 | 33.00 |" in out and "| b | T5 d128 2+2L | 0 | - |" in out
  assert f"\nNo record at step 10 in {b} (its steps: 20).\n" in out
  assert cli.main([str(a), str(b), "--step", "10", "--format", "json"]) == 0
  assert json.loads(capsys.readouterr().out)["without_step"] == [f"{b} (its steps: 20)"]
  assert cli.main([str(a), str(b)]) == 0
  assert "No record at step" not in capsys.readouterr().out


def test_fewclue_runs_per_k_merge_into_one_row(tmp_path, capsys):
  from crosstask.tasks.clue import report  # pylint: disable=g-import-not-at-top
  files = []
  for k in range(5):
    rows = [(8, f"fewclue_{task}_k{k}_rank", {"accuracy": 50.0 + k}, "f" * 8)
            for task in clue_scores.FEWCLUE_TASKS]
    files.append(records.metrics_file(_run(tmp_path, f"k{k}", 0, rows, split="test_public")
                                      / "inference_eval"))
  separate = table.build(files, paper="none")
  assert not [c for c in separate.columns if c.name == "FewCLUE score"]
  merged = table.build(files, paper="none", merge=True)
  (row,) = merged.rows
  score = next(c for c in merged.columns if c.name == "FewCLUE score")
  assert row.cells[score]["mean"] == 52.0
  from crosstask.results import __main__ as results  # pylint: disable=g-import-not-at-top
  assert results.main([*map(str, files), "--merge", "--tasks",
                       r"^(FewCLUE score|fewclue \w+ k=)"]) in (0, None)
  out = capsys.readouterr().out
  assert "FewCLUE score (test_public)" in out and "| 52.00 |" in out
  assert "fewclue_eprstmt accuracy" not in out  # the alias shows FewCLUE's aggregates only


def _csl_run(root, name, seed, start, stage, accuracy, f1):
  folder = root / name
  (folder / "eval").mkdir(parents=True)
  (folder / "operative_config.gin").write_text(
      f"PARTITION = '2-1'\nSHOTS = 8\nEPISODE_SEED = {seed}\nRANDOM_SEED = 0\nSTAGE = '{stage}'\n"
      f"INITIAL_CHECKPOINT_PATH = {start!r}\nMODEL_DIR = '{folder}'\nconfig.TransformerConfig:\n"
      "  d_model = 64\n", "utf-8")
  if stage == "few":
    records.append(folder / "eval", [records.Record(
        30, "csl_zh_abstract_to_category", {"accuracy": accuracy, "macro_f1": f1},
        fingerprint="c" * 8, split=f"s{seed}_test")])
  return folder


def test_csl_delta_m_beside_the_meta_rows(tmp_path):
  runs = []
  for seed in (0, 1):
    meta = _csl_run(tmp_path, f"meta_2_1_s{seed}", seed, "/ckpt/t5_small", "meta", 0, 0)
    runs.append(_csl_run(tmp_path, f"few_2_1_s{seed}", seed, "/ckpt/t5_small", "few",
                         30.0 + seed, 20.0))
    runs.append(_csl_run(tmp_path, f"plus_meta_2_1_s{seed}", seed, f"{meta}/checkpoint_300",
                         "few", 40.0 + 3 * seed, 22.0))
  result = table.build(runs)
  assert [r.label for r in result.rows] == ["few_2_1", "plus_meta_2_1", "T5-small (CSL Table 9)",
                                            "T5-base (CSL Table 9)"]
  assert [r.seeds for r in result.rows[:2]] == [["episode_seed=0 random_seed=0",
                                             "episode_seed=1 random_seed=0"]] * 2
  delta = next(c for c in result.columns if c.name == "CSL Δ_m 2-1 k=8")
  assert delta.split == "test"
  few, plus, small, base = result.rows
  assert delta not in few.cells
  # seed means: few (30.5, 20), +meta (41.5, 22) -> ((41.5 - 30.5) + (22 - 20)) / 2
  assert plus.cells[delta]["mean"] == pytest.approx(6.5)
  assert base.cells[delta]["mean"] == 2.2  # Table 9, 8 shots, T5-base, partition 2-1


def test_csv_keeps_each_cells_interval(tmp_path):
  import csv  # pylint: disable=import-outside-toplevel
  rows = lambda acc: [(100, "csl_zh_title_to_category", {"accuracy": acc}, "aaaa0000")]
  result = table.build([_run(tmp_path, "small_seed0", 0, rows(60.0)),
                        _run(tmp_path, "small_seed1", 1, rows(70.0))])
  header, line = list(csv.reader(result.csv().splitlines()))
  name = result.headers()[0]
  assert header == ["run", "model", "seeds", name, f"{name} std", f"{name} ci95 low",
                    f"{name} ci95 high"]
  assert [float(x) for x in line[3:]] == pytest.approx([65.0, 5.0, 1.47, 128.53], abs=0.01)
