"""The leakage guards: CLUE train/dev vs FewCLUE test_public, the CSL corpus vs CSLDCP."""

import pytest

from crosstask.tasks.clue import leakage
from crosstask.tasks.clue import readers as RD
from crosstask.tasks.csl import readers as csl_readers


def test_runs_that_train_on_the_source_are_refused():
  with pytest.raises(leakage.LeakageError, match="clue_tnews -> fewclue_tnews_k0"):
    leakage.check_run(["clue_tnews", "clue_afqmc"], "fewclue_tnews_k0", "test_public")
  with pytest.raises(leakage.LeakageError, match="csl_zh_abstract_to_discipline -> fewclue_csldcp"):
    leakage.check_run("csl_zh_abstract_to_discipline", "fewclue_csldcp_rank", "test_public")
  with pytest.raises(leakage.LeakageError, match="clue_cluewsc2020_rank -> fewclue_cluewsc"):
    leakage.check_run("clue_cluewsc2020_rank", "fewclue_cluewsc", "test_public")
  # Other tasks, other splits, and FewCLUE-only training are fine.
  leakage.check_run(["clue_tnews"], "fewclue_iflytek", "test_public")
  leakage.check_run(["clue_tnews"], "fewclue_tnews", "dev_0")
  leakage.check_run(["fewclue_tnews_k0", "fewclue_csl"], ["fewclue_tnews_k0", "fewclue_csl"],
                    "test_public")
  assert leakage.conflicts(["clue_csl"], ["fewclue_csl", "fewclue_csldcp", "fewclue_cluewsc"]) == [
      ("clue_csl", "fewclue_csl"), ("clue_csl", "fewclue_csldcp")]
  with pytest.raises(leakage.LeakageError, match="mixture 'm'"):
    leakage.check_mixture("m", ["clue_ocnli", "fewclue_ocnli"])


def test_csl_dev_shares_abstracts_with_csldcp(official_data):
  """The CSL corpus and CSLDCP overlap: CSL dev vs the FewCLUE CSLDCP files."""
  abstracts = [r["abstract"] for r in csl_readers.read_benchmark("dev", official_data)]

  def shared(split):
    content = [r["content"] for r in RD.read_all("fewclue", "csldcp", split, root=official_data)]
    return len(leakage.shared_texts(abstracts, content))

  assert [shared(f"dev_{k}") for k in range(5)] == [0, 0, 1, 3, 1]
  assert (shared("train_few_all"), shared("dev_few_all")) == (4, 5)
  records = RD.read_all("fewclue", "csldcp", "dev_few_all", root=official_data)
  kept = leakage.exclude_shared(records, abstracts, lambda r: r["content"])
  assert len(records) - len(kept) == 5
  assert not leakage.shared_texts(abstracts, [r["content"] for r in kept])


def test_text_key_ignores_spacing_and_width():
  assert leakage.text_key("ＡＢＣ 北京，") == leakage.text_key("ABC北京,")


def test_reading_test_public_refuses_a_checkpoint_trained_on_its_source(tmp_path):
  gin = pytest.importorskip("gin")
  import crosstask.tasks.clue  # noqa: F401  pylint: disable=g-import-not-at-top
  import seqio  # pylint: disable=g-import-not-at-top
  from crosstask import paths  # pylint: disable=g-import-not-at-top
  run = tmp_path / "run"
  (run / "checkpoint_8").mkdir(parents=True)
  (run / "operative_config.gin").write_text("MIXTURE_OR_TASK_NAME = 'clue_classification'\n")
  assert leakage.trained_on(run / "checkpoint_8") == "clue_classification"
  task = seqio.get_mixture_or_task("fewclue_tnews_k0")
  gin.clear_config()
  try:
    gin.parse_config([f"CHECKPOINT_PATH = '{run / 'checkpoint_8'}'",
                      "MIXTURE_OR_TASK_NAME = 'fewclue_tnews_k0'"])
    with paths.use_data_dir(paths.SAMPLE_DIR):
      task.get_dataset({"inputs": 64, "targets": 8}, split="validation")  # dev_0: fine
      with pytest.raises(leakage.LeakageError, match="clue_tnews -> fewclue_tnews_k0"):
        task.get_dataset({"inputs": 64, "targets": 8}, split="test_public")
  finally:
    gin.clear_config()
