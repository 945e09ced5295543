"""Opt-in registration, imports without TensorFlow or the runtime, and the vocabulary check."""

import subprocess
import sys

import gin
import pytest

import runtime_subprocess as rs
from crosstask.runtime.config import gin_utils

NO_TF = "assert 'tensorflow' not in sys.modules and 'seqio' not in sys.modules, sorted(sys.modules)\n"


def _python(code: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", "import sys\n" + code], cwd=rs.REPO, env=rs.env(),
                        capture_output=True, text=True, timeout=300)


def test_import_registers_nothing_and_gin_parsing_imports_no_tensorflow():
  code = ("import crosstask.tasks, crosstask.vocabularies\n" + NO_TF
          + "import gin\nfrom crosstask.runtime.config import gin_utils\n"
          "gin_utils.import_configurables()\n"
          "for p in gin_utils.DEFAULT_SEARCH_PATHS: gin.add_config_file_search_path(p)\n"
          "for f in ('t5_1_1/base.gin', 'longlm/base.gin', 'mt5/small.gin'):\n"
          "  gin.parse_config_file(f)\n" + NO_TF
          + "print(gin.query_parameter('vocabularies.model_vocabulary.path'))\n")
  res = _python(code)
  assert res.returncode == 0, res.stderr[-3000:]
  assert res.stdout.strip().endswith("%VOCABULARY_PATH")


@pytest.mark.slow
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
  assert crosstask.tasks.BENCHMARKS == ("citesum", "clue", "csl", "lot", "scirepeval", "xbench")
  for name in crosstask.tasks.BENCHMARKS:
    module = importlib.import_module(f"crosstask.tasks.{name}")
    assert registry.contract_problems(module) == []
    assert module.TASKS and (root / "t5x_configs" / name).is_dir(), name
  # 28 partition mixtures and the 3 prompt-variant mixtures.
  assert len(importlib.import_module("crosstask.tasks.csl").MIXTURES) == 31


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
  from crosstask.runtime.jobs import train_lib  # pylint: disable=g-import-not-at-top
  if any("{data}" in b for b in bindings):
    data = request.getfixturevalue("official_data")
    bindings = [b.format(data=data) for b in bindings]
  gin_utils.parse([model_gin, "csl/finetune_abstract_to_title.gin"],
                  [f"MODEL_DIR='{tmp_path / 'm'}'", *bindings])
  with pytest.raises(ValueError, match=rf"has {vocab_ids} ids but the model's embedding table "
                                       rf"has only {rows} rows"):
    train_lib.train()
  assert not list((tmp_path / "m").glob("checkpoint_*"))


# ------------------------------------------------------------ explicit vocabularies


@pytest.fixture(scope="session")
def sample_sp(tmp_path_factory):
  """A small SentencePiece model trained on the bundled CSL sample's abstracts and titles;
  one a process, as vocabularies are registered by file name for the process's life."""
  from crosstask import paths  # pylint: disable=g-import-not-at-top
  from crosstask.tasks import train_vocab  # pylint: disable=g-import-not-at-top
  from crosstask.tasks.csl import readers  # pylint: disable=g-import-not-at-top
  with paths.use_data_dir(paths.SAMPLE_DIR):
    texts = [r[f] for r in readers.read_records("train") for f in ("title", "abstract")]
  return train_vocab.train(texts, str(tmp_path_factory.mktemp("sp") / "csl_registration"),
                           vocab_size=2400)


def test_a_registered_task_keeps_its_vocabulary_whatever_gin_parses(clean_gin, sample_sp):
  import seqio  # pylint: disable=g-import-not-at-top
  from crosstask import vocabularies  # pylint: disable=g-import-not-at-top
  from crosstask.tasks import csl  # pylint: disable=g-import-not-at-top
  name, lengths = "csl_zh_abstract_to_title", {"inputs": 512, "targets": 64}
  task = seqio.get_mixture_or_task(name)
  before = next(task.get_dataset(lengths, split="validation", shuffle=False).as_numpy_iterator())
  gin_utils.parse(["t5_1_1/tiny.gin", "csl/finetune_abstract_to_title.gin"],
                  ["MODEL_DIR='/tmp/unused'", f"VOCABULARY_PATH={sample_sp!r}"])
  assert seqio.get_mixture_or_task(name) is task
  assert task.output_features["inputs"].vocabulary is vocabularies.get("bytes")
  after = next(task.get_dataset(lengths, split="validation", shuffle=False).as_numpy_iterator())
  assert after["inputs"].tolist() == before["inputs"].tolist()

  # The same task for the SentencePiece model is another name, registered on demand.
  sp = vocabularies.get(sample_sp)
  assert vocabularies.task_name(name, sp) in csl.register(sp)
  sp_task = seqio.get_mixture_or_task(f"{name}.csl_registration")
  assert all(f.vocabulary is sp for f in sp_task.output_features.values())
  ex = next(sp_task.get_dataset(lengths, split="validation", shuffle=False).as_numpy_iterator())
  assert ex["inputs_pretokenized"] == before["inputs_pretokenized"]
  assert len(ex["inputs"]) < len(before["inputs"]) / 2  # pieces, not 3 bytes a character
  mixture = seqio.get_mixture_or_task("csl_zh_xtask_2_1_meta.csl_registration")
  assert sorted(t.name for t in mixture.tasks) == sorted(
      f"{t.name}.csl_registration" for t in seqio.get_mixture_or_task("csl_zh_xtask_2_1_meta").tasks)


def _model(vocabulary, rows: int):
  from crosstask.models import config as config_lib  # pylint: disable=g-import-not-at-top
  from crosstask.models import model as model_lib  # pylint: disable=g-import-not-at-top
  from crosstask.models import network  # pylint: disable=g-import-not-at-top
  cfg = config_lib.TransformerConfig(vocab_size=rows, d_model=8, d_ff=8, num_heads=1, d_kv=8,
                                     num_encoder_layers=1, num_decoder_layers=1)
  return model_lib.EncoderDecoderModel(network.Transformer(cfg), vocabulary, vocabulary)


def test_a_run_uses_the_tasks_of_the_models_vocabulary_or_refuses(sample_sp):
  from crosstask import vocabularies  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.data import pipeline as data  # pylint: disable=g-import-not-at-top
  sp = vocabularies.get(sample_sp)
  run = lambda name, module: data.DatasetConfig(name, {"inputs": 8, "targets": 8}, "train", 8,
                                                False, 0, module=module)
  for name in ("csl_zh_abstract_to_title", "csl_zh_xtask_2_1_meta"):
    cfg = data.check_run_dataset(_model(sp, 2432), run(name, "crosstask.tasks.csl"))
    assert cfg.mixture_or_task_name == f"{name}.csl_registration"
    cfg = data.check_run_dataset(_model(vocabularies.get(), 384),
                                    run(name, "crosstask.tasks.csl"))
    assert cfg.mixture_or_task_name == name
  # A module without register(vocabulary) cannot provide its task for the model's
  # vocabulary: the run is refused, naming both vocabularies.
  import runtime_helpers  # pylint: disable=g-import-not-at-top,unused-import
  with pytest.raises(ValueError, match=r"Task 'runtime_copy' feature 'inputs' is tokenized with "
                                       r"bytes \(259 ids\), but the model's input vocabulary is "
                                       r"SentencePiece .*csl_registration\.model \(2400 ids\)"):
    data.check_run_dataset(_model(sp, 2432), run("runtime_copy", "runtime_helpers"))
  # A mixture's: the mixture's copy is the one to name (its task's would train on that
  # task alone), registered by the module's register_vocabulary.
  with pytest.raises(ValueError, match=r"^Mixture 'runtime_copy_reverse': task 'runtime_copy' "
                     r"feature 'inputs' .* or use 'runtime_copy_reverse\.csl_registration' \(the "
                     r"mixture .*factory\.register_for_vocabulary\(\['runtime_copy_reverse'\], "
                     r"vocabulary\) there"):
    data.check_run_dataset(_model(sp, 2432), run("runtime_copy_reverse", "runtime_helpers"))


# What upstream T5X does with MIXTURE_OR_TASK_MODULE (t5x.utils.import_module): gin is
# parsed and finalized first, then the module is imported and gin's registry must not grow.
T5X_IMPORT_UNDER_LOCKED_GIN = """
import importlib
import gin
import gin.config
import seqio
gin.finalize()
assert gin.config_is_locked()
assert not [m for m in sys.modules if m.startswith('crosstask')]
from crosstask.tasks import BENCHMARKS
for name in [f'crosstask.tasks.{b}' for b in BENCHMARKS] + ['crosstask.tasks.all']:
  before = {k for k, _ in gin.config._REGISTRY.items()}
  module = importlib.import_module(name)
  added = {k for k, _ in gin.config._REGISTRY.items()} - before
  assert not added, f'{name} registered gin configurables {sorted(added)}'
  missing = [t for t in getattr(module, 'TASKS', ()) if t not in seqio.TaskRegistry.names()]
  assert not missing, f'{name} did not register {missing[:3]}'
  print(name, len(getattr(module, 'TASKS', ())))
"""


@pytest.mark.slow
def test_upstream_t5x_imports_every_task_module_after_locking_gin():
  """The README's upstream-T5X recipe: a fresh process, gin locked before any crosstask import."""
  res = _python(T5X_IMPORT_UNDER_LOCKED_GIN)
  assert res.returncode == 0, res.stderr[-3000:]
  import crosstask.tasks  # pylint: disable=g-import-not-at-top
  counts = dict(line.split() for line in res.stdout.strip().splitlines())
  assert list(counts) == [f"crosstask.tasks.{b}" for b in crosstask.tasks.BENCHMARKS] + [
      "crosstask.tasks.all"]
  assert all(int(n) > 0 for name, n in counts.items() if name != "crosstask.tasks.all"), counts


@pytest.mark.slow
def test_every_benchmark_imports_under_a_locked_gin_config():
  """Task modules register no gin configurables, so a finalized config needs no unlocking."""
  res = _python(
      "import gin\nfrom crosstask.runtime.config import gin_utils\n"
      "gin_utils.parse(['t5_1_1/tiny.gin', 'runs/finetune.gin'], [\"MODEL_DIR='/tmp/x'\", "
      "\"MIXTURE_OR_TASK_NAME='x'\", \"TASK_FEATURE_LENGTHS={'inputs': 8, 'targets': 8}\", "
      "'TRAIN_STEPS=1'])\n"
      "assert gin.config_is_locked()\n"
      "def refuse(*a, **k): raise AssertionError('gin.unlock_config() called')\n"
      "gin.unlock_config = refuse\n"
      "from crosstask.runtime.data import pipeline as data\n"
      "from crosstask.tasks import BENCHMARKS\n"
      "data.import_tasks([f'crosstask.tasks.{b}' for b in BENCHMARKS] + ['crosstask.tasks.all'])\n"
      "import crosstask.tasks.all as everything\n"
      "assert [m.__name__.rsplit('.', 1)[1] for m in everything.IMPORTED] == list(BENCHMARKS)\n"
      "assert gin.config_is_locked()\n"
      "print('ok')\n")
  assert res.returncode == 0, res.stderr[-3000:]
  assert res.stdout.strip().endswith("ok")


def test_a_run_says_which_vocabulary_copy_of_its_task_it_reads(sample_sp, capsys):
  from crosstask import vocabularies  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import run as run_lib  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.data import pipeline as data  # pylint: disable=g-import-not-at-top
  cfg = data.DatasetConfig("csl_zh_abstract_to_title", {"inputs": 8, "targets": 8}, "train", 8,
                           False, 0, module="crosstask.tasks.csl")
  # Three roles read the one task (training, teacher-forced and decoded evaluation):
  # said once.
  resolved = run_lib.resolve(_model(vocabularies.get(sample_sp), 2432),
                             datasets={"train": cfg, "train_eval": cfg, "infer_eval": cfg})
  assert resolved.dataset("train").mixture_or_task_name == "csl_zh_abstract_to_title.csl_registration"
  assert resolved.dataset("infer_eval").mixture_or_task_name == (
      "csl_zh_abstract_to_title.csl_registration")
  said = capsys.readouterr().out
  assert said.count("Task 'csl_zh_abstract_to_title' is read as "
                    "'csl_zh_abstract_to_title.csl_registration'") == 1, said
  # A model of the task's own vocabulary reads the task as named, silently.
  resolved = run_lib.resolve(_model(vocabularies.get(), 384), datasets={"train": cfg})
  assert resolved.dataset("train").mixture_or_task_name == "csl_zh_abstract_to_title"
  assert capsys.readouterr().out == ""
