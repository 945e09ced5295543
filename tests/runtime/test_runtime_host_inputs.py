"""The eval job's inputs without TensorFlow equal the SeqIO task's: CSL abstract -> title
through `plain_task`, a plain vocabulary and `host_inputs` gives the same token batches
as the SeqIO task and its feature converter, the same predictions from a tiny model
through `Inference`, the same text back and the same metrics; the task is named for the
model's vocabulary and fingerprinted as SeqIO's; and it all imports with TensorFlow and
SeqIO absent (the GPU image)."""

import types

import flax.linen as nn
import jax
import numpy as np
import pytest
import seqio

import numpy_params
import runtime_subprocess as rs
from crosstask import paths
from crosstask import plain_vocabularies
from crosstask import records
from crosstask import tracing
from crosstask import vocabularies
from crosstask.models import model as model_lib
from crosstask.models.config import TransformerConfig
from crosstask.models.network import Transformer
from crosstask.runtime.data import host_inputs
from crosstask.runtime.data import pipeline
from crosstask.runtime.jobs import infer_lib
from crosstask.runtime.predict import evaluation
from crosstask.runtime.predict import fingerprint
from crosstask.runtime.predict import inference
from crosstask.runtime.sharding import partitioning
from crosstask.tasks.common import factory
from crosstask.tasks.csl import tasks
from crosstask.tasks import train_vocab

# Inputs and titles some cut, some padded (bytes and pieces differ in length).
LENGTHS = {'inputs': 160, 'targets': 20}
FIELDS = (('abstract',), ('title',), 'zh')
CFG = TransformerConfig(vocab_size=2048, d_model=32, d_ff=64, num_heads=2, d_kv=16,
                        num_encoder_layers=1, num_decoder_layers=1, dropout_rate=0.0,
                        dtype='float32')


@pytest.fixture(scope='session')
def sample_sentencepiece(tmp_path_factory) -> str:
  """A 2000-piece SentencePiece model of the bundled sample: rare characters as bytes.

  One a process: vocabularies are registered by file name for the process's life, and a
  module-scoped fixture was built again (another folder, the same name, refused) when
  xdist ran another module's tests between this module's."""
  with paths.use_data_dir(paths.SAMPLE_DIR):
    texts = [t for ex in tasks.plain_task(*FIELDS).examples('train') for t in ex.values()]
  return train_vocab.train(texts, str(tmp_path_factory.mktemp('sp') / 'plain_inputs_sp'),
                           vocab_size=2000, character_coverage=0.98)


def _seqio_side(vocab_name: str, split: str):
  """(the task's examples as SeqIO gives them, its converted features, the task)."""
  vocab = vocabularies.get(vocab_name)
  (name,) = factory.register_for_vocabulary([tasks.csl_task(*FIELDS).name], vocab)
  task = seqio.get_mixture_or_task(name)
  # Built as the SeqIO job (infer_lib) builds it: traced without AutoGraph.
  task_ds = tracing.without_autograph(task.get_dataset, LENGTHS, split=split, shuffle=False,
                                      num_epochs=1).cache()
  model_ds = tracing.without_autograph(pipeline.feature_converter(pack=False), task_ds, LENGTHS)
  rows = list(model_ds.as_numpy_iterator())
  feats = {k: np.stack([r[k] for r in rows]) for k in rows[0]}
  return list(task_ds.as_numpy_iterator()), feats, model_ds, task


def _same_batches(vocab_name: str, split: str):
  examples, want, model_ds, task = _seqio_side(vocab_name, split)
  plain = tasks.plain_task(*FIELDS)
  texts = plain.examples(split)
  assert plain.examples(split, 7) == texts[:7]  # a job's num_examples: the first ones
  assert [(t['inputs'], t['targets']) for t in texts] == [
      (e['inputs_pretokenized'].decode(), e['targets_pretokenized'].decode()) for e in examples]
  got = host_inputs.features(texts, plain_vocabularies.get(vocab_name), LENGTHS)
  assert sorted(got) == sorted(want)
  for key, value in want.items():
    assert got[key].dtype == value.dtype and got[key].shape == value.shape, key
    np.testing.assert_array_equal(got[key], value, err_msg=key)
  return plain, texts, got, model_ds, task


def _vocabularies(sentencepiece: str, official: bool) -> list[str]:
  names = [vocabularies.BYTES, sentencepiece]
  root = paths.data_dir()
  if official and root is not None and (root / 'vocab' / 'sentencepiece_cn.model').is_file():
    names.append(str(root / 'vocab' / 'sentencepiece_cn.model'))  # LongLM's, on the GPU
  return names


def test_the_token_batches_equal_the_seqio_tasks_on_the_sample(sample_sentencepiece):
  ends = set()
  with paths.use_data_dir(paths.SAMPLE_DIR):
    for name in _vocabularies(sample_sentencepiece, official=False):
      _, _, got, _, _ = _same_batches(name, 'validation')
      ends.update(('inputs', int(t)) for t in got['encoder_input_tokens'][:, -1])
      ends.update(('targets', int(t)) for t in got['decoder_target_tokens'][:, -1])
  # Both features seen cut (EOS last) and padded (0 last): trimming and padding checked.
  assert ends == {(k, end) for k in ('inputs', 'targets') for end in (0, 1)}


def test_the_token_batches_equal_the_seqio_tasks_on_the_official_split(
    official_data, sample_sentencepiece):
  for name in _vocabularies(sample_sentencepiece, official=True)[1:]:
    _same_batches(name, 'validation')


def test_predictions_text_and_metrics_equal_the_seqio_jobs(sample_sentencepiece):
  vocab = types.SimpleNamespace(eos_id=1, vocab_size=CFG.vocab_size)
  model = model_lib.EncoderDecoderModel(Transformer(CFG), vocab, vocab)
  # Drawn with numpy (no init to compile). Seed 1: under seed 0's weights every greedy
  # title is empty, and the check of the pieces' decode below needs some text.
  boxed = numpy_params.random_variables(
      Transformer(CFG), np.ones((1, LENGTHS['inputs']), np.int32),
      np.ones((1, LENGTHS['targets']), np.int32), seed=1)['params']
  params = nn.unbox(boxed)
  partitioner = partitioning.Partitioner(devices=jax.devices()[:1])
  # 30 examples: three batches of 8 and one of 6, padded.
  runner = inference.Inference(model, partitioner, partitioner.logical_to_sharding(boxed),
                               batch_size=8)
  written = []
  with paths.use_data_dir(paths.SAMPLE_DIR):
    for name in (vocabularies.BYTES, sample_sentencepiece):
      plain, texts, feats, model_ds, task = _same_batches(name, 'validation')
      want, want_aux = runner.predict_with_aux(params, model_ds.enumerate())
      got, got_aux = runner.predict_batches(params, host_inputs.batches(feats, 8))
      assert got == want and got_aux == want_aux
      assert len(got) == len(got_aux['scores']) == len(texts) == 30
      vocab, plain_vocab = task.output_features['targets'].vocabulary, plain_vocabularies.get(name)
      decoded = [plain_vocab.decode(tokens) for _, tokens in got]
      assert decoded == [vocab.decode(tokens) for _, tokens in want]
      titles = [plain_vocab.decode(row.tolist()) for row in feats['decoder_target_tokens']]
      assert titles == [vocab.decode(row.tolist()) for row in feats['decoder_target_tokens']]
      written.append(any(decoded))
      targets = [task.postprocess_fn(t['targets'], is_target=True) for t in texts]
      for outputs in (decoded, titles):  # the model's, and the titles cut to 20 tokens
        predictions = [task.postprocess_fn(p) for p in outputs]
        assert plain.score(texts, outputs) == {
            k: v for fn in task.metric_fns for k, v in fn(targets, predictions).items()}
      assert 0 < plain.score(texts, titles)['rougeL'] < 100
    # The job's own reading (`infer_lib`): the first N, labelled a subset only where the
    # split holds more than N; its 30 examples under NUM_EXAMPLES=30 are the whole split.
    for limit, label in ((None, 'validation'), (29, 'validation[:29]'), (30, 'validation'),
                         (31, 'validation')):
      out = infer_lib.plain_predictions(runner, params, plain, plain_vocabularies.get(name),
                                        'validation', LENGTHS, limit)
      assert out.examples == texts[:limit] and out.tokens == got[:limit], limit
      assert records.subset_split('validation', len(out.tokens), whole=out.whole) == label
  assert written[1]  # the pieces' decode compared is of text, not only of nothing


def test_an_evaluator_labels_a_subset_only_where_the_split_holds_more(sample_sentencepiece,
                                                                      tmp_path):
  # The eval job's label of its split (records, the results table): the sample's 30
  # validation papers under NUM_EXAMPLES=30 are the whole split, not 'validation[:30]'.
  (name,) = factory.register_for_vocabulary([tasks.csl_task(*FIELDS).name],
                                            vocabularies.get(vocabularies.BYTES))
  cfg = pipeline.DatasetConfig(name, LENGTHS, 'validation', 8, False, 0,
                               module='crosstask.tasks.csl')
  labels = {}
  with paths.use_data_dir(paths.SAMPLE_DIR):
    for limit in (None, 29, 30, 31):
      evaluator = evaluation.Evaluator(cfg, str(tmp_path / str(limit)), num_examples=limit)
      labels[limit] = evaluator.splits[name]
  assert labels == {None: 'validation', 29: 'validation[:29]', 30: 'validation',
                    31: 'validation'}


def test_decoding_equals_seqios_past_eos_and_past_the_vocabulary(sample_sentencepiece):
  for name in (vocabularies.BYTES, sample_sentencepiece):
    vocab, plain_vocab = vocabularies.get(name), plain_vocabularies.get(name)
    ids = plain_vocab.encode('连铸坯 center 偏析')
    assert ids == list(vocab.encode('连铸坯 center 偏析')) and plain_vocab.vocab_size == vocab.vocab_size
    size = vocab.vocab_size
    for row in (ids, ids + [1] + ids, ids[:2] + [size, size + 40] + ids[2:] + [1, size], [1], []):
      assert plain_vocab.decode(row) == vocab.decode(row), (name, row)
    assert plain_vocab.decode(ids + [1] + ids) == plain_vocab.decode(ids) != ''


def test_the_plain_path_imports_and_runs_without_tensorflow_or_seqio(sample_sentencepiece):
  code = (rs.WITHOUT_TENSORFLOW
          + "from crosstask import paths, plain_vocabularies\n"
          "from crosstask.runtime.data import host_inputs\n"
          "import crosstask.runtime.predict.inference\n"
          "import crosstask.tasks.csl as csl\n"
          "from crosstask.tasks.csl import tasks\n"
          "assert csl.TASKS == () and csl.SCHEMA.name == 'csl'\n"
          "with paths.use_data_dir(paths.SAMPLE_DIR):\n"
          "  task = tasks.plain_task(('abstract',), ('title',), 'zh')\n"
          "  texts = task.examples('validation')\n"
          f"vocab = plain_vocabularies.get({sample_sentencepiece!r})\n"
          "feats = host_inputs.features(texts, vocab, {'inputs': 160, 'targets': 20})\n"
          "titles = [vocab.decode(r.tolist()) for r in feats['decoder_target_tokens']]\n"
          "print(len(texts), task.score(texts, titles)['rougeL'] > 50)\n")
  res = rs.run([rs.sys.executable, '-c', code], timeout=120)
  assert res.returncode == 0, res.stderr[-2000:]
  assert res.stdout.split() == ['30', 'True']


ARROWS = (FIELDS, (('abstract', 'keywords'), ('title', 'category'), 'en'))


def test_a_plain_tasks_fingerprint_is_its_seqio_tasks(sample_sentencepiece):
  for name in _vocabularies(sample_sentencepiece, official=True):
    for arrow in ARROWS:
      (registered,) = factory.register_for_vocabulary([tasks.csl_task(*arrow).name],
                                                      vocabularies.get(name))
      task, plain = seqio.get_mixture_or_task(registered), tasks.plain_task(*arrow)
      # The whole description, not only its hash: source, preprocessors, features, ...
      assert fingerprint.describe_plain(plain, plain_vocabularies.get(name)) == (
          fingerprint.describe(task)), (name, arrow)
      assert fingerprint.plain_fingerprint(plain, plain_vocabularies.get(name)) == (
          fingerprint.fingerprint(task))
  assert fingerprint.plain_fingerprint(plain, plain_vocabularies.get(vocabularies.BYTES)) != (
      fingerprint.plain_fingerprint(plain, plain_vocabularies.get(sample_sentencepiece)))


def _model(vocab, rows: int = 4096):
  return types.SimpleNamespace(input_vocabulary=vocab, output_vocabulary=vocab,
                               module=types.SimpleNamespace(config=types.SimpleNamespace(
                                   vocab_size=rows)))


def test_without_seqio_a_run_names_its_task_as_the_seqio_registry_does(sample_sentencepiece,
                                                                        monkeypatch):
  cfg = pipeline.DatasetConfig(tasks.task_name(*FIELDS), LENGTHS, 'validation', 8, False, 0,
                               module='crosstask.tasks.csl')
  want = [pipeline.check_run_dataset(_model(vocabularies.get(name)), cfg)
          for name in (vocabularies.BYTES, sample_sentencepiece)]
  assert [c.mixture_or_task_name for c in want] == [cfg.mixture_or_task_name,
                                                    cfg.mixture_or_task_name + '.plain_inputs_sp']
  monkeypatch.setattr(vocabularies, 'seqio_installed', lambda: False)
  got = [pipeline.check_run_dataset(_model(plain_vocabularies.get(name)), cfg)
         for name in (vocabularies.BYTES, sample_sentencepiece)]
  assert got == want
  with pytest.raises(ValueError, match='2000 ids but .* only 1024 rows'):
    pipeline.check_run_dataset(_model(plain_vocabularies.get(sample_sentencepiece), 1024), cfg)


@pytest.mark.parametrize('seqio_here', [True, False], ids=['seqio', 'without-seqio'])
def test_a_dataset_the_job_reads_is_refused_for_a_split_its_task_lacks(seqio_here, monkeypatch):
  """Before anything is restored or compiled, with SeqIO or without (the plain task's
  splits); a dataset the job may never read (a train run's evaluation) is not checked."""
  monkeypatch.setattr(vocabularies, 'seqio_installed', lambda: seqio_here)
  vocab = (vocabularies if seqio_here else plain_vocabularies).get(vocabularies.BYTES)
  cfg = pipeline.DatasetConfig(tasks.task_name(*FIELDS), LENGTHS, 'tset', 8, False, 0,
                               module='crosstask.tasks.csl')
  with pytest.raises(pipeline.TaskConfigError, match="has no split 'tset'; it has .*'validation'"):
    pipeline.check_run_dataset(_model(vocab), cfg, split_read=True)
  assert pipeline.check_run_dataset(_model(vocab), cfg).split == 'tset'


def test_without_seqio_the_model_vocabulary_the_task_and_its_fingerprint_are_seqios(
    sample_sentencepiece):
  """In a process without TensorFlow or SeqIO: the model gin file's vocabulary, the task
  `crosstask.infer` looks up by its registered name, its fingerprint, the leakage guard."""
  code = (rs.WITHOUT_TENSORFLOW
          + "from crosstask import plain_vocabularies, report_guard, vocabularies\n"
          "from crosstask.runtime.data import pipeline\n"
          "from crosstask.runtime.jobs import infer_lib\n"
          "from crosstask.runtime.predict import fingerprint\n"
          f"vocab = vocabularies.model_vocabulary({sample_sentencepiece!r})\n"
          f"assert vocab is plain_vocabularies.get({sample_sentencepiece!r})\n"
          "assert vocabularies.model_vocabulary() is plain_vocabularies.get('bytes')\n"
          "name = vocabularies.task_name('csl_zh_abstract_to_title', vocab)\n"
          "task = pipeline.plain_task('crosstask.tasks.csl', name)\n"
          "report_guard.check(['csl_zh_abstract_to_title'], name, 'validation')\n"
          "print(name, task.name, fingerprint.plain_fingerprint(task, vocab))\n")
  res = rs.run([rs.sys.executable, '-c', code], timeout=120)
  assert res.returncode == 0, res.stderr[-2000:]
  (registered,) = factory.register_for_vocabulary([tasks.csl_task(*FIELDS).name],
                                                  vocabularies.get(sample_sentencepiece))
  assert res.stdout.split() == [registered, tasks.csl_task(*FIELDS).name,
                                fingerprint.fingerprint(seqio.get_mixture_or_task(registered))]


def test_num_examples_never_cuts_a_rank_question(tmp_path):
  # LOT ClozeT as rank classification: one example per (story, candidate), two a story.
  # NUM_EXAMPLES=1 or 3 would score a story by one of its candidates, which is right or
  # wrong by which one comes first; each count ends on a whole question instead: the eval
  # job's label, the rows it scores and logs, its metric (infer takes `first_examples` too).
  (name,) = factory.register_for_vocabulary(['lot_zh_clozet_rank'],
                                            vocabularies.get(vocabularies.BYTES))
  cfg = pipeline.DatasetConfig(name, {'inputs': 160, 'targets': 20}, 'validation', 8, False, 0,
                               module='crosstask.tasks.lot')
  model = model_lib.EncoderDecoderModel(Transformer(CFG), *[types.SimpleNamespace(
      eos_id=1, vocab_size=CFG.vocab_size)] * 2)
  boxed = numpy_params.random_variables(Transformer(CFG), np.ones((1, 160), np.int32),
                                        np.ones((1, 20), np.int32), seed=1)['params']
  partitioner = partitioning.Partitioner(devices=jax.devices()[:1])
  runner = inference.Inference(model, partitioner, partitioner.logical_to_sharding(boxed),
                               batch_size=8)
  got = {}
  with paths.use_data_dir(paths.SAMPLE_DIR):  # two stories in validation: four examples
    for limit in (1, 2, 3):
      evaluator = evaluation.Evaluator(cfg, str(tmp_path / str(limit)), num_examples=limit)
      metrics = evaluator.evaluate(runner, nn.unbox(boxed), 0)[name]
      (log,) = (tmp_path / str(limit)).rglob(f'{name}-000000.jsonl')
      got[limit] = (evaluator.splits[name], log.parent.name, len(log.read_text().splitlines()),
                    metrics['accuracy'])
  assert [got[n][:3] for n in (1, 2, 3)] == [('validation[:2]', 'first_2', 2),
                                             ('validation[:2]', 'first_2', 2),
                                             ('validation', str(3), 4)]  # the whole split's
  assert got[1][3] == got[2][3] in (0.0, 100.0)  # one story, answered right or wrong
  assert got[3][3] in (0.0, 50.0, 100.0)


def test_first_examples_takes_a_rank_questions_options_whole():
  rows = [{'rank_question': q} for q in (b'0', b'0', b'0', b'1', b'1', b'2')]
  taken = {n: (len(pipeline.first_examples(iter(rows), n)[0]),
               pipeline.first_examples(iter(rows), n)[1]) for n in range(1, 7)}
  assert taken == {1: (3, True), 2: (3, True), 3: (3, True), 4: (5, True), 5: (5, True),
                   6: (6, False)}
  plain = [{'inputs': str(i)} for i in range(5)]  # no question: the first n exactly
  assert pipeline.first_examples(plain, 2) == (plain[:2], True)
  assert pipeline.first_examples(plain, 5) == (plain, False)
