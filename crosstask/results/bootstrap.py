"""95% intervals: a percentile bootstrap over examples for one run, Student's t over seeds.

One run's number is a metric over a finite validation set; resampling the
examples (with replacement, a fixed seed so tables are reproducible) and
recomputing the task's own metric functions shows how much of it is luck of the
draw. A metric that is a mean over examples (accuracy, EM, ROUGE) is resampled
from its per-example values; any other (macro-F1, corpus BLEU) is recomputed on
every resample, of which a large set takes fewer (`recomputed_resamples`). Several
seeds of one configuration get the t interval of their mean instead. A benchmark aggregate (a mean or weighted sum of task scores) is
resampled jointly: each member task's examples independently, the aggregate
recomputed from the members' values on each draw. Pure numpy and scipy: no task
or framework is imported here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

RESAMPLES = 1000
# A metric recomputed on every resample (corpus BLEU, distinct-n, macro-F1) costs one
# call over all n examples a resample: 0.7 s for LOT OutGen's 661 stories, twelve
# minutes at RESAMPLES. It takes max(MIN_RECOMPUTED, RECOMPUTED_WORK // n) resamples
# at most, a fixed rule (so tables stay reproducible) in the spirit of lm-eval's 100
# for corpus BLEU: every resample up to 100 examples, 151 at 661, 100 from 1000 on.
RECOMPUTED_WORK = 100_000
MIN_RECOMPUTED = 100
SEED = 0
LEVEL = 0.95

Interval = tuple[float, float]
# metric(indices) -> {name: value}: the task's metrics on the examples at `indices`.
MetricFn = Callable[[np.ndarray], Mapping[str, float]]
# A generator's seed: an int, or ints mixed together (numpy's SeedSequence entropy).
Seed = int | Sequence[int]
K = TypeVar("K", bound=Hashable)


def percentiles(values: np.ndarray) -> Interval:
  """The central LEVEL interval of a metric's values over the resamples."""
  tail = 100 * (1 - LEVEL) / 2
  low, high = np.percentile(values, [tail, 100 - tail])
  return float(low), float(high)


def per_example(metric: MetricFn, n: int,
                whole: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
  """Each metric's per-example values, for the metrics that are a mean over examples.

  A metric qualifies when the mean of its one-example values equals its value on
  the whole set (`whole`, where the caller has it) and on a fixed half of it (two
  checks, so a coincidence does not pass).
  """
  singles = [metric(np.array([i])) for i in range(n)]
  half = np.arange(0, n, 2)
  whole = metric(np.arange(n)) if whole is None else whole
  part = metric(half)
  out = {}
  for key, value in whole.items():
    values = np.array([s.get(key, np.nan) for s in singles], dtype=np.float64)
    if (np.all(np.isfinite(values)) and math.isclose(values.mean(), value, abs_tol=1e-6)
        and math.isclose(values[half].mean(), part.get(key, np.nan), abs_tol=1e-6)):
      out[key] = values
  return out


def recomputed_resamples(resamples: int, n: int) -> int:
  """How many of `resamples` a metric recomputed on each one takes over `n` examples."""
  return min(resamples, max(MIN_RECOMPUTED, RECOMPUTED_WORK // max(n, 1)))


def replicates(metric: MetricFn, n: int, resamples: int = RESAMPLES,
               seed: Seed = SEED, whole: Mapping[str, float] | None = None
               ) -> dict[str, np.ndarray]:
  """Every metric `metric` reports over `n` examples, on each of `resamples` resamples
  (the first `recomputed_resamples` of them where a metric is no mean over examples).
  `whole`: the metrics over all `n`, where the caller has them already.

  All metrics see the same draws, so an aggregate of several can be resampled too.
  """
  if n < 1:
    raise ValueError("a bootstrap interval needs at least one example")
  rng = np.random.default_rng(seed)
  draws = rng.integers(0, n, size=(resamples, n))
  if whole is None:  # once: a corpus metric over a large set takes seconds
    whole = metric(np.arange(n))
  means = per_example(metric, n, whole) if n > 1 else {}
  rest = [key for key in whole if key not in means]
  if rest:
    draws = draws[:recomputed_resamples(resamples, n)]
  out = {key: values[draws].mean(axis=1) for key, values in means.items()}
  if rest:
    samples: dict[str, list[float]] = {key: [] for key in rest}
    for idx in draws:
      values = metric(idx)
      for key in rest:
        samples[key].append(float(values[key]))
    out.update({key: np.array(v) for key, v in samples.items()})
  return out


def interval(metric: MetricFn, n: int, resamples: int = RESAMPLES,
             seed: Seed = SEED) -> dict[str, Interval]:
  """The percentile bootstrap interval of every metric `metric` reports over `n` examples."""
  return {key: percentiles(v) for key, v in replicates(metric, n, resamples, seed).items()}


def joint(combine: Callable[[Mapping[K, float]], float],
          members: Mapping[K, np.ndarray | None]) -> Interval | None:
  """The interval of `combine(member values)` from each member's bootstrap replicates.

  Averaging the members' bounds is no interval of their mean (the bounds of a
  mean of independent scores are narrower); recomputing the aggregate on each
  draw is. Members resampled with their own draws are independent; members drawn
  alike (the same examples: a task's prompts, FewCLUE's k runs on one test set)
  stay paired. None when a member has no replicates: its examples were not saved.
  """
  if not members or any(v is None for v in members.values()):
    return None
  # Each member's first draws: a member with recomputed metrics takes fewer of them.
  size = min(len(v) for v in members.values())
  values = [combine({k: float(v[b]) for k, v in members.items()}) for b in range(size)]
  return percentiles(np.array(values))


def over_seeds(values: Sequence[float]) -> Interval | None:
  """The t interval of the mean of several seeds' values (None for fewer than two)."""
  if len(values) < 2:
    return None
  from scipy import stats  # pylint: disable=g-import-not-at-top
  mean = float(np.mean(values))
  half = float(stats.t.ppf((1 + LEVEL) / 2, len(values) - 1)
               * np.std(values, ddof=1) / math.sqrt(len(values)))
  return mean - half, mean + half
