"""The README's "Adding a task or mixture" snippet runs as written."""

import re

import numpy as np
import seqio

from crosstask import paths

README = paths.SAMPLE_DIR.parents[2] / "README.md"


def _snippet(heading: str) -> str:
  text = README.read_text(encoding="utf-8")
  section = text.split(heading, 1)[1]
  return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_adding_a_task_and_mixture_snippet(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  (tmp_path / "train.tsv").write_text("深度学习\t模型\n图像识别\t方法\n", encoding="utf-8")
  (tmp_path / "dev.tsv").write_text("图像识别方法研究\t图像识别\n", encoding="utf-8")
  for name in ("my_title_task", "my_mixture"):
    seqio.TaskRegistry.remove(name)
    seqio.MixtureRegistry.remove(name)
  import crosstask.tasks.csl  # noqa: F401  (the mixture names a CSL task)
  exec(_snippet("### Adding a task or mixture"), {})  # pylint: disable=exec-used

  task = seqio.get_mixture_or_task("my_title_task")
  ex = next(task.get_dataset({"inputs": 32, "targets": 16}, split="validation",
                             shuffle=False).as_numpy_iterator())
  vocab = task.output_features["targets"].vocabulary
  assert vocab.decode(ex["targets"].tolist()) == "图像识别"
  scores = {}
  for fn in task.metric_fns:
    scores.update(fn(["图像识别"], ["图像识别"]))
  assert np.isclose(scores["rouge1"], 100) and np.isclose(scores["bleu"], 100, atol=1e-6)
  mixture = seqio.get_mixture_or_task("my_mixture")
  assert sorted(t.name for t in mixture.tasks) == ["csl_zh_abstract_to_title", "my_title_task"]
