"""The demo's baseline table on the bundled sample, and the task-listing CLI."""

import collections

import pytest

from crosstask import demo
from crosstask import paths
from crosstask.tasks import __main__ as cli
from crosstask.tasks.csl import baselines
from crosstask.tasks.csl import readers


def test_baseline_table_on_sample(monkeypatch):
  monkeypatch.delenv(paths.DATA_DIR_ENV, raising=False)
  rows = {r["task"]: r for r in demo.baseline_rows()}
  assert set(rows) == {"csl_zh_abstract_to_title", "csl_zh_abstract_to_keywords",
                       "csl_zh_discipline_to_category", "csl_zh_abstract_to_discipline",
                       "csl_zh_abstract_to_title_and_keywords"}
  train = list(readers.read_records("train"))
  dev = list(readers.read_records("dev"))
  top = collections.Counter(r["category"] for r in train).most_common(1)[0][0]
  expected = 100 * sum(r["category"] == top for r in dev) / len(dev)
  assert rows["csl_zh_discipline_to_category"]["accuracy"] == pytest.approx(expected)
  assert rows["csl_zh_discipline_to_category"]["examples"] == 30
  title = rows["csl_zh_abstract_to_title"]
  assert 10 < title["rougeL"] < 90 and 0 < title["bleu"] < 90
  assert 0 < rows["csl_zh_abstract_to_keywords"]["keyword_f1"] < 60
  both = rows["csl_zh_abstract_to_title_and_keywords"]
  assert both["title/rougeL"] == pytest.approx(title["rougeL"])
  assert both["keywords/keyword_f1"] == pytest.approx(rows["csl_zh_abstract_to_keywords"]["keyword_f1"])
  assert "csl_zh_abstract_to_title" in demo.format_rows(list(rows.values()))


def test_baseline_pieces():
  assert baselines.lead_title("目的 探讨针刺疗效。方法 随机分组") == "探讨针刺疗效"
  kws = baselines.ngram_keywords("深度学习模型。深度学习方法用于图像识别，图像识别精度高。")
  assert sorted(kws[:2]) == ["图像识别", "深度学习"]
  assert baselines.majority(["理学", "工学", "工学"]) == "工学"
  with pytest.raises(ValueError):
    baselines.majority([])


def test_list_cli(capsys):
  assert cli.main(["--list", "csl_zh"]) == 0
  out = capsys.readouterr().out.strip().splitlines()
  # 180 arrow tasks, 9 prompt variants and the 5 xbench meta members that wrap CSL
  # tasks; the 14 scenario mixtures and 3 prompt-variant mixtures. Copies another test
  # registered for another vocabulary ('<name>.<vocabulary>') are listed too: not counted.
  from crosstask import vocabularies  # pylint: disable=g-import-not-at-top
  plain = [line.split()[:2] for line in out[:-1]
           if vocabularies.base_task_name(line.split()[1]) == line.split()[1]]
  assert [kind for kind, _ in plain].count("task") == 194
  assert [kind for kind, _ in plain].count("mixture") == 17
  assert "task     csl_zh_abstract_to_title" in out
  assert cli.main(["--list", "csl_*_to_title_and_category"]) == 0
  assert capsys.readouterr().out.strip().splitlines()[-1] == "14 tasks, 0 mixtures"  # 7 input sets x 2 languages


def test_list_cli_lists_a_module_of_the_researchers_own(capsys, tmp_path, monkeypatch):
  # `--list 'my_*'` had said "0 tasks, 0 mixtures": only crosstask's benchmarks were imported.
  (tmp_path / "listed_own_tasks.py").write_text(
      "import crosstask.tasks.csl\n"
      "from crosstask.tasks.common import factory\n"
      "factory.register_mixture('listed_own_mix', ['csl_zh_abstract_to_title',\n"
      "                                            'csl_zh_title_to_category'])\n", "utf-8")
  assert cli.main(["--list", "listed_own_*"]) == 0  # crosstask's benchmarks only
  assert capsys.readouterr().out.splitlines() == [
      "0 tasks, 0 mixtures", "(only crosstask's benchmarks were imported: name a module of "
      "your own with --module NAME)"]
  assert cli.main(["--list", "listed_own_*", "--module", "listed_own_tasks"]) == 2
  assert capsys.readouterr().err.startswith(
      "ERROR: --module: MIXTURE_OR_TASK_MODULE names 'listed_own_tasks', which is not a module "
      "importable from here (No module named 'listed_own_tasks'); a module of your own is "
      "imported as Python imports any: run from the folder that holds it or add that folder "
      "to PYTHONPATH.")
  monkeypatch.syspath_prepend(str(tmp_path))
  assert cli.main(["--list", "listed_own_*", "--module", "listed_own_tasks"]) == 0
  assert capsys.readouterr().out.splitlines() == [
      "mixture  listed_own_mix  (2 tasks)", "0 tasks, 1 mixtures"]
  # A mixture naming a task no module registered: the line of the module, as a run says
  # it, and close names (it was SeqIO's 34-line traceback).
  (tmp_path / "listed_typo_tasks.py").write_text(
      "import crosstask.tasks.csl\n"
      "from crosstask.tasks.common import factory\n"
      "factory.register_mixture('listed_typo_mix', ['csl_zh_abstract_to_titel'])\n", "utf-8")
  assert cli.main(["--list", "--module", "listed_typo_tasks"]) == 2
  err = capsys.readouterr().err
  assert err.startswith(f"ERROR: --module: {tmp_path / 'listed_typo_tasks.py'}:3: "
                        "MIXTURE_OR_TASK_MODULE 'listed_typo_tasks' names "
                        "'csl_zh_abstract_to_titel' in a mixture, and no task or mixture of "
                        "that name is registered. Did you mean: csl_zh_abstract_to_title"), err
