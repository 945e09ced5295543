"""What a researcher watches: console progress and TensorBoard scalars."""

import time
from typing import Any, Mapping

import jax
import numpy as np

from crosstask.runtime import console


def writer(log_dir: str):
  """A clu MetricWriter: TensorBoard summaries from process 0, logging elsewhere.

  clu's writers pull in TensorFlow, so they are imported here, not at module load.
  """
  from clu import metric_writers
  return metric_writers.create_default_writer(
      log_dir, just_logging=jax.process_index() > 0, asynchronous=False)


class Progress:
  """Averages step metrics between reports and derives steps/s, tokens/s and ETA."""

  def __init__(self, total_steps: int, start_step: int, writer, every: int = 10,
               echo=console.say):
    self.total, self.every, self.writer, self.echo = total_steps, every, writer, echo
    self._t, self._step0, self._pending = time.time(), start_step, []
    self.last: dict[str, float] = {}

  def update(self, step: int, metrics: Mapping[str, Any]) -> None:
    """Keeps the step's (device) metrics; reads them back only at report steps.

    Not fetching every step lets the host run ahead of the accelerator.
    """
    self._pending.append(metrics)
    if step % self.every and step != self.total:
      return
    fetched = [{k: float(np.asarray(v)) for k, v in m.items()}
               for m in jax.device_get(self._pending)]
    self.last = fetched[-1]
    # Skipped (non-finite) steps are counted, not averaged into the losses.
    good = [m for m in fetched if not m.get('nonfinite')] or fetched
    sums: dict[str, float] = {}
    for m in good:
      for k, v in m.items():
        sums[k] = sums.get(k, 0.0) + v
    sums['nonfinite'] = sum(m.get('nonfinite', 0.0) for m in fetched)
    now = time.time()
    steps = step - self._step0
    dt = max(now - self._t, 1e-9)
    avg = {k: v / len(good) for k, v in sums.items()}
    avg['nonfinite'] = sums['nonfinite']  # A count of skipped steps, not a mean.
    sps = steps / dt
    tokens = sums.get('nonpadding_tokens', 0.0) / dt
    eta = (self.total - step) / sps if sps > 0 else float('nan')
    if avg.get('nonpadding_tokens'):  # T5X sums the loss over tokens; show the mean too.
      avg['loss_per_token'] = avg.get('cross_ent_loss', avg.get('loss', 0.0)) / avg['nonpadding_tokens']
    scalars = {f'train/{k}': v for k, v in avg.items()}
    scalars.update({'train/steps_per_sec': sps, 'train/tokens_per_sec': tokens})
    self.writer.write_scalars(step, scalars)
    self.writer.flush()
    line = (f'step {step}/{self.total}  loss {avg.get("loss", float("nan")):.4f}  '
            f'({avg.get("loss_per_token", float("nan")):.3f}/token)  '
            f'lr {avg.get("learning_rate", float("nan")):.3g}  {sps:.2f} steps/s  '
            f'{tokens:.0f} tokens/s  ETA {eta:.0f}s')
    self.echo(line)
    self._t, self._step0, self._pending = now, step, []
