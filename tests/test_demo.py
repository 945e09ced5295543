"""`make demo` end to end: vocabulary, datasets, baselines, a short training run, the
table; then the demo's run re-scored as a researcher would, with no override, and
inferred again where TensorFlow and SeqIO cannot be imported (the GPU image)."""

import json
import re
import subprocess
import sys

import pytest
import seqio

import runtime_subprocess
from crosstask import paths
from crosstask import records
from crosstask import score
from crosstask.results import table

# The demo's model uses the SentencePiece vocabulary it trained, so its task is the copy
# registered for that vocabulary.
BASE_TASK = "csl_zh_discipline_to_category"
TASK = f"{BASE_TASK}.csl_sample"


@pytest.mark.slow(seconds=55)
def test_demo_ends_with_a_table_where_the_model_interval_is_above_its_baseline(tmp_path, capsys):
  env = runtime_subprocess.env()
  env["CROSSTASK_DATA_DIR"] = str(tmp_path / "ignored")  # the demo pins the bundled sample
  proc = subprocess.run([sys.executable, "-m", "crosstask.demo", f"--output_dir={tmp_path}"],
                        cwd=runtime_subprocess.REPO, env=env, capture_output=True, text=True,
                        timeout=900)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  out = proc.stdout
  # Nothing a newcomer cannot act on: no TensorFlow start-up lines, no SeqIO warnings.
  assert not runtime_subprocess.noise_in(out + proc.stderr), proc.stderr[-3000:]
  assert (tmp_path / "vocab" / "csl_sample.model").is_file()
  assert "csl/benchmark" not in out and "crosstask/data/sample" in out
  assert (tmp_path / "model" / "checkpoint_300").is_dir()
  # The table crosstask.results prints: one column per metric of the trained task.
  header = re.search(r"^\| run \| model \| seeds \| (.+) \|$", out, re.M)
  assert header, out[-3000:]
  columns = header[1].split(" | ")
  assert all(c.startswith(f"{BASE_TASK} ") for c in columns)  # the task, any vocabulary's
  assert {c.split()[1] for c in columns} == {"accuracy", "macro_f1"}
  model = re.search(r"^\| tiny T5 \(300 steps\) \| T5 d64 2\+2L \| 0 \| (.+) \|$", out, re.M)
  # A baseline is no model's seed: "-", as a paper's row.
  baseline = re.search(r"^\| majority class \(train\) \| - \| - \| (.+) \|$", out, re.M)
  assert model and baseline, out[-3000:]
  theirs = [float(x.split()[0]) for x in baseline[1].split(" | ")]
  # Each cell of the model: mean [low, high], its 95% bootstrap interval over the papers.
  cell = re.compile(r"([\d.]+) \[([\d.]+), ([\d.]+)\](?: @\d+)?")
  ours = [cell.fullmatch(x) for x in model[1].split(" | ")]
  assert all(ours), model[1]
  accuracy = columns.index(next(c for c in columns if " accuracy " in c))
  # The baseline is the majority class of the train split: 12 of 30 validation papers.
  assert theirs[accuracy] == 40.0
  mean, low, high = map(float, ours[accuracy].groups())
  assert theirs[accuracy] < low <= mean <= high, out[-3000:]  # wholly above the baseline
  # The model's numbers are the ones its training-time evaluation recorded.
  (record,) = records.read(tmp_path / "model" / "inference_eval")
  assert record.step == 300 and record.task == TASK
  assert f"The trained model beats the baseline on: {BASE_TASK} accuracy" in out
  assert (tmp_path / "results.png").read_bytes()[:4] == b"\x89PNG"
  assert re.search(r"A real run, a pretrained T5-base, reaches [\d.]+ macro-F1 .* \(CSL paper, Table 9", out)
  inferred = _rescoring_the_demo_run_needs_no_override(tmp_path / "model", record, capsys)
  _without_tensorflow_infer_writes_the_same_file(tmp_path / "model", inferred, record)


def _score(capsys, *args) -> str:
  """`python -m crosstask.score ARGS` (in this process: no second TensorFlow start-up)."""
  with paths.use_data_dir(paths.SAMPLE_DIR):
    assert score.main([str(a) for a in args]) == 0, capsys.readouterr().err
  return capsys.readouterr().out


def _rescoring_the_demo_run_needs_no_override(model_dir, evaluated, capsys):
  """Infer's file and the training run's own inference log, both of a task registered for
  the run's SentencePiece vocabulary (`<task>.<vocabulary>`), re-score to the eval's
  numbers, under its fingerprint, in the run's own column. Returns infer's file."""
  env = {**runtime_subprocess.env(), paths.DATA_DIR_ENV: str(paths.SAMPLE_DIR)}
  # The intervals the table draws from the training run's inference log, before any score.
  logged = table.build([model_dir], paper="none", all_metrics=True)
  logged_ci95 = {c.metric: logged.rows[0].cells[c]["ci95"] for c in logged.columns}
  infer_dir = model_dir.parent / "infer"  # outside the run: its config.gin is beside the file
  infer = subprocess.run([sys.executable, "-m", "crosstask.infer", f"--run_dir={model_dir}",
                          f"--gin.INFER_OUTPUT_DIR='{infer_dir}'"],
                         cwd=runtime_subprocess.REPO, env=env, capture_output=True, text=True,
                         timeout=600)
  assert infer.returncode == 0, infer.stdout[-3000:] + infer.stderr[-3000:]
  log = model_dir / "inference_eval" / f"{TASK}-{evaluated.step:06d}.jsonl"
  inferred = infer_dir / f"{TASK}-validation.jsonl"
  for path in (log, inferred):  # no --task, --split, --step, --vocabulary or --module
    # Each finds the vocabulary in its run's config, as a fresh `crosstask.score` would:
    # the copy an earlier score registered in this process is not there to find.
    if TASK in seqio.TaskRegistry.names():
      seqio.TaskRegistry.remove(TASK)
    out = _score(capsys, path)
    assert "definition changed" not in out
    *_, scored = records.read(path.parent)
    assert (scored.task, scored.step, scored.split, scored.fingerprint) == (
        TASK, evaluated.step, "validation", evaluated.fingerprint)
    assert scored.metrics == pytest.approx(evaluated.metrics, abs=1e-9), path
    assert scored.source == f"score:{path.name}"
  # The plain name with --task scores the vocabulary's copy, not another definition.
  plain = model_dir.parent / "plain"
  _score(capsys, inferred, f"--task={BASE_TASK}", f"--output_dir={plain}")
  (record,) = records.read(plain)
  assert (record.task, record.fingerprint) == (TASK, evaluated.fingerprint)

  # The re-scored records replace the eval's in the run's own column, with its interval.
  result = table.build([model_dir, infer_dir], paper="none", all_metrics=True)
  assert {c.name for c in result.columns} == {BASE_TASK} and not result.conflicts()
  for column in result.columns:
    for row in result.rows:
      cell = row.cells[column]
      assert cell["mean"] == pytest.approx(evaluated.metrics[column.metric])
      low, high = cell["ci95"]
      assert low <= cell["mean"] <= high and low < high
      # The same predictions, the same interval: score's record draws as the table does.
      assert [low, high] == pytest.approx(list(logged_ci95[column.metric])), column
  return inferred


# The fields of a line of infer's output, in order.
FIELDS = ("index", "inputs", "targets", "prediction", "score", "target_score", "step",
          "fingerprint")


def _without_tensorflow_infer_writes_the_same_file(model_dir, inferred, evaluated):
  """The GPU image's eval-only job on the demo's run: `crosstask.infer` where TensorFlow
  and SeqIO cannot be imported reads the task's plain form (the run's SentencePiece
  copy, tokenized in numpy) and writes the SeqIO job's file, line for line and field
  for field; `python -m crosstask.score` (the suite's one start of that command) scores
  it to the eval's numbers under the eval's fingerprint."""
  env = {**runtime_subprocess.env(), paths.DATA_DIR_ENV: str(paths.SAMPLE_DIR)}
  out_dir = model_dir.parent / "gpu_image"
  plain = subprocess.run(runtime_subprocess.without_tensorflow(
      "crosstask.infer", f"--run_dir={model_dir}", f"--gin.INFER_OUTPUT_DIR='{out_dir}'"),
      cwd=runtime_subprocess.REPO, env=env, capture_output=True, text=True, timeout=600)
  assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-3000:]
  assert f"Wrote 30 predictions to {out_dir / inferred.name}\n" in plain.stdout  # a new file
  assert not runtime_subprocess.noise_in(plain.stdout + plain.stderr)
  want = [json.loads(line) for line in inferred.read_text(encoding="utf-8").splitlines()]
  got = [json.loads(line) for line in (out_dir / inferred.name).read_text(
      encoding="utf-8").splitlines()]
  assert len(got) == len(want) == 30
  for g, w in zip(got, want):
    assert tuple(g) == tuple(w) == FIELDS
    for field in FIELDS:
      assert g[field] == w[field], (w["index"], field)

  scored = subprocess.run([sys.executable, "-m", "crosstask.score", str(out_dir / inferred.name),
                           "--bootstrap=0"], cwd=runtime_subprocess.REPO, env=env,
                          capture_output=True, text=True, timeout=600)
  assert scored.returncode == 0, scored.stdout[-3000:] + scored.stderr[-3000:]
  assert not runtime_subprocess.noise_in(scored.stdout + scored.stderr)
  assert "note:" not in scored.stdout + scored.stderr  # the fingerprint is the task's own
  (record,) = records.read(out_dir)
  assert (record.task, record.step, record.fingerprint) == (TASK, evaluated.step,
                                                           evaluated.fingerprint)
  assert record.metrics == pytest.approx(evaluated.metrics, abs=1e-9)
