"""Real-data fine-tuning and input pipeline on CSL abstract -> title (CROSSTASK_DATA_DIR).

Input pipeline: packed batches per second of `seqio.get_dataset` for
`csl_zh_abstract_to_title` (the runtime's DatasetConfig path: task preprocessing,
SentencePiece tokenization, EncDecFeatureConverter packing), against the batches
per second the T5 1.1 small training step consumes (goal: >= 5x).

Fine-tuning: non-padding input + target tokens per second through a training step
of T5 1.1 small (same seeded weights both sides), crosstask on packed batches (the
runtime's packer, first-fit-decreasing; `--packer seqio` for SeqIO's next-fit) vs
HF PyTorch on exactly the examples of each packed batch, batched as a
Seq2SeqTrainer user gets them (DataCollatorForSeq2Seq: padding to the longest in
each batch, labels -100 on padding): the same real tokens per step on both sides.
Goal: >= 2x. Both padding fractions recorded.
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


def _dataset(root, lengths: dict, pack: bool, batch: int | None, packer: str = "first_fit"):
  import seqio
  from crosstask import vocabularies
  from crosstask.runtime.data import pipeline as data
  from crosstask.tasks import csl
  vocab = vocabularies.get(root / 'vocab' / 'sentencepiece_cn.model')
  csl.register(vocab)
  task = vocabularies.task_name(TASK, vocab)  # CSL's task for the Chinese SentencePiece model
  converter = data.feature_converter(True, packer) if pack else None
  ds = seqio.get_dataset(task, task_feature_lengths=lengths, dataset_split="validation",
                         shuffle=False, num_epochs=None, feature_converter=converter) \
      if pack else seqio.get_mixture_or_task(task).get_dataset(
          lengths, split="validation", shuffle=False, num_epochs=1)
  return ds.batch(batch, drop_remainder=True) if batch else ds


def pipeline_rate(root, lengths, batch: int, n: int, packer: str) -> dict:
  """Packed batches per second after the first two (graph building excluded)."""
  it = _dataset(root, lengths, True, batch, packer).as_numpy_iterator()
  next(it), next(it)
  with harness.Timer() as t:
    for _ in range(n):
      next(it)
  return {"batches": n, "seconds": t.seconds, "batches_per_s": n / t.seconds}


def unpack(batch: dict) -> list[tuple[np.ndarray, np.ndarray]]:
  """The (inputs, targets) examples of a packed batch, row by row, segment by segment."""
  out = []
  for enc, enc_seg, tgt, tgt_seg in zip(batch["encoder_input_tokens"], batch["encoder_segment_ids"],
                                        batch["decoder_target_tokens"], batch["decoder_segment_ids"]):
    for s in range(1, int(max(enc_seg.max(), tgt_seg.max())) + 1):
      if (enc_seg == s).any() or (tgt_seg == s).any():  # ids of empty examples are skipped
        out.append((enc[enc_seg == s], tgt[tgt_seg == s]))
  return out


def prepare(root, lengths, batch: int, num_batches: int, tmp: str, packer: str) -> dict:
  """npz files of packed (crosstask) and dynamically padded (HF) batches of the same examples.

  Each HF batch holds exactly the examples of the matching packed batch (read back
  from its segments), so both sides train on the same real tokens per step.
  """
  packed = _dataset(root, lengths, True, batch, packer).as_numpy_iterator()
  ours, theirs, n_examples = {}, {}, 0
  real = {"crosstask": 0, "hf": 0}
  slots = {"crosstask": 0, "hf": 0}
  for i in range(num_batches):
    b = next(packed)
    for k, v in b.items():
      ours[f"{i}/{k}"] = v
    real["crosstask"] += int((b["encoder_input_tokens"] > 0).sum()
                             + (b["decoder_target_tokens"] > 0).sum())
    slots["crosstask"] += b["encoder_input_tokens"].size + b["decoder_target_tokens"].size
    examples = unpack(b)  # trimmed, EOS appended by the task
    n_examples += len(examples)
    li, lt = max(len(x) for x, _ in examples), max(len(y) for _, y in examples)
    ids = np.zeros((len(examples), li), np.int64)
    labels = np.full((len(examples), lt), -100, np.int64)
    for j, (x, y) in enumerate(examples):
      ids[j, :len(x)], labels[j, :len(y)] = x, y
    theirs.update({f"{i}/input_ids": ids, f"{i}/attention_mask": (ids > 0).astype(np.int64),
                   f"{i}/labels": labels})
    real["hf"] += int((ids > 0).sum() + (labels >= 0).sum())
    slots["hf"] += ids.size + labels.size
  if real["crosstask"] != real["hf"]:
    raise AssertionError(f"unpacking lost tokens: {real}")
  paths = {"crosstask": os.path.join(tmp, "packed.npz"), "hf": os.path.join(tmp, "padded.npz")}
  np.savez(paths["crosstask"], **ours)
  np.savez(paths["hf"], **theirs)
  return {"paths": paths, "examples_per_batch": n_examples / num_batches, "real_tokens": real,
          "padding_fraction": {k: 1 - real[k] / slots[k] for k in real}}


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
  parser.add_argument("--packer", default="first_fit", choices=["first_fit", "seqio"],
                      help="crosstask's packing (utils.feature_converter.packer)")
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
    prepared = prepare(root, lengths, args.batch, args.batches, tmp, args.packer)
    pipeline = pipeline_rate(root, lengths, args.batch, args.pipeline_batches, args.packer)
    checkpoint = os.path.join(tmp, "model")
    with (harness.Worker("hf", args.threads) as hf,
          harness.Worker("crosstask", args.threads, training=True) as ours):
      hf.call("save_checkpoint", model=args.model, dir=checkpoint, vocab=vocab)
      for w in (ours, hf):
        w.call("setup", checkpoint=checkpoint, workload={
            "kind": "train_batches", "path": prepared["paths"][w.framework],
            "num_batches": args.batches})
      times = harness.alternate([ours, hf], args.reps)
  side = {f: harness.summary(times[f], prepared["real_tokens"][f]) for f in ("crosstask", "hf")}
  ratio = side["crosstask"]["per_s_median"] / side["hf"]["per_s_median"]
  step_s = side["crosstask"]["median_s"] / args.batches
  pipe_ratio = pipeline["batches_per_s"] * step_s
  print(f"\nCSL abstract->title, T5 1.1 {args.model}, {args.batches} steps per repetition, "
        f"median of {args.reps}: non-padding input + target tokens/s")
  print(harness.table(
      [(f"crosstask (packed, {args.packer})", f"{args.batch} rows x {args.inputs}/{args.targets}",
        prepared["padding_fraction"]["crosstask"], side["crosstask"]["per_s_median"],
        f"{side['crosstask']['per_s_worst']:.0f}-{side['crosstask']['per_s_best']:.0f}"),
       ("HF (dynamic padding)", f"{prepared['examples_per_batch']:.1f} examples",
        prepared["padding_fraction"]["hf"], side["hf"]["per_s_median"],
        f"{side['hf']['per_s_worst']:.0f}-{side['hf']['per_s_best']:.0f}")],
      ["side", "batch", "padding", "tokens/s", "range"]))
  print(f"ratio {ratio:.2f} (goal 2.0); input pipeline {pipeline['batches_per_s']:.1f} packed "
        f"batches/s vs {1 / step_s:.2f} consumed by the step: {pipe_ratio:.1f}x (goal 5)")
  harness.write("finetune_csl", {
      "setup": {"task": TASK, "split": "validation", "model": args.model, "batch": args.batch,
                "lengths": lengths, "packer": args.packer, "steps_per_rep": args.batches,
                "reps": args.reps,
                "hf_examples_per_batch": prepared["examples_per_batch"], "vocab": vocab},
      "finetune": {**side, "ratio": ratio, "goal": 2.0,
                   "padding_fraction": prepared["padding_fraction"],
                   "real_tokens_per_rep": prepared["real_tokens"]},
      "input_pipeline": {**pipeline, "train_step_s": step_s,
                         "step_batches_per_s": 1 / step_s, "ratio": pipe_ratio, "goal": 5.0}},
      args.threads, start_load, args.out, quick=args.quick)
  return 0


if __name__ == "__main__":
  sys.exit(main())
