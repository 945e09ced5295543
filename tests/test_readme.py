"""The README's "Adding a task or mixture" snippet runs as written; its --run_dir example
reads a split the quick start's run has."""

import re
import subprocess
import sys
import types

import numpy as np
import pytest
import seqio

import runtime_helpers
import runtime_subprocess
from crosstask import paths
from crosstask import vocabularies
from crosstask.runtime.data import pipeline

README = paths.SAMPLE_DIR.parents[2] / "README.md"


def _snippet(heading: str) -> str:
  text = README.read_text(encoding="utf-8")
  section = text.split(heading, 1)[1]
  return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_adding_a_task_and_mixture_snippet(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  (tmp_path / "train.tsv").write_text("深度学习\t模型\n图像识别\t方法\n", encoding="utf-8")
  (tmp_path / "dev.tsv").write_text("图像识别方法研究\t图像识别\n", encoding="utf-8")
  snippet = _snippet("### Adding a task or mixture")
  for name in ("my_title_task", "my_mixture"):
    seqio.TaskRegistry.remove(name)
    seqio.MixtureRegistry.remove(name)
  module = {}
  exec(snippet, module)  # pylint: disable=exec-used

  task = seqio.get_mixture_or_task("my_title_task")
  ex = next(task.get_dataset({"inputs": 64, "targets": 16}, split="validation",
                             shuffle=False).as_numpy_iterator())
  vocab = task.output_features["targets"].vocabulary
  assert vocab.decode(ex["targets"].tolist()) == "图像识别"
  assert vocab.decode(ex["inputs"].tolist()) == "摘要->标题 图像识别方法研究"  # an arrow prompt
  scores = {}
  for fn in task.metric_fns:
    scores.update(fn(["图像识别"], ["图像识别"]))
  assert np.isclose(scores["rouge1"], 100) and np.isclose(scores["bleu"], 100, atol=1e-6)
  mixture = seqio.get_mixture_or_task("my_mixture")
  assert sorted(t.name for t in mixture.tasks) == ["csl_zh_abstract_to_title", "my_title_task"]
  # The hook a run with a SentencePiece model calls (it once read `register(vocabulary=...)`,
  # a name the runtime never calls): the mixture and both tasks, in that vocabulary.
  sp = vocabularies.get(runtime_helpers.sentencepiece_model(tmp_path))
  sys.modules["readme_tasks"] = types.SimpleNamespace(**module)
  try:
    pipeline.register_vocabulary("readme_tasks", sp)
  finally:
    del sys.modules["readme_tasks"]
  copy = seqio.get_mixture_or_task(vocabularies.task_name("my_mixture", sp))
  assert sorted(t.name for t in copy.tasks) == [
      vocabularies.task_name(n, sp) for n in ("csl_zh_abstract_to_title", "my_title_task")]
  assert all(t.output_features["targets"].vocabulary is sp for t in copy.tasks)
  # A row without its title fails naming the file and line (decode_csv named neither).
  (tmp_path / "dev.tsv").write_text("图像识别方法研究\t图像识别\n只有摘要\n", encoding="utf-8")
  with pytest.raises(paths.DataError, match=r"dev\.tsv:2: expected 2 tab-separated columns"):
    list(task.get_dataset({"inputs": 32, "targets": 16}, split="validation", shuffle=False))


@pytest.mark.slow(seconds=6)  # a process that imports TensorFlow
def test_the_snippet_as_a_run_imports_it_registers_all_its_mixture_names(tmp_path):
  # As a run imports it (MIXTURE_OR_TASK_MODULE='my_tasks'), in a fresh process: only
  # what the snippet imports is registered (it once named a CSL task it never imported;
  # the test above runs where other tests have registered CSL).
  (tmp_path / "train.tsv").write_text("深度学习\t模型\n", encoding="utf-8")
  (tmp_path / "dev.tsv").write_text("图像识别方法研究\t图像识别\n", encoding="utf-8")
  (tmp_path / "my_tasks.py").write_text(_snippet("### Adding a task or mixture"), "utf-8")
  fresh = subprocess.run(
      [sys.executable, "-c", "import my_tasks, seqio; print(sorted(t.name for t in "
       "seqio.get_mixture_or_task('my_mixture').tasks))"],
      cwd=tmp_path, env=runtime_subprocess.env(), capture_output=True, text=True, timeout=300)
  assert fresh.returncode == 0, fresh.stderr[-3000:]
  assert fresh.stdout.strip() == "['csl_zh_abstract_to_title', 'my_title_task']"


def test_the_run_dir_example_infers_a_split_the_quick_starts_run_has():
  """`crosstask.infer --run_dir=/tmp/demo --gin.INFER_SPLIT=...` on the README's demo
  training (csl/demo_tiny.gin on the bundled sample): the split must be one the sample
  has ('test' was not, and the job stopped at the missing file)."""
  text = README.read_text(encoding="utf-8")
  split = re.search(r"crosstask\.infer --run_dir=/tmp/demo --gin\.INFER_SPLIT=\"'(\w+)'\"",
                    text)[1]
  task_name = re.search(r"^MIXTURE_OR_TASK_NAME = '(\w+)'", (
      paths.SAMPLE_DIR.parents[1] / "t5x_configs" / "csl" / "demo_tiny.gin").read_text(
          encoding="utf-8"), re.M)[1]
  import crosstask.tasks.csl  # noqa: F401  pylint: disable=g-import-not-at-top
  with paths.use_data_dir(paths.SAMPLE_DIR):
    task = seqio.get_mixture_or_task(task_name)
    ex = next(task.get_dataset({"inputs": 32, "targets": 16}, split=split,
                               shuffle=False).as_numpy_iterator())
  assert ex["inputs"].size and ex["targets"].size


def _job_commands() -> list[str]:
  """The README's `python -m crosstask.<job> --gin_file=...` lines, continuations joined."""
  text = README.read_text(encoding="utf-8")
  found = []
  for block in re.findall(r"```bash\n(.*?)```", text, re.S):
    for line in block.replace("\\\n", " ").splitlines():
      line = line.split(" # ")[0].strip()
      if re.match(r"python -m crosstask\.(train|eval|infer|embed|relevance|export) ", line) and (
          "--gin_file" in line):
        found.append(line)
  return found


def test_every_job_command_parses_and_names_a_task_its_module_registers():
  """Each train, eval, infer, embed, relevance and export command of the README parses as
  its entry point parses it, sets no macro its config leaves unread, and its task is
  registered by the module it names (the title example once named none: 'No SeqIO task
  ... 0 are registered'). Nothing is trained: the gin config and the task lookup only."""
  import importlib  # pylint: disable=g-import-not-at-top
  import shlex  # pylint: disable=g-import-not-at-top
  import gin  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import gin_utils  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.data import pipeline  # pylint: disable=g-import-not-at-top
  commands = _job_commands()
  assert len(commands) >= 6, commands
  for command in commands:
    argv = shlex.split(command)
    importlib.import_module(argv[2])  # the entry point's own configurables (embed's)
    files, bindings, search_paths, _ = gin_utils.split_args(argv[3:])
    gin.clear_config()
    try:
      gin_utils.parse(files, bindings, search_paths, lock=False)
      gin_utils.check_macros_read(bindings)
      name = gin_utils.query("%MIXTURE_OR_TASK_NAME", None)
      if name is None:  # embed and relevance read their documents, export no data
        continue
      # Registration is opt-in: a command with no module registers nothing. (Another
      # command's module may have registered the task in this process already.)
      module = gin_utils.query("%MIXTURE_OR_TASK_MODULE", None)
      assert module, f"no MIXTURE_OR_TASK_MODULE for task {name!r}: {command}"
      pipeline.import_tasks(module)
      assert pipeline.get_mixture_or_task(name), command
    finally:
      gin.clear_config()
