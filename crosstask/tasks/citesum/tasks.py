"""CiteSum and its transfer tasks as English arrow-prompt SeqIO tasks.

CiteSum (train on citation texts):
  citesum_abstract_to_tldr                 Abstract -> TLDR            (CiTES)
  citesum_title_and_abstract_to_tldr       Title + Abstract -> TLDR    (rows with a title)
  citesum_abstract_and_discipline_to_tldr  Abstract + Discipline -> TLDR
  citesum_aic_to_tldr                      Abstract + Introduction + Conclusion -> TLDR
                                           (needs data with those fields; the HF release has none)
  citesum_abstract_to_title                Abstract -> Title           (Table 7, CiTES_Title)
  citesum_abstract_to_discipline           Abstract -> Discipline      (Table 7)
  mixtures citesum_tldr_title, citesum_tldr_title_discipline (equal rates; scored on TLDR)

Transfer (outputs lose `REF`; references of SciTLDR are all its TLDRs):
  scitldr_a_abstract_to_tldr               train/validation/test and few-shot splits
  scitldr_a_abstract_to_tldr_prompt_this_paper, ..._prompt_gold3: targets are the decoder
      prompt only ("This paper", or the first 3 words of the author TLDR), for runs with
      `prompt_with_targets=True`
  *_official_ref                           the released script's REF rule (parity)
  xsum_document_to_summary, gigaword_document_to_headline   their own prompts
  xsum_as_abstract_to_tldr / _to_title, gigaword_as_abstract_to_tldr / _to_title:
      the source model's prompt, the article laid out as an Abstract (zero-shot default)
  xsum_tfds_*, gigaword_tfds_*             the same from a prepared TFDS `xsum` / `gigaword`
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence

import seqio

from crosstask.metrics import multi_rouge
from crosstask.metrics import summary_rouge
from crosstask.tasks.citesum import fewshot
from crosstask.tasks.citesum import readers
from crosstask.tasks.citesum import ref
from crosstask.tasks.citesum.schema import SCHEMA
from crosstask.tasks.common import factory
from crosstask.tasks.common import layout
from crosstask.tasks.common import sources

LANG = "en"
SPLITS = readers.SPLITS
SCITLDR_FEW_SHOT = tuple(fewshot.FewShotSplit(pool, k, 42).name
                         for pool in fewshot.POOLS for k in (32, 128))
XSUM_SEEDS = (0, 1, 2)
XSUM_FEW_SHOT = tuple(f"k{k}_s{s}" for k in (10, 100) for s in XSUM_SEEDS)
REF_MODES = ("paper", "official")


# ------------------------------------------------------------------------------ CiteSum


def _citesum_split(split: str, *, need: Sequence[str] = (), dedupe: bool = False
                   ) -> Iterator[dict]:
  """CiteSum records having every field in `need` non-empty (paper §4.2 removes the rest)."""
  seen = set()
  for record in readers.read_citesum(split):
    absent = [f for f in need if f not in record]
    if absent:
      raise ValueError(
          f"CiteSum {split} records have no {absent} field(s): the AIC task needs data "
          "carrying the papers' introduction and conclusion, which the released CiteSum "
          "(HF yuningm/citesum) does not")
    if not all(record[f] for f in need):
      continue
    if dedupe:  # a paper cited N times would otherwise give N identical examples
      if record["paper_id"] in seen:
        continue
      seen.add(record["paper_id"])
    yield record


def _citesum_task(name: str, inputs: Sequence[str], output: str, *, need: Sequence[str] = (),
                  dedupe: bool = False) -> str:
  factory.arrow_task(
      name, schema=SCHEMA, inputs=inputs, outputs=[output], lang=LANG, splits=SPLITS,
      read_split=functools.partial(_citesum_split, need=tuple(need), dedupe=dedupe))
  return name


def register_citesum() -> list[str]:
  names = [
      _citesum_task("citesum_abstract_to_tldr", ["abstract"], "tldr"),
      _citesum_task("citesum_title_and_abstract_to_tldr", ["title", "abstract"], "tldr",
                    need=["title"]),
      _citesum_task("citesum_abstract_and_discipline_to_tldr", ["abstract", "discipline"],
                    "tldr", need=["discipline"]),
      _citesum_task("citesum_aic_to_tldr", ["abstract", "introduction", "conclusion"], "tldr",
                    need=["introduction", "conclusion"]),
      _citesum_task("citesum_abstract_to_title", ["abstract"], "title", need=["title"]),
      _citesum_task("citesum_abstract_to_discipline", ["abstract"], "discipline",
                    need=["discipline"]),
      _citesum_task("citesum_abstract_to_title_dedup", ["abstract"], "title", need=["title"],
                    dedupe=True),
      _citesum_task("citesum_abstract_to_discipline_dedup", ["abstract"], "discipline",
                    need=["discipline"], dedupe=True),
  ]
  names += [factory.register_mixture(m, tasks) for m, tasks in MIXTURE_TASKS.items()]
  return names


MIXTURE_TASKS = {  # equal rates; scored on TLDR
    "citesum_tldr_title": ["citesum_abstract_to_tldr", "citesum_abstract_to_title"],
    "citesum_tldr_title_discipline": ["citesum_abstract_to_tldr", "citesum_abstract_to_title",
                                      "citesum_abstract_to_discipline"],
}
MIXTURES = tuple(MIXTURE_TASKS)


# ------------------------------------------------------------------------------ postprocessing


def _as_text(value) -> str:
  if isinstance(value, (bytes, bytearray, memoryview)):
    return bytes(value).decode("utf-8", "replace")
  return "" if value is None else str(value)


def strip_ref_output(output, example=None, is_target=False, *, field: str, lead: str,
                     mode: str = "paper"):
  """Generated text -> its `field` value without REF; targets pass through parsed.

  A target carrying a `references` feature (SciTLDR) becomes that list, so the
  multi-reference metric sees every TLDR, not only the training target.
  """
  if is_target:
    if example is not None and "references" in example:
      return [r for r in _as_text(example["references"]).split("\n") if r]
    return layout.parse_fields(SCHEMA, output, [field], LANG)[field]
  text = layout.parse_fields(SCHEMA, _as_text(output), [field], LANG)[field]
  return ref.strip_ref(text, lead=lead, mode=mode)


def _postprocess(field: str, lead: str, mode: str) -> Callable:
  fn = functools.partial(strip_ref_output, field=field, lead=lead, mode=mode)
  fn.__name__ = f"strip_ref_{mode}"
  return fn


def _single_field_rouge(targets, predictions):
  """Stemmed ROUGE of bare strings (transfer targets are one field's text)."""
  return summary_rouge.rouge_stemmed(list(targets), list(predictions))


# ------------------------------------------------------------------------------ SciTLDR


def _scitldr_split(split: str) -> Iterable[dict]:
  few = fewshot.parse_split(split)
  if few is None:
    return readers.read_scitldr(split)
  pool = fewshot.scitldr_pool(list(readers.read_scitldr("train")), few.pool)
  return fewshot.select(pool, few)


def _abstract_inputs(text: str, output: str) -> str:
  return layout.format_inputs(SCHEMA, {"abstract": text}, ["abstract"], [output], LANG)


def _scitldr_example(record: dict) -> dict[str, str]:
  return {"inputs": _abstract_inputs(record["abstract"], "tldr"),
          "targets": layout.value_text(SCHEMA["tldr"], record["tldr"], SCHEMA),
          "references": "\n".join(record["references"])}


def _decoder_prompt(record: dict, prompt: str) -> str:
  if prompt == "gold3":  # the oracle row: the author TLDR's first three words
    return " ".join(record["references"][0].split()[:3])
  return prompt


def _prompt_task(name: str, prompt: str, mode: str) -> None:
  """Eval-only task whose targets are the decoder prompt alone, written without EOS.

  Decoded with `prompt_with_targets=True`, the model continues the prompt (which
  counts inside the target length, as the paper's max_length counts it).
  """
  def to_example(record):
    return {**_scitldr_example(record), "targets": _decoder_prompt(record, prompt)}

  factory.get_or_register_task(
      name,
      source=sources.records_source(_scitldr_split, ["validation", "test"],
                                    to_example=to_example, extra_features=["references"]),
      output_features=factory.text_features(targets_eos=False),
      postprocess_fn=_postprocess("tldr", "This paper", mode),
      metric_fns=[multi_rouge.rouge_multi])


def register_scitldr() -> list[str]:
  names = []
  for mode in REF_MODES:
    suffix = "" if mode == "paper" else "_official_ref"
    name = f"scitldr_a_abstract_to_tldr{suffix}"
    factory.arrow_task(
        name, schema=SCHEMA, inputs=["abstract"], outputs=["tldr"], lang=LANG,
        read_split=_scitldr_split, splits=SPLITS + SCITLDR_FEW_SHOT,
        to_example=_scitldr_example, extra_features=["references"],
        postprocess_fn=_postprocess("tldr", "This paper", mode),
        metric_fns=[multi_rouge.rouge_multi])
    names.append(name)
    for prompt, tag in (("This paper", "this_paper"), ("gold3", "gold3")):
      _prompt_task(f"scitldr_a_abstract_to_tldr_prompt_{tag}{suffix}", prompt, mode)
      names.append(f"scitldr_a_abstract_to_tldr_prompt_{tag}{suffix}")
  return names


# ------------------------------------------------------------------------------ XSum, Gigaword


def _xsum_split(split: str) -> Iterable[dict]:
  if split == fewshot.VALIDATION_SLICE:
    records = []
    for record in readers.read_xsum("validation"):
      records.append(record)
      if len(records) == 1000:
        break
    return records
  few = fewshot.parse_split(split)
  if few is None:
    return readers.read_xsum(split)
  return fewshot.select(list(readers.read_xsum("train")), few)


_NEWS = {  # dataset -> (reader, target field, splits)
    "xsum": (_xsum_split, "summary", SPLITS + (fewshot.VALIDATION_SLICE,) + XSUM_FEW_SHOT),
    "gigaword": (readers.read_gigaword, "headline", SPLITS),
}


def _news_example(record: dict, *, target: str, source_output: str | None) -> dict[str, str]:
  """Own prompt (`Document -> Summary`) or, for transfer, the source task's prompt."""
  if source_output is None:
    inputs = layout.format_inputs(SCHEMA, record, ["document"], [target], LANG)
  else:
    inputs = _abstract_inputs(record["document"], source_output)
  return {"inputs": inputs, "targets": layout.value_text(SCHEMA[target], record[target], SCHEMA)}


def _news_task(name: str, dataset: str, source_output: str | None) -> str:
  read_split, target, splits = _NEWS[dataset]
  field = source_output or target
  factory.arrow_task(
      name, schema=SCHEMA, inputs=["abstract" if source_output else "document"],
      outputs=[field], lang=LANG, read_split=read_split, splits=splits,
      to_example=functools.partial(_news_example, target=target, source_output=source_output),
      postprocess_fn=_postprocess(field, "", "paper"), metric_fns=[_single_field_rouge])
  return name


def register_news() -> list[str]:
  names = [_news_task("xsum_document_to_summary", "xsum", None),
           _news_task("gigaword_document_to_headline", "gigaword", None)]
  for dataset in _NEWS:
    for output in ("tldr", "title"):
      names.append(_news_task(f"{dataset}_as_abstract_to_{output}", dataset, output))
  return names


# ------------------------------------------------------------------------------ TFDS


TFDS_NAMES = {"xsum": "xsum:1.1.0", "gigaword": "gigaword:1.2.0"}


def _tfds_layout(prompt_and_label: str, target_key: str):
  """A TF-op preprocessor: `{document, summary}` -> `{inputs, targets}` in the arrow layout.

  Whitespace is collapsed as `layout.value_text` does; unlike the Python layout it
  does not defuse a literal "; Label: " inside an article (no field parses inputs).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def one_line(text):
    return tf.strings.strip(tf.strings.regex_replace(text, r"\s+", " "))

  def fn(dataset):
    return dataset.map(lambda ex: {
        "inputs": tf.strings.join([prompt_and_label, one_line(ex["document"])]),
        "targets": one_line(ex[target_key])}, num_parallel_calls=tf.data.AUTOTUNE)
  return fn


def register_tfds() -> list[str]:
  names = []
  for dataset, tfds_name in TFDS_NAMES.items():
    target = _NEWS[dataset][1]
    for source_output in (None, "tldr", "title"):
      if source_output is None:
        head = layout.format_inputs(SCHEMA, {"document": ""}, ["document"], [target], LANG)
        name, field = f"{dataset}_tfds_document_to_{target}", target
      else:
        head = _abstract_inputs("", source_output)
        name, field = f"{dataset}_tfds_as_abstract_to_{source_output}", source_output
      factory.get_or_register_task(
          name, source=seqio.TfdsDataSource(tfds_name=tfds_name),
          preprocessors=[_tfds_layout(head, "summary"), *factory.TOKENIZE],
          postprocess_fn=_postprocess(field, "", "paper"),
          metric_fns=[_single_field_rouge])
      names.append(name)
  return names


def register() -> list[str]:
  """Registers every CiteSum and transfer task and mixture (no data read); returns the names."""
  return register_citesum() + register_scitldr() + register_news() + register_tfds()
