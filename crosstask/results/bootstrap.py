"""95% intervals: a percentile bootstrap over examples for one run, Student's t over seeds.

One run's number is a metric over a finite validation set; resampling the
examples (with replacement, a fixed seed so tables are reproducible) and
recomputing the task's own metric functions shows how much of it is luck of the
draw. A metric that is a mean over examples (accuracy, EM, ROUGE) is resampled
from its per-example values; any other (macro-F1, corpus BLEU) is recomputed on
every resample. Several seeds of one configuration get the t interval of their
mean instead. Pure numpy and scipy: no task or framework is imported here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

RESAMPLES = 1000
SEED = 0
LEVEL = 0.95

Interval = tuple[float, float]
# metric(indices) -> {name: value}: the task's metrics on the examples at `indices`.
MetricFn = Callable[[np.ndarray], Mapping[str, float]]


def _percentiles(draws: np.ndarray) -> Interval:
  tail = 100 * (1 - LEVEL) / 2
  low, high = np.percentile(draws, [tail, 100 - tail])
  return float(low), float(high)


def per_example(metric: MetricFn, n: int) -> dict[str, np.ndarray]:
  """Each metric's per-example values, for the metrics that are a mean over examples.

  A metric qualifies when the mean of its one-example values equals its value on
  the whole set and on a fixed half of it (two checks, so a coincidence does not pass).
  """
  singles = [metric(np.array([i])) for i in range(n)]
  half = np.arange(0, n, 2)
  whole, part = metric(np.arange(n)), metric(half)
  out = {}
  for key, value in whole.items():
    values = np.array([s.get(key, np.nan) for s in singles], dtype=np.float64)
    if (np.all(np.isfinite(values)) and math.isclose(values.mean(), value, abs_tol=1e-6)
        and math.isclose(values[half].mean(), part.get(key, np.nan), abs_tol=1e-6)):
      out[key] = values
  return out


def interval(metric: MetricFn, n: int, resamples: int = RESAMPLES,
             seed: int = SEED) -> dict[str, Interval]:
  """The percentile bootstrap interval of every metric `metric` reports over `n` examples."""
  if n < 1:
    raise ValueError("a bootstrap interval needs at least one example")
  rng = np.random.default_rng(seed)
  draws = rng.integers(0, n, size=(resamples, n))
  means = per_example(metric, n) if n > 1 else {}
  out = {key: _percentiles(values[draws].mean(axis=1)) for key, values in means.items()}
  rest = [key for key in metric(np.arange(n)) if key not in out]
  if rest:
    samples: dict[str, list[float]] = {key: [] for key in rest}
    for idx in draws:
      values = metric(idx)
      for key in rest:
        samples[key].append(float(values[key]))
    out.update({key: _percentiles(np.array(v)) for key, v in samples.items()})
  return out


def over_seeds(values: Sequence[float]) -> Interval | None:
  """The t interval of the mean of several seeds' values (None for fewer than two)."""
  if len(values) < 2:
    return None
  from scipy import stats  # pylint: disable=g-import-not-at-top
  mean = float(np.mean(values))
  half = float(stats.t.ppf((1 + LEVEL) / 2, len(values) - 1)
               * np.std(values, ddof=1) / math.sqrt(len(values)))
  return mean - half, mean + half
