"""How many of a split's examples TASK_FEATURE_LENGTHS cut, said before they are scored.

SeqIO trims every feature to its length without a word. A target cut short is one
the model can never produce whole (45 byte ids hold a fraction of an English TLDR),
so the eval's number measures the lengths, not the model; an input cut short is
what the model never sees. The metrics still compare against the whole text, so
nothing else would show it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

FEATURES = ('inputs', 'targets')


@dataclasses.dataclass(frozen=True)
class Cut:
  """One feature's examples longer than its length."""
  feature: str
  length: int
  cut: int
  examples: int
  longest: int

  def describe(self, task: str, split: str) -> str:
    effect = ('the model cannot produce them whole' if self.feature == 'targets'
              else 'the model sees only their start')
    return (f"task {task!r} split {split!r}: {self.cut} of {self.examples} {self.feature} "
            f"({100 * self.cut / self.examples:.1f}%) are longer than TASK_FEATURE_LENGTHS"
            f"['{self.feature}']={self.length} tokens (the longest: {self.longest}) and "
            f"were cut: {effect}. Raise the length to score them whole.")


def cuts(examples: Iterable[Mapping[str, Any]], output_features: Mapping[str, Any],
         lengths: Mapping[str, int]) -> list[Cut]:
  """The features of `examples` (SeqIO's, with `<feature>_pretokenized` text) that
  `lengths` cut: each text's tokens, EOS included where the feature adds one."""
  counted = {f: [0, 0, 0] for f in FEATURES if f in lengths and f in output_features}
  for ex in examples:
    for feature, tally in counted.items():
      text = ex.get(f'{feature}_pretokenized')
      if text is None:
        continue
      spec = output_features[feature]
      text = text.decode('utf-8') if isinstance(text, bytes) else str(text)
      tokens = list(spec.vocabulary.encode(text))
      if not _read_from(tokens, ex.get(feature)):
        continue  # Tokens made otherwise (span corruption): the text says nothing of them.
      n = len(tokens) + int(bool(getattr(spec, 'add_eos', False)))
      tally[1] += 1
      tally[2] = max(tally[2], n)
      if n > lengths[feature]:
        tally[0] += 1
  return [Cut(f, int(lengths[f]), cut, total, longest)
          for f, (cut, total, longest) in counted.items() if cut]


def _read_from(tokens: list[int], trimmed: Any) -> bool:
  """Whether the feature's (trimmed) ids begin as the text's tokens do, its EOS aside."""
  if trimmed is None:
    return False
  ids = [int(t) for t in trimmed]
  head = (ids[:-1] or ids)[:len(tokens)]
  return head == tokens[:len(head)]
