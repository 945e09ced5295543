"""What a researcher watches: console progress and TensorBoard scalars.

On a GPU or TPU the line and the scalars carry MFU (the model's FLOPs per step,
`model_flops.train_step`, over the step time and the chips' bf16 peak from
`topology`'s chip table) and the device memory in use; on a CPU, which has neither
a peak in the table nor memory statistics, those fields are left out, not zero.
"""

import dataclasses
import time
from typing import Any, Mapping, Sequence

import jax
import numpy as np

from crosstask.runtime.report import console
from crosstask.runtime.sharding import topology

GIB = topology.GIB


@dataclasses.dataclass(frozen=True)
class Hardware:
  """What MFU and memory are read against: a step's model FLOPs, the chip, its devices."""
  flops_per_step: float | None  # model FLOPs of one train step (no remat recompute)
  chip: topology.Chip | None  # None: a CPU, or a part the chip table does not list
  num_chips: int  # all chips the step runs on
  devices: Sequence[Any] = ()  # this process's devices, whose memory is read


def hardware(devices: Sequence[Any], flops_per_step: float | None) -> Hardware:
  """The Hardware of a step over `devices` (all processes'), its chip from the table."""
  local = [d for d in devices if d.process_index == jax.process_index()]
  return Hardware(flops_per_step, topology.chip_for_device_kind(devices[0].device_kind),
                  len(devices), tuple(local))


def mfu(hw: Hardware, steps_per_sec: float) -> float | None:
  """Model FLOPs a second over the chips' bf16 peak; None without a chip or a count."""
  if hw.chip is None or not hw.flops_per_step or steps_per_sec <= 0:
    return None
  return hw.flops_per_step * steps_per_sec / (hw.num_chips * hw.chip.peak_bf16_flops)


def device_memory(devices: Sequence[Any]) -> dict[str, float]:
  """GiB in use and at peak on the fullest local device; {} where devices keep no
  statistics (a CPU's `memory_stats()` is None)."""
  stats = []
  for device in devices:
    try:
      stats.append(device.memory_stats() or {})
    except Exception:  # pylint: disable=broad-except  # a backend without the API
      stats.append({})
  in_use = [s['bytes_in_use'] for s in stats if 'bytes_in_use' in s]
  if not in_use:
    return {}
  peaks = [s.get('peak_bytes_in_use', s['bytes_in_use']) for s in stats if 'bytes_in_use' in s]
  return {'memory_gib': max(in_use) / GIB, 'peak_memory_gib': max(peaks) / GIB}


def accelerator_values(hw: Hardware | None, steps_per_sec: float) -> dict[str, float]:
  """{'mfu', 'memory_gib', 'peak_memory_gib'}, each only where it is known."""
  if hw is None:
    return {}
  values = {}
  utilisation = mfu(hw, steps_per_sec)
  if utilisation is not None:
    values['mfu'] = utilisation
  values.update(device_memory(hw.devices))
  return values


def describe_accelerator(values: Mapping[str, float]) -> str:
  """'MFU 41.2%  mem 12.3 GiB (peak 14.0)' from `accelerator_values`; '' on a CPU."""
  parts = []
  if 'mfu' in values:
    parts.append(f'MFU {values["mfu"]:.1%}')
  if 'memory_gib' in values:
    parts.append(f'mem {values["memory_gib"]:.1f} GiB (peak {values["peak_memory_gib"]:.1f})')
  return '  '.join(parts)


def writer(log_dir: str) -> 'WriterOnFirstWrite':
  """A clu MetricWriter: TensorBoard summaries from process 0, logging elsewhere."""
  return WriterOnFirstWrite(log_dir)


class WriterOnFirstWrite:
  """A clu MetricWriter made at its first write, not when the job starts.

  A job that fails before it has a number to record (a malformed row, a checkpoint of
  the wrong shape) then leaves no empty folder or events file that reads as a run.
  clu's writers pull in TensorFlow, so they are imported here, not at module load.
  """

  def __init__(self, log_dir: str):
    self.log_dir = log_dir
    self._writer = None

  def _made(self):
    if self._writer is None:
      from clu import metric_writers  # pylint: disable=import-outside-toplevel
      self._writer = metric_writers.create_default_writer(
          self.log_dir, just_logging=jax.process_index() > 0, asynchronous=False)
    return self._writer

  def flush(self) -> None:
    if self._writer is not None:
      self._writer.flush()

  def close(self) -> None:
    if self._writer is not None:
      self._writer.close()

  def __getattr__(self, name: str):  # write_scalars, write_texts, ...: make it, then write
    if not name.startswith('write_'):
      raise AttributeError(name)
    return getattr(self._made(), name)


def loss_per_token(metrics: Mapping[str, float]) -> float | None:
  """The cross-entropy a non-padding target token, from step metrics summed or averaged
  alike (T5X's `loss` is the batch's sum); None where they count no tokens."""
  tokens = metrics.get('nonpadding_tokens')
  if not tokens:
    return None
  return metrics.get('cross_ent_loss', metrics.get('loss', 0.0)) / tokens


class Progress:
  """Averages step metrics between reports and derives steps/s, tokens/s and ETA."""

  def __init__(self, total_steps: int, start_step: int, writer, every: int = 10,
               echo=console.say, hw: Hardware | None = None):
    self.total, self.every, self.writer, self.echo = total_steps, every, writer, echo
    self.hw = hw
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
    per_token = loss_per_token(avg)
    if per_token is not None:
      avg['loss_per_token'] = per_token
    accelerator = accelerator_values(self.hw, sps)
    scalars = {f'train/{k}': v for k, v in avg.items()}
    scalars.update({'train/steps_per_sec': sps, 'train/tokens_per_sec': tokens})
    scalars.update({f'train/{k}': v for k, v in accelerator.items()})
    self.writer.write_scalars(step, scalars)
    self.writer.flush()
    # The console shows the loss a token, which reads the same at any batch size and
    # length; the batch's sum (T5X's `train/loss`) stays in the summaries.
    loss = (f'{avg["loss_per_token"]:.4f}/token' if 'loss_per_token' in avg
            else f'{avg.get("loss", float("nan")):.4f}')
    line = (f'step {step}/{self.total}  loss {loss}  '
            f'lr {avg.get("learning_rate", float("nan")):.3g}  {sps:.2f} steps/s  '
            f'{tokens:.0f} target tokens/s  ETA {eta:.0f}s')  # Non-padding targets only.
    if accelerator:
      line += '  ' + describe_accelerator(accelerator)
    self.echo(line)
    self._t, self._step0, self._pending = now, step, []
