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


def _tiny_model():
  import seqio  # pylint: disable=g-import-not-at-top
  from crosstask.models import config as config_lib, model as model_lib, network
  cfg = config_lib.TransformerConfig(vocab_size=264, d_model=8, d_ff=8, num_heads=1, d_kv=8,
                                     num_encoder_layers=1, num_decoder_layers=1)
  vocab = seqio.ByteVocabulary()
  return model_lib.EncoderDecoderModel(network.Transformer(cfg), vocab, vocab)


def _dataset(name, split):
  from crosstask.runtime.data import pipeline as data  # pylint: disable=g-import-not-at-top
  return data.DatasetConfig(name, {"inputs": 64, "targets": 8}, split, batch_size=8,
                            shuffle=False, seed=0)


def test_a_training_run_refuses_to_report_test_public_of_its_source(tmp_path):
  """The mixture trained on reaches the guard before the run reads or trains anything."""
  import crosstask.tasks.clue  # noqa: F401  pylint: disable=g-import-not-at-top
  from crosstask.runtime.jobs import train_lib  # pylint: disable=g-import-not-at-top
  with pytest.raises(leakage.LeakageError, match="clue_tnews -> fewclue_tnews_k0"):
    train_lib.train(model=_tiny_model(), train_dataset_cfg=_dataset("clue_classification",
                                                                    "train"),
                    infer_eval_dataset_cfg=_dataset("fewclue_tnews_k0", "test_public"),
                    model_dir=str(tmp_path / "run"), total_steps=1,
                    report_guard=leakage.check_run)


def test_a_job_refuses_test_public_of_a_checkpoint_trained_on_its_source(tmp_path):
  """The runtime reads what the checkpoint's run trained on (its operative_config.gin) and
  hands it to the guard the entry point passes, before the job reads anything."""
  import crosstask.tasks.clue  # noqa: F401  pylint: disable=g-import-not-at-top
  from crosstask.runtime.config import saved_run  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.jobs import restoring  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.state import checkpoints  # pylint: disable=g-import-not-at-top
  run = tmp_path / "run"
  (run / "checkpoint_8").mkdir(parents=True)
  (run / "operative_config.gin").write_text("MIXTURE_OR_TASK_NAME = 'clue_classification'\n")
  assert saved_run.trained_on(run / "checkpoint_8") == ["clue_classification"]
  model = _tiny_model()
  job = restoring.checkpoint_job(lambda j: j.dataset_cfg.split)

  def start(split):
    return job(model=model, dataset_cfg=_dataset("fewclue_tnews_k0", split),
               output_dir=str(tmp_path / "out"),
               restore_checkpoint_cfg=checkpoints.RestoreCheckpointConfig(
                   str(run / "checkpoint_8")),
               report_guard=leakage.check_run)

  assert start("validation") == "validation"  # dev_0: not what FewCLUE reports
  with pytest.raises(leakage.LeakageError, match="clue_tnews -> fewclue_tnews_k0"):
    start("test_public")


def test_the_entry_points_guard_refuses_as_a_configuration_error():
  # The entry points print a GinConfigError as one line (exit 2); a LeakageError had
  # come out as a 27-line traceback when eval reported a user mixture's test_public.
  from crosstask import report_guard  # pylint: disable=import-outside-toplevel
  from crosstask.runtime.config import gin_utils  # pylint: disable=import-outside-toplevel
  with pytest.raises(gin_utils.GinConfigError, match="refusing to report test_public after "
                     r"training .*csl_zh_abstract_to_discipline -> fewclue_csldcp_k0"):
    report_guard.check(["csl_zh_abstract_to_discipline.sentencepiece_cn"],
                       "fewclue_csldcp_k0", "test_public")
  report_guard.check(["csl_zh_abstract_to_discipline"], "fewclue_csldcp_k0", "validation")
