"""The eval-only job end to end: CSL abstract -> title over a real split, crosstask vs HF.

Why: a researcher waits on the whole job, not on the decoding loop alone. crosstask's
side is `python -m crosstask.infer`'s own function for a machine without TensorFlow (the
GPU image), `infer_lib.plain_predictions`: the task's records read and laid out
(`csl.tasks.plain_task`), tokenized and converted to the model's batches
(`plain_vocabularies`, `runtime.data.host_inputs`), the runtime's `Inference` (its two
jitted decoding programs) and detokenizing; then the task's postprocessor and metrics
(ROUGE-L, BLEU). The job's target scores and JSON lines are left out, as HF's loop has
none. tests/runtime/test_runtime_host_inputs.py shows that path gives the SeqIO task's
token batches, predictions, text and metrics. HF's side is the loop a user writes:
tokenize a batch, `generate`, detokenize, the same metrics, over the same input texts
(read once, before the timing: HF users read the file themselves). Both decode
`Lengths.new_tokens` tokens at most, at the row's batch.

`outside_decode_share`: the share of one job's wall time spent outside the decoding
calls (timers around each call of the encoder and the loop, waiting for the device),
so reading, tokenizing, host transfers, detokenizing and the metrics.

Data: $CROSSTASK_DATA_DIR's CSL validation split, or the bundled sample's (30
examples) when unset; vocabulary: its `vocab/sentencepiece_cn.model` (LongLM's) when
there, else bytes. The weights are random (seeded) and shaped like the row's model;
their decodes are nonsense and the scores near 0, but the work is the job's.
Imports no TensorFlow or SeqIO.
"""

import time
from typing import Any

import gpu_crosstask
import gpu_hf
import gpu_spec
import gpu_workload
from gpu_workload import Lengths

SPLIT = 'validation'
BATCHES = 4  # the job's examples: 4 batches' worth, fewer where the split is smaller


def vocabulary_path() -> str | None:
  from crosstask import paths
  root = paths.data_dir()
  path = root / 'vocab' / 'sentencepiece_cn.model' if root else None
  return str(path) if path and path.is_file() else None


def task():
  """CSL abstract -> title, without SeqIO (`plain_task`)."""
  from crosstask.tasks.csl import tasks
  return tasks.plain_task(('abstract',), ('title',), 'zh')


def feature_lengths(lengths: Lengths) -> dict[str, int]:
  return {'inputs': lengths.inputs, 'targets': lengths.new_tokens}


class DecodeTimer:
  """Seconds spent inside wrapped calls, each waited for on the device."""

  def __init__(self):
    self.seconds = 0.0

  def wrap(self, fn):
    import jax

    def timed_call(*args):
      start = time.perf_counter()
      out = jax.block_until_ready(fn(*args))
      self.seconds += time.perf_counter() - start
      return out
    return timed_call


def row_infer(row: gpu_spec.Row, lengths: Lengths, steps: int) -> dict[str, Any]:
  """crosstask's job through infer_lib's function for it, with random weights."""
  import jax
  from crosstask import plain_vocabularies
  from crosstask.runtime.jobs import infer_lib
  from crosstask.runtime.predict import inference
  from crosstask.runtime.sharding import partitioning
  the_task, vocab = task(), plain_vocabularies.get(vocabulary_path())
  net = gpu_crosstask.decoding_model(gpu_crosstask.row_config(row, attention='xla'), row.beams)
  partitioner = partitioning.Partitioner()
  params = jax.device_put(gpu_crosstask.random_params(net, lengths), partitioner.replicated)
  runner = inference.Inference(net, partitioner,
                               jax.tree.map(lambda _: partitioner.replicated, params),
                               batch_size=row.batch, num_decodes=row.beams)
  timer = DecodeTimer()
  # The runner's two decoding programs, timed; everything else is the job's own code.
  runner._encode, runner._decode = (  # pylint: disable=protected-access
      timer.wrap(runner._encode), timer.wrap(runner._decode))  # pylint: disable=protected-access
  lengths_ = feature_lengths(lengths)

  def job():
    timer.seconds = 0.0
    out = infer_lib.plain_predictions(runner, params, the_task, vocab, SPLIT, lengths_,
                                      num_examples=row.batch * BATCHES)
    return len(out.texts), the_task.score(out.examples, out.texts), timer.seconds
  return {**measure_job(job, steps), 'peak_gib': gpu_crosstask.jax_peak_gib(),
          'device': jax.devices()[0].device_kind}


def measure_job(job, steps: int) -> dict[str, Any]:
  """Times `job() -> (examples, the task's metrics, seconds in decoding calls)` as gpu.py
  times a row (its first call, which compiles, apart); the median share outside decoding."""
  results = []

  def call():
    start = time.perf_counter()
    done, metrics, decode_s = job()
    results.append((done, metrics, 1 - decode_s / (time.perf_counter() - start)))
  start = time.perf_counter()
  call()
  compile_s = time.perf_counter() - start
  times = gpu_workload.timed(call, steps, lambda _: None)
  done, metrics, _ = results[-1]
  shares = sorted(share for _, _, share in results[-steps:])
  return {'times': times, 'compile_s': compile_s, 'examples': done, 'metrics': metrics,
          'vocabulary': vocab_path_name(), 'outside_decode_share': shares[len(shares) // 2]}


def vocab_path_name() -> str:
  return 'sentencepiece_cn' if vocabulary_path() else 'bytes'


def hf_tokenizer():
  """HF's tokenizer of the same vocabulary: T5's SentencePiece one, or ByT5's bytes."""
  import transformers
  path = vocabulary_path()
  if path:
    return transformers.T5Tokenizer(vocab_file=path, extra_ids=0, legacy=True)
  return transformers.ByT5Tokenizer(extra_ids=0)


def row_hf_infer(row: gpu_spec.Row, lengths: Lengths, steps: int, device: str) -> dict:
  """HF's loop over the same texts: tokenize, generate, detokenize, score."""
  the_task = task()
  exs = the_task.examples(SPLIT, row.batch * BATCHES)
  inputs = [ex['inputs'] for ex in exs]
  _, hf, impl = gpu_hf.decoding_model(row.model, device)
  tok = hf_tokenizer()
  generate = gpu_hf.generate_fn(hf, row, lengths.inputs, lengths.new_tokens, device)
  sync = gpu_hf.sync_fn(device)

  def job():
    in_generate, texts = 0.0, []
    for i in range(0, len(inputs), row.batch):
      chunk = inputs[i:i + row.batch]
      chunk += chunk[-1:] * (row.batch - len(chunk))  # the static cache's batch
      ids = tok(chunk, padding='max_length', truncation=True, max_length=lengths.inputs,
                return_tensors='pt').input_ids.to(device)
      begin = time.perf_counter()
      out = generate(ids)
      sync(None)
      in_generate += time.perf_counter() - begin
      # Random weights pick ids past the byte vocabulary, which ByT5's decoder refuses.
      rows = [[t for t in seq if t < len(tok)] for seq in out[:, 1:].tolist()]
      texts += tok.batch_decode(rows, skip_special_tokens=True)
    texts = texts[:len(inputs)]
    return len(texts), the_task.score(exs, texts), in_generate
  return {**measure_job(job, steps), 'attention': impl, **gpu_hf.device_facts(device)}
