"""Real-data fine-tuning and input pipeline on CSL abstract -> title (CROSSTASK_DATA_DIR).

Input pipeline: packed batches per second of `seqio.get_dataset` for
`csl_zh_abstract_to_title` (the runtime's DatasetConfig path: task preprocessing,
SentencePiece tokenization, EncDecFeatureConverter packing), against the batches
per second the T5 1.1 small training step consumes (goal: >= 5x).

Fine-tuning: non-padding input + target tokens per second through a training step
of T5 1.1 small (same seeded weights both sides), crosstask on packed batches vs
HF PyTorch on the same examples in stream order, batched as a Seq2SeqTrainer user
gets them (DataCollatorForSeq2Seq: padding to the longest in each batch, labels
-100 on padding), with as many examples per HF batch as crosstask packs on average
(the same tokens-per-batch budget). Goal: >= 2x. Both padding fractions recorded.
Data: the shared `validation` split (CSL benchmark dev, 1000 papers), Chinese
SentencePiece vocabulary (`vocab/sentencepiece_cn.model`).

    python benchmarks/finetune_csl.py [--quick] [--reps 5] [--batches 2]
"""

import argparse
import os
import sys
import tempfile

import numpy as np

import harness

sys.path.insert(0, str(harness.ROOT))

TASK = "csl_zh_abstract_to_title"


def _dataset(root, lengths: dict, pack: bool, batch: int | None):
  import gin
  import seqio
  from crosstask.runtime import data
  from crosstask.tasks import vocabularies  # pylint: disable=unused-import  # gin binding
  gin.parse_config(f"vocabularies.task_vocabulary.path = "
                   f"'{root / 'vocab' / 'sentencepiece_cn.model'}'")
  data.import_tasks("crosstask.tasks.csl")
  converter = seqio.EncDecFeatureConverter(pack=pack) if pack else None
  ds = seqio.get_dataset(TASK, task_feature_lengths=lengths, dataset_split="validation",
                         shuffle=False, num_epochs=None, feature_converter=converter) \
      if pack else seqio.get_mixture_or_task(TASK).get_dataset(
          lengths, split="validation", shuffle=False, num_epochs=1)
  return ds.batch(batch, drop_remainder=True) if batch else ds


def pipeline_rate(root, lengths, batch: int, n: int) -> dict:
  """Packed batches per second after the first two (graph building excluded)."""
  it = _dataset(root, lengths, True, batch).as_numpy_iterator()
  next(it), next(it)
  with harness.Timer() as t:
    for _ in range(n):
      next(it)
  return {"batches": n, "seconds": t.seconds, "batches_per_s": n / t.seconds}


def prepare(root, lengths, batch: int, num_batches: int, tmp: str) -> dict:
  """npz files of packed (crosstask) and dynamically padded (HF) batches of the same examples."""
  packed = _dataset(root, lengths, True, batch).as_numpy_iterator()
  ours, n_examples, ours_real, ours_slots = {}, 0, 0, 0
  for i in range(num_batches):
    b = next(packed)
    for k, v in b.items():
      ours[f"{i}/{k}"] = v
    n_examples += int(sum(len(set(r[r > 0].tolist())) for r in b["encoder_segment_ids"]))
    ours_real += int((b["encoder_input_tokens"] > 0).sum() + (b["decoder_target_tokens"] > 0).sum())
    ours_slots += b["encoder_input_tokens"].size + b["decoder_target_tokens"].size
  per_batch = max(1, round(n_examples / num_batches))
  # The same examples, in the same order, unpacked: the stream packing consumed.
  examples = _dataset(root, lengths, False, None).as_numpy_iterator()
  theirs, hf_real, hf_slots = {}, 0, 0
  for i in range(num_batches):
    rows = [next(examples) for _ in range(per_batch)]
    inputs = [r["inputs"] for r in rows]  # trimmed, EOS appended by the task
    targets = [r["targets"] for r in rows]
    li, lt = max(map(len, inputs)), max(map(len, targets))
    ids = np.zeros((per_batch, li), np.int64)
    labels = np.full((per_batch, lt), -100, np.int64)
    for j, (x, y) in enumerate(zip(inputs, targets)):
      ids[j, :len(x)], labels[j, :len(y)] = x, y
    theirs.update({f"{i}/input_ids": ids, f"{i}/attention_mask": (ids > 0).astype(np.int64),
                   f"{i}/labels": labels})
    hf_real += int((ids > 0).sum() + (labels >= 0).sum())
    hf_slots += ids.size + labels.size
  paths = {"crosstask": os.path.join(tmp, "packed.npz"), "hf": os.path.join(tmp, "padded.npz")}
  np.savez(paths["crosstask"], **ours)
  np.savez(paths["hf"], **theirs)
  return {"paths": paths, "examples_per_batch": per_batch,
          "real_tokens": {"crosstask": ours_real, "hf": hf_real},
          "padding_fraction": {"crosstask": 1 - ours_real / ours_slots, "hf": 1 - hf_real / hf_slots}}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--quick", action="store_true", help="3 repetitions, 1 batch per repetition")
  parser.add_argument("--model", default="small", choices=["tiny", "small"])
  parser.add_argument("--reps", type=int, default=5)
  parser.add_argument("--batches", type=int, default=2, help="training steps per repetition")
  parser.add_argument("--batch", type=int, default=8)
  parser.add_argument("--inputs", type=int, default=512)
  parser.add_argument("--targets", type=int, default=64)
  parser.add_argument("--pipeline_batches", type=int, default=30)
  parser.add_argument("--threads", type=int, default=harness.default_threads())
  parser.add_argument("--out", default=None)
  args = parser.parse_args(argv)
  if args.quick:
    args.reps, args.batches, args.pipeline_batches = min(args.reps, 3), 1, 10
  from crosstask import paths
  root = paths.data_dir()
  if root is None:
    raise SystemExit(f"set {paths.DATA_DIR_ENV} to the shared data root (see its README.md)")
  start_load = os.getloadavg()
  lengths = {"inputs": args.inputs, "targets": args.targets}
  vocab = 32640  # the Chinese SentencePiece model's 32,596 ids, rounded up to 128
  with tempfile.TemporaryDirectory() as tmp:
    prepared = prepare(root, lengths, args.batch, args.batches, tmp)
    pipeline = pipeline_rate(root, lengths, args.batch, args.pipeline_batches)
    checkpoint = os.path.join(tmp, "model")
    hf, ours = harness.Worker("hf", args.threads), harness.Worker("crosstask", args.threads)
    try:
      hf.call("save_checkpoint", model=args.model, dir=checkpoint, vocab=vocab)
      for w in (ours, hf):
        w.call("setup", checkpoint=checkpoint, workload={
            "kind": "train_batches", "path": prepared["paths"][w.framework],
            "num_batches": args.batches})
      times = harness.alternate([ours, hf], args.reps)
    finally:
      ours.close(), hf.close()
  side = {f: harness.summary(times[f], prepared["real_tokens"][f]) for f in ("crosstask", "hf")}
  ratio = side["crosstask"]["per_s_median"] / side["hf"]["per_s_median"]
  step_s = side["crosstask"]["median_s"] / args.batches
  pipe_ratio = pipeline["batches_per_s"] * step_s
  print(f"\nCSL abstract->title, T5 1.1 {args.model}, {args.batches} steps per repetition, "
        f"median of {args.reps}: non-padding input + target tokens/s")
  print(harness.table(
      [("crosstask (packed)", f"{args.batch} rows x {args.inputs}/{args.targets}",
        prepared["padding_fraction"]["crosstask"], side["crosstask"]["per_s_median"],
        f"{side['crosstask']['per_s_worst']:.0f}-{side['crosstask']['per_s_best']:.0f}"),
       ("HF (dynamic padding)", f"{prepared['examples_per_batch']} examples",
        prepared["padding_fraction"]["hf"], side["hf"]["per_s_median"],
        f"{side['hf']['per_s_worst']:.0f}-{side['hf']['per_s_best']:.0f}")],
      ["side", "batch", "padding", "tokens/s", "range"]))
  print(f"ratio {ratio:.2f} (goal 2.0); input pipeline {pipeline['batches_per_s']:.1f} packed "
        f"batches/s vs {1 / step_s:.2f} consumed by the step: {pipe_ratio:.1f}x (goal 5)")
  harness.write("finetune_csl", {
      "setup": {"task": TASK, "split": "validation", "model": args.model, "batch": args.batch,
                "lengths": lengths, "steps_per_rep": args.batches, "reps": args.reps,
                "hf_examples_per_batch": prepared["examples_per_batch"], "vocab": vocab},
      "finetune": {**side, "ratio": ratio, "goal": 2.0,
                   "padding_fraction": prepared["padding_fraction"],
                   "real_tokens_per_rep": prepared["real_tokens"]},
      "input_pipeline": {**pipeline, "train_step_s": step_s,
                         "step_batches_per_s": 1 / step_s, "ratio": pipe_ratio, "goal": 5.0}},
      args.threads, start_load, args.out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
