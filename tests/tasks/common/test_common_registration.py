"""Opt-in registration, imports without TensorFlow or the runtime, and the vocabulary check."""

import subprocess
import sys

import gin
import pytest

import runtime_subprocess as rs
from crosstask.runtime import gin_utils

NO_TF = "assert 'tensorflow' not in sys.modules and 'seqio' not in sys.modules, sorted(sys.modules)\n"


def _python(code: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", "import sys\n" + code], cwd=rs.REPO, env=rs.env(),
                        capture_output=True, text=True, timeout=300)


def test_import_registers_nothing_and_gin_parsing_imports_no_tensorflow():
  code = ("import crosstask.tasks, crosstask.tasks.vocabularies\n" + NO_TF
          + "import gin\nfrom crosstask.runtime import gin_utils\n"
          "gin_utils.import_configurables()\n"
          "for p in gin_utils.DEFAULT_SEARCH_PATHS: gin.add_config_file_search_path(p)\n"
          "for f in ('t5_1_1/base.gin', 'longlm/base.gin', 'mt5/small.gin'):\n"
          "  gin.parse_config_file(f)\n" + NO_TF
          + "print(gin.query_parameter('vocabularies.task_vocabulary.path'))\n")
  res = _python(code)
  assert res.returncode == 0, res.stderr[-3000:]
  assert res.stdout.strip().endswith("%VOCABULARY_PATH")


def test_task_modules_import_without_the_runtime_and_list():
  res = _python("import seqio\nn = len(seqio.TaskRegistry.names())\n"
                "import crosstask.tasks.csl as csl\n"
                "assert not [m for m in sys.modules if m.startswith('crosstask.runtime')]\n"
                "assert len(seqio.TaskRegistry.names()) - n == 360 + 9 == len(csl.TASKS)\n"
                "from crosstask.tasks import __main__ as cli\n"
                "sys.exit(cli.main(['--list', 'csl_zh_abstract_to_title_and_c*']))\n")
  assert res.returncode == 0, res.stderr[-3000:]
  assert res.stdout.splitlines() == [
      "task     csl_zh_abstract_to_title_and_category",
      "task     csl_zh_abstract_to_title_and_category_and_discipline",
      "2 tasks, 0 mixtures"]


def test_every_benchmark_package_keeps_the_contract():
  """Found from the folders, each package exposes SCHEMA/register/TASKS/MIXTURES and has configs."""
  import importlib  # pylint: disable=g-import-not-at-top
  import crosstask.tasks  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.common import registry  # pylint: disable=g-import-not-at-top
  root = rs.REPO / "crosstask"
  assert crosstask.tasks.BENCHMARKS == ("citesum", "clue", "csl", "lot", "scirepeval")
  for name in crosstask.tasks.BENCHMARKS:
    module = importlib.import_module(f"crosstask.tasks.{name}")
    assert registry.contract_problems(module) == []
    assert module.TASKS and (root / "t5x_configs" / name).is_dir(), name
  assert len(importlib.import_module("crosstask.tasks.csl").MIXTURES) == 28


def test_contract_problems_name_what_a_package_lacks():
  import types  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.common import registry  # pylint: disable=g-import-not-at-top
  bare = types.ModuleType("crosstask.tasks.bare")
  bare.SCHEMA, bare.TASKS = None, ("a",)
  assert registry.contract_problems(bare) == ["crosstask.tasks.bare has no register",
                                              "crosstask.tasks.bare has no MIXTURES"]
  bare.register, bare.MIXTURES = (lambda: ["a", "b"]), ()
  assert registry.contract_problems(bare) == [
      "crosstask.tasks.bare.register() does not return TASKS + MIXTURES"]


@pytest.fixture
def clean_gin():
  gin.clear_config()
  yield
  gin.clear_config()


@pytest.mark.parametrize("model_gin, bindings, vocab_ids, rows", [
    ("t5_1_1/tiny.gin", ["NUM_EMBEDDINGS=128"], 259, 128),
    ("longlm/base.gin", ["VOCABULARY_PATH='{data}/vocab/sentencepiece_cn.model'"], 32596, 32128),
])
def test_run_refuses_a_vocabulary_larger_than_the_embeddings(tmp_path, clean_gin, request,
                                                            model_gin, bindings, vocab_ids, rows):
  from crosstask.runtime import train_lib  # pylint: disable=g-import-not-at-top
  if any("{data}" in b for b in bindings):
    data = request.getfixturevalue("official_data")
    bindings = [b.format(data=data) for b in bindings]
  gin_utils.parse([model_gin, "csl/finetune_abstract_to_title.gin"],
                  [f"MODEL_DIR='{tmp_path / 'm'}'", *bindings])
  with pytest.raises(ValueError, match=rf"has {vocab_ids} ids but the model's embedding table "
                                       rf"has only {rows} rows"):
    train_lib.train()
  assert not list((tmp_path / "m").glob("checkpoint_*"))
