"""CLUE and FewCLUE as Chinese arrow-prompt SeqIO tasks, and their mixtures.

Names (nothing is read at registration):
* `clue_<task>` for the eleven CLUE tasks, `fewclue_<task>` for the nine FewCLUE
  tasks on their raw splits (`train_0`, `dev_0`, …, `test_public`, `test`);
* `fewclue_<task>_k<k>` (k = 0..4, all): the FewCLUE protocol for split k as
  `train` = train_k, `validation` = dev_k, plus `test_public`, `test`, `unlabeled`;
* CLUE tasks also split train into `train_fit` and `train_holdout` (5%, seeded), to select
  checkpoints without the hidden test labels and report `validation`;
* `<name>_rank` for every classification and multiple-choice task: rank
  classification, one scored example per (record, option), answer = the best
  option. Training splits (`train*`) keep only the gold option, so training on
  a rank task is training on its generation twin.
Mixtures: `clue_classification`, `clue_mrc`, `clue_all`, `fewclue_k<k>` and
`fewclue_k<k>_rank`; each is checked by `leakage.check_mixture`.

Targets are label words / option texts (`labels`); generated text maps back to
an option by exact NFKC match, CMRC answers to the exact passage substring.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

import numpy as np

from crosstask import metrics as ev
from crosstask.metrics import cmrc
from crosstask.tasks.clue import examples as E
from crosstask.tasks.clue import labels as L
from crosstask.tasks.clue import leakage
from crosstask.tasks.clue import readers as RD
from crosstask.tasks.common import layout
from crosstask.tasks.common import rank as rank_tasks
from crosstask.tasks.common.schema import Field
from crosstask.tasks.common.schema import Schema

LANG = "zh"
KS = ("0", "1", "2", "3", "4", "all")


def _f(name: str, zh: str, **kw) -> Field:
  return Field(name, {LANG: zh}, **kw)


def _label(name: str, zh: str, kind: str) -> Field:
  return _f(name, zh, kind="label", label_set=L.words(kind))


# kind -> (schema, input fields, output field). Field order is the prompt order.
LAYOUTS = {
    "pair": (Schema("clue_pair", (_f("sentence1", "句子1"), _f("sentence2", "句子2"),
                                  _label("relation", "关系", "pair"))),
             ("sentence1", "sentence2"), "relation"),
    "nli": (Schema("clue_nli", (_f("premise", "前提"), _f("hypothesis", "假设"),
                                _label("relation", "关系", "nli"))),
            ("premise", "hypothesis"), "relation"),
    "tnews": (Schema("clue_tnews", (_f("news", "新闻"), _label("category", "类别", "tnews"))),
              ("news",), "category"),
    "iflytek": (Schema("clue_iflytek", (_f("app", "应用描述"),
                                        _label("category", "类别", "iflytek"))),
                ("app",), "category"),
    "wsc": (Schema("clue_wsc", (_f("sentence", "句子"), _f("pronoun", "代词"), _f("noun", "名词"),
                                _label("coreference", "指代", "wsc"))),
            ("sentence", "pronoun", "noun"), "coreference"),
    "csl": (Schema("clue_csl", (_f("abstract", "摘要"), _f("keywords", "关键词", kind="list",
                                                         separator="_"),
                                _label("verdict", "真伪", "csl"))),
            ("abstract", "keywords"), "verdict"),
    "eprstmt": (Schema("fewclue_eprstmt", (_f("review", "评论"),
                                           _label("sentiment", "情感", "eprstmt"))),
                ("review",), "sentiment"),
    # The same prompt and label set as the CSL task `摘要->学科`.
    "csldcp": (Schema("fewclue_csldcp", (_f("abstract", "摘要"),
                                         _label("discipline", "学科", "csldcp"))),
               ("abstract",), "discipline"),
    "chid": (Schema("clue_chid", (_f("candidates", "候选", kind="list", separator=E.OPTION_SEP),
                                  _f("passage", "文段"), _f("idiom", "成语"))),
             ("candidates", "passage"), "idiom"),
    "c3": (Schema("clue_c3", (_f("question", "问题"), _f("options", "选项", kind="list",
                                                      separator=E.OPTION_SEP),
                              _f("dialogue", "对话"), _f("article", "文章"), _f("answer", "答案"))),
           ("question", "options"), "answer"),
    "cmrc": (Schema("clue_cmrc", (_f("question", "问题"), _f("article", "文章"),
                                  _f("answer", "答案"))),
             ("question", "article"), "answer"),
}
RANKABLE = ("pair", "nli", "tnews", "iflytek", "wsc", "csl", "eprstmt", "csldcp", "chid", "c3")


def field_values(kind: str, record: dict) -> tuple[dict, tuple[str, ...]]:
  """The prompt fields of a record (target field empty) and the input field names."""
  schema, inputs, output = LAYOUTS[kind]
  r = record
  if kind in ("pair", "nli"):
    names = ("sentence1", "sentence2") if kind == "pair" else ("premise", "hypothesis")
    values = dict(zip(names, (r["sentence1"], r["sentence2"])))
  elif kind in ("tnews", "iflytek", "eprstmt"):
    values = {inputs[0]: r["sentence"]}
  elif kind == "wsc":
    values = {"sentence": E.mark_wsc(r), "pronoun": r["span2_text"], "noun": r["span1_text"]}
  elif kind == "csl":
    values = {"abstract": r["abst"], "keywords": r["keyword"]}
  elif kind == "csldcp":
    values = {"abstract": r["content"]}
  elif kind == "chid":
    values = {"candidates": r["candidates"], "passage": E.chid_passage(r)}
  elif kind == "c3":
    body = "dialogue" if r["kind"] == "d" else "article"
    values = {"question": r["question"], "options": r["choice"], body: E.c3_document(r)}
    inputs = ("question", "options", body)
  else:  # cmrc: question first, so truncation never cuts it
    values = {"question": r["question"], "article": r["context"]}
  return values, inputs


def to_example(record: dict, *, kind: str) -> dict[str, str]:
  """Generation example: arrow-prompt inputs, the gold option/label word/answer as target."""
  schema, _, output = LAYOUTS[kind]
  values, inputs = field_values(kind, record)
  values[output] = E.target_text(kind, record)
  ex = layout.example(schema, values, inputs, (output,), LANG)
  ex["id"] = str(record["id"])
  if kind in E.CHOICE_KINDS:
    ex["options"] = json.dumps(E.options(kind, record), ensure_ascii=False)
    gold = E.gold_index(kind, record)
    ex["answer_index"] = "-1" if gold is None else str(gold)
  if kind == "cmrc":
    ex["context"] = record["context"]
    ex["references"] = json.dumps(record["answers"], ensure_ascii=False)
  return ex


def to_rank_example(record: dict, *, kind: str) -> dict[str, str]:
  """Rank example: the same inputs, one option as the target, and which question/option it is."""
  ex = to_example(record, kind=kind)
  schema, _, output = LAYOUTS[kind]
  ex["targets"] = layout.value_text(schema[output], record["_text"], schema)
  ex.update(rank_tasks.features(record["_example"], record["_option"], record["_correct"]))
  return ex


def postprocess(output, example=None, is_target=False, *, kind: str):
  """Text (generated or target) -> the value the metric compares.

  Classification: the label word (or '' when the text is no label). Multiple
  choice: the option index (-1 for no option). CMRC: the answer mapped back to
  the passage; the target becomes the list of every reference.
  """
  text = layout.feature_text(output)
  example = example or {}
  if kind == "cmrc":
    if is_target:
      return json.loads(layout.feature_text(example["references"]))
    return cmrc.span_in_context(text, layout.feature_text(example.get("context", "")))
  if kind in E.CHOICE_KINDS:
    if is_target:
      return int(layout.feature_text(example["answer_index"]))
    options = json.loads(layout.feature_text(example.get("options", "[]")))
    return E.option_index(text, options)
  words = L.words(kind)
  index = E.option_index(text, words)
  return words[index] if index >= 0 else ""


def label_metrics(targets: Sequence[str], predictions: Sequence[str], *, kind: str) -> dict:
  """Accuracy, and macro-F1 over the task's classes as a diagnostic (skewed label sets)."""
  scores = ev.accuracy(targets, predictions)
  if all(t in L.LABELS_INVERSE[kind] for t in targets):  # not for unlabelled splits
    scores.update(ev.macro_f1(targets, predictions, label_set=L.words(kind)))
  return scores


def choice_accuracy(targets: Sequence[int], predictions: Sequence[int]) -> dict:
  return ev.accuracy([str(t) for t in targets], [str(p) for p in predictions])


def _metrics(kind: str) -> list:
  if kind == "cmrc":
    return [cmrc.cmrc2018]
  if kind in E.CHOICE_KINDS:
    return [choice_accuracy]
  fn = functools.partial(label_metrics, kind=kind)
  fn.__name__ = f"{kind}_label_metrics"
  return [fn]


# ---------------------------------------------------------------------------- sources


def _split_for(benchmark: str, split: str, k: str | None) -> str:
  """A task split -> the reader's split (per-k tasks name train/validation generically)."""
  if k is not None and split in ("train", "validation"):
    return f"{'train' if split == 'train' else 'dev'}_{'few_all' if k == 'all' else k}"
  return split


HOLDOUT_SPLITS = ("train_fit", "train_holdout")
HOLDOUT_FRACTION = 0.05
HOLDOUT_SEED = 0


def _holdout_group(kind: str, record: dict) -> str:
  """Records held out together: a ChID line, a CMRC passage, a C3 document."""
  if kind == "chid":
    return str(record["line_id"])
  if kind == "cmrc":
    return record["context"]
  if kind == "c3":
    return "\n".join(record["document"])
  return str(id(record))


def holdout(records: Sequence[dict], kind: str, part: str) -> list[dict]:
  """`train_fit` / `train_holdout`: a seeded 5% of train's groups held out for selection.

  CLUE's test labels are hidden, so checkpoints are selected on train_holdout and
  the official dev (`validation`) is reported; passages never straddle the two parts.
  """
  groups = list(dict.fromkeys(_holdout_group(kind, r) for r in records))
  order = np.random.RandomState(HOLDOUT_SEED).permutation(len(groups))
  held = {groups[i] for i in order[:max(1, round(HOLDOUT_FRACTION * len(groups)))]}
  keep = part == "train_holdout"
  return [r for r in records if (_holdout_group(kind, r) in held) == keep]


def _read(split: str, *, benchmark: str, task: str, k: str | None, rank: bool, kind: str):
  if split in HOLDOUT_SPLITS:
    records = holdout(RD.read_all(benchmark, task, "train"), kind, split)
  else:
    records = RD.read_all(benchmark, task, _split_for(benchmark, split, k))
  if rank:  # training splits score only the gold option; train_holdout is for evaluation
    train = split.startswith("train") and split != "train_holdout"
    return E.expand_options(kind, records, train=train)
  return records


def task_splits(benchmark: str, task: str, k: str | None) -> tuple[str, ...]:
  if k is not None:
    return ("train", "validation", "test_public", "test", "unlabeled")
  splits = RD.splits(benchmark, task)
  return splits + HOLDOUT_SPLITS if "train" in splits and benchmark == RD.CLUE else splits


def task_name(benchmark: str, task: str, k: str | None = None, rank: bool = False) -> str:
  return f"{benchmark}_{task}" + (f"_k{k}" if k is not None else "") + ("_rank" if rank else "")


def clue_task(benchmark: str, task: str, k: str | None = None, rank: bool = False):
  """The registered seqio.Task for one CLUE/FewCLUE task, split protocol and eval mode."""
  kind = RD.task_spec(benchmark, task).kind
  if rank and kind not in RANKABLE:
    raise ValueError(f"{benchmark} {task} has no options to rank (kind {kind!r})")
  schema, inputs, output = LAYOUTS[kind]
  read = functools.partial(_read, benchmark=benchmark, task=task, k=k, rank=rank, kind=kind)
  extra = ["id"]
  if kind in E.CHOICE_KINDS:
    extra += ["options", "answer_index"]
  if kind == "cmrc":
    extra += ["context", "references"]
  if rank:
    extra += rank_tasks.FEATURES
  if kind == "c3":  # the body field differs per record; the prompt is built per record
    inputs = ("question", "options", "dialogue")
  from crosstask.tasks.common import factory  # pylint: disable=g-import-not-at-top
  return factory.arrow_task(
      task_name(benchmark, task, k, rank), schema=schema, inputs=inputs, outputs=(output,),
      lang=LANG, read_split=read, splits=task_splits(benchmark, task, k),
      to_example=functools.partial(to_rank_example if rank else to_example, kind=kind),
      postprocess_fn=rank_tasks.postprocess if rank else functools.partial(postprocess, kind=kind),
      metric_fns=[rank_tasks.accuracy] if rank else _metrics(kind),
      extra_features=tuple(extra))


CLASSIFICATION = ("afqmc", "tnews", "iflytek", "ocnli", "cluewsc2020", "csl")
MRC = ("cmrc2018", "chid", "c3")


def register_mixture(name: str, tasks: Sequence[str]) -> str:
  from crosstask.tasks.common import factory  # pylint: disable=g-import-not-at-top
  leakage.check_mixture(name, tasks)
  return factory.register_mixture(name, tasks)


def register() -> list[str]:
  """Registers every CLUE/FewCLUE task and mixture (no data read); returns their names."""
  names = []
  for task, spec in RD.CLUE_TASKS.items():
    names.append(clue_task(RD.CLUE, task).name)
    if spec.kind in RANKABLE:
      names.append(clue_task(RD.CLUE, task, rank=True).name)
  for task, spec in RD.FEWCLUE_TASKS.items():
    for k in (None,) + KS:
      names.append(clue_task(RD.FEWCLUE, task, k).name)
      names.append(clue_task(RD.FEWCLUE, task, k, rank=True).name)
  return names + register_mixtures()


def register_mixtures() -> list[str]:
  """Registers the CLUE boards and the FewCLUE k-split mixtures; returns their names."""
  names = [register_mixture("clue_classification", [f"clue_{t}" for t in CLASSIFICATION]),
           register_mixture("clue_mrc", [f"clue_{t}" for t in MRC]),
           register_mixture("clue_all", [f"clue_{t}" for t in CLASSIFICATION + MRC])]
  for k in KS:
    for rank in (False, True):
      names.append(register_mixture(f"fewclue_k{k}" + ("_rank" if rank else ""),
                                    [task_name(RD.FEWCLUE, t, k, rank) for t in RD.FEWCLUE_TASKS]))
  return names
