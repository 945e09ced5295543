"""Extractive baselines of the CiteSum paper (§3.1), as one sentence per paper.

No code was released; the definitions follow the paper's words:
* EXT-LEAD: the first sentence of the abstract.
* EXT-HEURISTIC: the first sentence containing "propose", "introduce" or "in
  this paper" (case-insensitive substrings, so "In this paper" and "proposed"
  match), else EXT-LEAD.
* EXT-ORACLE (CiteSum, Table 5): the sentence with the best stemmed ROUGE-2 F
  against the reference, the first on ties.
* EXT-ORACLE (SciTLDR, Table 6, Cachola et al. 2020): `allenai/scitldr
  scripts/get_oracle_sents.py`: sentences of 5-2,500 characters, scored with
  the `rouge` PyPI package's ROUGE-1 F against each reference; the best over
  all references wins (strict >, so the earlier reference and sentence win ties).

CiteSum abstracts are split with the rougeLsum splitter (pysbd); SciTLDR comes
split (`source`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from crosstask.metrics import multi_rouge
from crosstask.metrics import sentences as sentence_split
from crosstask.metrics import summary_rouge

HEURISTIC_CUES = ("propose", "introduce", "in this paper")


def ext_lead(sentences: Sequence[str]) -> str:
  return sentences[0].strip() if sentences else ""


def ext_heuristic(sentences: Sequence[str], cues: Sequence[str] = HEURISTIC_CUES) -> str:
  for sentence in sentences:
    lowered = sentence.lower()
    if any(cue in lowered for cue in cues):
      return sentence.strip()
  return ext_lead(sentences)


def ext_oracle_rouge2(sentences: Sequence[str], reference: str) -> str:
  """CiteSum's oracle: the sentence with the highest stemmed ROUGE-2 F (first on ties)."""
  best, best_score = "", -1.0
  for sentence in sentences:
    score = summary_rouge.pair_scores(reference, sentence, score_keys=("rouge2",))["rouge2"]
    if score > best_score:
      best, best_score = sentence.strip(), score
  return best


def ext_oracle_scitldr(sentences: Sequence[str], references: Sequence[str]) -> str:
  """SciTLDR's oracle sentence, exactly as `get_oracle_sents.py` picks it.

  '' when no sentence shares a unigram with any reference (the script's
  initial `max_sent`).
  """
  import rouge  # pylint: disable=g-import-not-at-top  # the `rouge` PyPI package the script uses
  evaluator = rouge.Rouge()
  candidates = [s.strip() for s in sentences if 5 <= len(s) <= 2500]
  if not candidates:
    return ""
  best_r1, best = 0.0, ""
  for reference in references:
    r1 = [s["rouge-1"]["f"] for s in evaluator.get_scores(candidates, [reference] * len(candidates))]
    index = r1.index(max(r1))
    if best_r1 < r1[index]:
      best_r1, best = r1[index], candidates[index]
  return best.replace("\n", "").strip()


def citesum_predictions(records: Sequence[Mapping]) -> dict[str, list[str]]:
  """EXT-LEAD / EXT-HEURISTIC / EXT-ORACLE for CiteSum records (`abstract`, `tldr`)."""
  out: dict[str, list[str]] = {"EXT-LEAD": [], "EXT-HEURISTIC": [], "EXT-ORACLE": []}
  for record in records:
    sents = sentence_split.split_sentences(record["abstract"])
    out["EXT-LEAD"].append(ext_lead(sents))
    out["EXT-HEURISTIC"].append(ext_heuristic(sents))
    out["EXT-ORACLE"].append(ext_oracle_rouge2(sents, record["tldr"]))
  return out


def scitldr_predictions(records: Sequence[Mapping]) -> dict[str, list[str]]:
  """The three baselines for SciTLDR records (`sentences`, `references`)."""
  rules: dict[str, Callable[[Mapping], str]] = {
      "EXT-LEAD": lambda r: ext_lead(r["sentences"]),
      "EXT-HEURISTIC": lambda r: ext_heuristic(r["sentences"]),
      "EXT-ORACLE": lambda r: ext_oracle_scitldr(r["sentences"], r["references"]),
  }
  return {name: [rule(r) for r in records] for name, rule in rules.items()}


def score_citesum(records: Sequence[Mapping]) -> dict[str, dict[str, float]]:
  """Each baseline's stemmed ROUGE (HF `rouge` rule) on CiteSum records."""
  targets = [r["tldr"] for r in records]
  return {name: summary_rouge.rouge_stemmed(targets, preds)
          for name, preds in citesum_predictions(records).items()}


def score_scitldr(records: Sequence[Mapping]) -> dict[str, dict[str, float]]:
  """Each baseline's SciTLDR multi-reference ROUGE (official multi-max rule)."""
  targets = [r["references"] for r in records]
  return {name: multi_rouge.rouge_multi(targets, preds)
          for name, preds in scitldr_predictions(records).items()}
