"""The LongLM pretraining tasks on the demo corpus, with the Chinese SentencePiece vocabulary."""

import math

import numpy as np
import pytest
import seqio

from crosstask import paths
from crosstask import vocabularies
import crosstask.tasks.lot  # pylint: disable=unused-import  # registers the tasks
from crosstask.tasks.lot import corpus
from crosstask.tasks.lot import pretrain_tasks as PT


@pytest.fixture
def cn_vocab(official_data):
  """The pretraining tasks' names for the Chinese SentencePiece model, registered on demand."""
  vocab = vocabularies.get(official_data / "vocab" / "sentencepiece_cn.model")
  crosstask.tasks.lot.register(vocab)
  with paths.use_data_dir(official_data):
    yield lambda name: vocabularies.task_name(name, vocab)


def test_demo_corpus_keeps_nlpcc_stories_out(official_data):
  docs, dropped = corpus.documents(official_data)
  assert len(docs) > 10_000 and dropped > 0  # some C3 fables retell NLPCC stories
  banned = corpus.excluded_shingles(official_data)
  assert not any(corpus.overlaps(d, banned) for d in docs[:2000])
  val = corpus.split_documents(docs, "validation")
  assert len(val) == len(docs[::20]) and not set(val) & set(corpus.split_documents(docs, "train"))


def test_infilling_examples_start_with_extra_id_1_and_end_with_eos(cn_vocab):
  task = seqio.get_mixture_or_task(cn_vocab(PT.INFILL_TASK))
  ds = task.get_dataset({"inputs": 128, "targets": 128}, split="validation", shuffle=False)
  ex = next(ds.as_numpy_iterator())
  vocab = task.output_features["targets"].vocabulary
  assert vocab.vocab_size == 32596
  assert ex["targets"][0] == 32594 and ex["targets"][-1] == 1  # <extra_id_1> ... </s>
  assert 32594 in ex["inputs"] and ex["inputs"][-1] == 1
  assert "<extra_id_1>" in vocab.decode(ex["targets"].tolist())
  target = PT.postprocess(vocab.decode(ex["targets"].tolist()), example=ex, is_target=True)
  assert "extra_id" not in target["text"] and target["num_tokens"] == len(ex["targets"])


def test_continuation_examples(cn_vocab):
  task = seqio.get_mixture_or_task(cn_vocab(PT.CONTINUATION_TASK))
  ds = task.get_dataset({"inputs": 128, "targets": 128}, split="validation", shuffle=False)
  ex = next(ds.as_numpy_iterator())
  assert ex["inputs"][-2:].tolist() == [32594, 1] and ex["targets"][0] == 32594


def test_mixture_rates_and_table9_metrics():
  mix = seqio.get_mixture_or_task("longlm_pretrain_demo_infill70")
  rates = {t.name: mix.get_rate(t) for t in mix.tasks}
  assert rates == {PT.INFILL_TASK: pytest.approx(0.7), PT.CONTINUATION_TASK: pytest.approx(0.3)}
  assert PT.pretrain_mixture(0.5) == "longlm_pretrain_demo"
  with pytest.raises(ValueError, match="infill_rate"):
    PT.pretrain_mixture(1.0)
  targets = [{"text": "小猫在河边钓鱼，钓到了一条大鱼。", "num_tokens": 4}, {"text": "是的", "num_tokens": 6}]
  assert PT.perplexity(targets, [-4.0, -6.0]) == {"perplexity": pytest.approx(math.e)}
  assert PT.pretrain_bleu(targets, ["小猫在河边钓鱼，钓到了一条大鱼。", ""]) == {"bleu-3": pytest.approx(50.0),
                                                          "bleu-4": pytest.approx(50.0)}
  assert np.isfinite(PT.perplexity(targets, [0.0, 0.0])["perplexity"])


def test_seqio_evaluator_reports_table9_metrics(cn_vocab):
  """Perplexity comes from the scores, BLEU from the predictions (here: the targets)."""
  infill = cn_vocab(PT.INFILL_TASK)
  evaluator = seqio.Evaluator(
      mixture_or_task_name=infill,
      feature_converter=seqio.EncDecFeatureConverter(pack=False),
      eval_split="validation", sequence_length={"inputs": 64, "targets": 64}, num_examples=4)
  cached = evaluator.cached_model_datasets[infill]
  targets = {int(i): ex["decoder_target_tokens"] for i, ex in cached.as_numpy_iterator()}
  lengths = {i: int((t != 0).sum()) for i, t in targets.items()}
  metrics, _ = evaluator.evaluate(
      compute_metrics=True,
      predict_fn=lambda ds: [(i, targets[i].tolist()) for i in range(len(targets))],
      score_fn=lambda ds: [(i, -2.0 * lengths[i]) for i in range(len(targets))])
  result = metrics.result()[infill]
  assert result["perplexity"] == pytest.approx(math.exp(2.0))
  assert result["bleu-3"] == pytest.approx(100.0)
  # Unsmoothed BLEU-4 of a target with fewer than 4 jieba words is ~0, even against itself.
  assert 0.0 < result["bleu-4"] <= 100.0


def test_the_runs_evaluator_takes_the_pretraining_mixture(cn_vocab, tmp_path):
  # The targets are built from tokens (no target text): the labels check reads the tokens.
  # It had refused the shipped runs/pretrain_longlm.gin at its first evaluation ("split
  # 'validation' carries no labels").
  from crosstask.runtime.data import pipeline  # pylint: disable=g-import-not-at-top
  from crosstask.runtime.predict import evaluation  # pylint: disable=g-import-not-at-top
  cfg = pipeline.DatasetConfig(cn_vocab(PT.MIXTURE), {"inputs": 64, "targets": 64},
                               "validation", 8, False, 0, module="crosstask.tasks.lot")
  evaluator = evaluation.Evaluator(cfg, str(tmp_path), num_examples=4)
  assert sorted(evaluator.fingerprints) == sorted(
      cn_vocab(t) for t in (PT.INFILL_TASK, PT.CONTINUATION_TASK))
  # A split of empty targets still reads as unlabelled: EOS alone is no label.
  assert not evaluation.has_labels([{"targets": np.array([1])}, {"targets": np.array([])}])
