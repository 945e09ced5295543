r"""Trains a T5-layout SentencePiece vocabulary from task text and/or text files.

  python -m crosstask.tasks.train_vocab --task=csl_zh_abstract_to_title --split=train \
      --text_file=extra.txt --vocab_size=32000 --extra_ids=100 --output=/tmp/csl

writes /tmp/csl.model and /tmp/csl.vocab with pad=0, eos=1, unk=2, no bos and
byte fallback; `seqio.SentencePieceVocabulary("/tmp/csl.model", extra_ids=100)`
then puts the 100 sentinels on top (`--extra_ids` is checked that way here;
the .model itself holds no sentinels, as in T5).

Task text is the 'inputs'/'targets' strings a task has just before
tokenization: its source dataset through the preprocessors that come before
`seqio.preprocessors.tokenize` (or `tokenize_and_append_eos`).

SeqIO (and with it TensorFlow) is imported where it is used, so that the command line
silences TensorFlow's start-up lines before they are written (`crosstask.startup`).
"""

from __future__ import annotations

import argparse
import difflib
import functools
import importlib
import itertools
import os
import pathlib
import re
import sys
from typing import Iterable, Iterator, Optional, Sequence

import sentencepiece as spm

from crosstask import startup
from crosstask import tracing
from crosstask.text import feature_text

DEFAULT_MODULES = ("crosstask.tasks.all",)


def get_task(name: str) -> seqio.Task:
  """The registered task `name`; an error listing close matches otherwise."""
  import seqio  # pylint: disable=g-import-not-at-top
  names = sorted(seqio.TaskRegistry.names())
  if name not in names:
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else (
        f"; {len(names)} tasks are registered")
    raise ValueError(f"unknown task {name!r}{hint}")
  return seqio.TaskRegistry.get(name)


def _is_tokenize_step(fn) -> bool:
  import seqio  # pylint: disable=g-import-not-at-top
  while isinstance(fn, functools.partial):
    fn = fn.func
  return fn in (seqio.preprocessors.tokenize, seqio.preprocessors.tokenize_and_append_eos)


def pre_tokenize_steps(task: seqio.Task) -> list:
  """The task's preprocessors before its first tokenize step (placeholders dropped)."""
  import seqio  # pylint: disable=g-import-not-at-top
  steps = []
  for fn in task.preprocessors:
    if _is_tokenize_step(fn):
      break
    if not isinstance(fn, seqio.CacheDatasetPlaceholder):
      steps.append(fn)
  return steps


def _untokenized(task, split: str):
  import seqio  # pylint: disable=g-import-not-at-top
  ds = task.source.get_dataset(split=split, shuffle=False)
  for fn in pre_tokenize_steps(task):
    fn = seqio.utils.add_kwargs_to_transform(
        fn, sequence_length=None, output_features=task.output_features)
    ds = fn(ds)
  return ds


def task_texts(task_name: str, split: str = "train",
               features: Sequence[str] = ("inputs", "targets")) -> Iterator[str]:
  """The untokenized `features` strings of every example of a task split."""
  task = get_task(task_name)
  splits = list(task.source.splits)
  if split not in splits:
    raise ValueError(f"task {task_name!r} has no split {split!r}; it has {splits}")
  ds = tracing.without_autograph(_untokenized, task, split)
  spec = ds.element_spec
  keys = [k for k in features if k in spec and spec[k].dtype.name == "string"]
  if not keys:
    raise ValueError(f"task {task_name!r}: none of the features {list(features)} "
                     f"is a string before tokenization (found {sorted(spec)})")
  for example in ds.as_numpy_iterator():
    for key in keys:
      value = example[key]
      yield feature_text(value)


def file_texts(path: str) -> Iterator[str]:
  """One text per line of a UTF-8 file."""
  file = pathlib.Path(path)
  if not file.is_file():
    raise FileNotFoundError(f"--text_file {path!r} does not exist")
  with open(file, encoding="utf-8") as f:
    for line in f:
      yield line.rstrip("\n")


def train(texts: Iterable[str], output: str, *, vocab_size: int,
          character_coverage: float = 0.9995, max_sentences: Optional[int] = None,
          model_type: str = "unigram") -> str:
  """Trains SentencePiece on `texts` (first `max_sentences` non-empty); returns the .model path."""
  sentences = (t.replace("\n", " ") for t in texts if t.strip())
  if max_sentences:
    sentences = itertools.islice(sentences, max_sentences)
  first = next(sentences, None)
  if first is None:
    raise ValueError("no text to train on: the tasks and files gave no non-empty lines")
  prefix = pathlib.Path(output)
  prefix.parent.mkdir(parents=True, exist_ok=True)
  try:
    _train_sentencepiece(itertools.chain([first], sentences), prefix, vocab_size, model_type,
                         character_coverage)
  except RuntimeError as e:
    raise ValueError(_trainer_error(str(e), vocab_size)) from None
  model = pathlib.Path(f"{prefix}.model")
  _forget_where_trained(model)
  return str(model)


def _trainer_error(message: str, vocab_size: int) -> str:
  """SentencePiece's C++ error without its source location; a vocabulary larger than
  the text allows as the flag to change."""
  too_high = re.search(r"Vocabulary size too high \((\d+)\).*<= (\d+)", message)
  if too_high:
    return (f"--vocab_size={vocab_size} is more pieces than this text yields: at most "
            f"{too_high[2]} here (its characters, 256 byte pieces and the special ones). "
            "Give a smaller --vocab_size, or more text (--task, --text_file)")
  return "SentencePiece could not train: " + re.sub(r"^\w+: src/\S+ \[[^]]*\] ", "", message)


def _train_sentencepiece(sentences: Iterable[str], prefix: pathlib.Path, vocab_size: int,
                         model_type: str, character_coverage: float) -> None:
  spm.SentencePieceTrainer.train(
      sentence_iterator=sentences,
      model_prefix=str(prefix),
      vocab_size=vocab_size,
      model_type=model_type,
      character_coverage=character_coverage,
      byte_fallback=True,
      pad_id=0, eos_id=1, unk_id=2, bos_id=-1,  # T5 layout
      pad_piece="<pad>", eos_piece="</s>", unk_piece="<unk>",
      max_sentence_length=1 << 16,
      num_threads=os.cpu_count() or 1,
      minloglevel=2,
  )


def _forget_where_trained(model: pathlib.Path) -> None:
  """Clears what the model file records of its training run but not of its tokenizing:
  the output prefix and the thread count.

  Why: task fingerprints hash the model's bytes, so the same text trained into another
  folder (two `make demo` runs, or the GPU machine's copy of a run) gave another
  fingerprint, and `crosstask.results` kept two identical runs apart as different task
  definitions.
  """
  from sentencepiece import sentencepiece_model_pb2  # pylint: disable=g-import-not-at-top
  proto = sentencepiece_model_pb2.ModelProto()
  proto.ParseFromString(model.read_bytes())
  proto.trainer_spec.ClearField("model_prefix")
  proto.trainer_spec.ClearField("num_threads")
  model.write_bytes(proto.SerializeToString())


def _parser() -> argparse.ArgumentParser:
  p = argparse.ArgumentParser(prog="python -m crosstask.tasks.train_vocab",
                              description=__doc__.split("\n\n")[0])
  p.add_argument("--task", action="append", default=[],
                 help="registered SeqIO task to read (repeatable)")
  p.add_argument("--split", default="train")
  p.add_argument("--text_file", action="append", default=[],
                 help="UTF-8 file, one text per line (repeatable)")
  p.add_argument("--output", required=True, help="model prefix: writes PREFIX.model/.vocab")
  p.add_argument("--vocab_size", type=int, default=32000,
                 help="pieces in the .model (sentinels come on top)")
  p.add_argument("--extra_ids", type=int, default=0,
                 help="sentinels seqio adds on top; checked by loading the result")
  p.add_argument("--character_coverage", type=float, default=0.9995)
  p.add_argument("--max_sentences", type=int, default=0, help="0: all")
  p.add_argument("--model_type", default="unigram", choices=["unigram", "bpe"])
  p.add_argument("--module", action="append", default=None,
                 help="module to import to register tasks (repeatable; default "
                 f"{', '.join(DEFAULT_MODULES)} when a --task is not registered yet)")
  startup.add_verbose_flag(p)
  return p


def main(argv: Optional[Sequence[str]] = None) -> str:
  """Runs the command; returns the path of the written .model."""
  args = _parser().parse_args(argv)
  if not args.task and not args.text_file:
    raise SystemExit("give --task and/or --text_file")
  startup.quiet_startup(args.verbose)  # Before SeqIO loads TensorFlow.
  import seqio  # pylint: disable=g-import-not-at-top
  registered = set(seqio.TaskRegistry.names())
  if args.module or any(name not in registered for name in args.task):
    for module in args.module or DEFAULT_MODULES:
      importlib.import_module(module)
  for name in args.task:
    get_task(name)  # fail before reading anything
  for path in args.text_file:
    if not pathlib.Path(path).is_file():
      raise FileNotFoundError(f"--text_file {path!r} does not exist")
  texts = itertools.chain(
      *(task_texts(name, args.split) for name in args.task),
      *(file_texts(path) for path in args.text_file))
  path = train(texts, args.output, vocab_size=args.vocab_size,
               character_coverage=args.character_coverage,
               max_sentences=args.max_sentences or None, model_type=args.model_type)
  vocab = seqio.SentencePieceVocabulary(path, extra_ids=args.extra_ids)
  print(f"wrote {path}: {vocab.vocab_size} ids with extra_ids={args.extra_ids} "
        f"(pad={vocab.pad_id} eos={vocab.eos_id} unk={vocab.unk_id})")
  return path


if __name__ == "__main__":
  try:
    main()
  except (ValueError, FileNotFoundError, RuntimeError) as e:
    sys.exit(f"error: {e}")
