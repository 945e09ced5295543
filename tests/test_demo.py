"""`make demo` end to end: vocabulary, datasets, baselines, a short training run, the table."""

import re
import subprocess
import sys

import pytest

import runtime_subprocess
from crosstask import records


@pytest.mark.slow
def test_demo_ends_with_a_table_where_the_model_interval_is_above_its_baseline(tmp_path):
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
  # The demo's model uses the SentencePiece vocabulary it trained, so its task is the
  # copy registered for that vocabulary.
  task = "csl_zh_discipline_to_category.csl_sample"
  assert all(c.startswith(f"{task} ") for c in columns)
  assert {c.split()[1] for c in columns} == {"accuracy", "macro_f1"}
  model = re.search(r"^\| tiny T5 \(300 steps\) \| T5 d64 2\+2L \| 0 \| (.+) \|$", out, re.M)
  baseline = re.search(r"^\| majority class \(train\) \| - \| \? \| (.+) \|$", out, re.M)
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
  assert record.step == 300 and record.task == task
  assert f"The trained model beats the baseline on: {task} accuracy" in out
  assert (tmp_path / "results.png").read_bytes()[:4] == b"\x89PNG"
  assert re.search(r"A real run, a pretrained T5-base, reaches [\d.]+ macro-F1 .* \(CSL paper, Table 9", out)
