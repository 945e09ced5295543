"""What a long run meets on shared machines: preemption, a second trainer, a full disk.

Each guard fails (or stops) early and says why, so nothing already written is lost:
a SIGTERM saves a checkpoint and exits with `PREEMPTED_EXIT_CODE`; a second trainer
on the same MODEL_DIR refuses to start; an unwritable or nearly full MODEL_DIR fails
before the first step rather than at the first save.
"""

import json
import os
import shutil
import signal
import socket
import threading
import time
from typing import Any

import jax
import numpy as np

from crosstask.runtime.report import console

# What a shell reports for a process ended by SIGTERM (128 + 15): schedulers that
# requeue preempted jobs treat the clean, checkpointed exit like the signal itself.
PREEMPTED_EXIT_CODE = 143


class Preempted(RuntimeError):
  """Raised after the preemption checkpoint is saved; the entry points exit with
  PREEMPTED_EXIT_CODE."""


class PreemptionWatcher:
  """Notices SIGTERM so the train loop can checkpoint the current step and stop.

  Single process: a Python handler sets a flag (restored on exit). Several
  processes: JAX's preemption sync point, so every host stops at the same step
  (jax.distributed installs its own SIGTERM notifier, which must not be replaced).
  """

  def __init__(self):
    self._flag = threading.Event()
    self._previous = None

  def __enter__(self) -> 'PreemptionWatcher':
    if jax.process_count() == 1 and threading.current_thread() is threading.main_thread():
      self._previous = signal.signal(signal.SIGTERM, lambda *_: self._flag.set())
    return self

  def __exit__(self, *exc) -> None:
    if self._previous is not None:
      signal.signal(signal.SIGTERM, self._previous)
      self._previous = None

  def reached(self, step: int) -> bool:
    if jax.process_count() > 1:
      from jax.experimental import multihost_utils
      try:
        return bool(multihost_utils.reached_preemption_sync_point(step))
      except RuntimeError:  # The preemption service is off.
        return False
    return self._flag.is_set()


class ModelDirLockedError(RuntimeError):
  """Another live trainer holds MODEL_DIR."""


def _pid_alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # Alive, owned by someone else.
    return True
  return True


class ModelDirLock:
  """One trainer per MODEL_DIR: a lock file naming pid and host, per process.

  A lock left by a dead process on this host (e.g. after kill -9) is taken over;
  a lock from another host cannot be checked, so the message says how to clear it.
  """

  def __init__(self, model_dir: str):
    name = f'train-{jax.process_index()}.lock'
    self.path = os.path.join(model_dir, name)
    self._held = False

  def acquire(self) -> 'ModelDirLock':
    me = {'pid': os.getpid(), 'host': socket.gethostname(), 'started': time.time()}
    for _ in range(2):
      try:
        fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
      except FileExistsError:
        owner = self._read()
        if owner is None or (owner.get('host') == me['host']
                             and not _pid_alive(int(owner.get('pid', -1)))):
          console.warn(f'Taking over the stale lock {self.path} (left by {owner}).')
          os.remove(self.path)
          continue
        when = time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(owner.get('started', 0)))
        raise ModelDirLockedError(
            f'{os.path.dirname(self.path)} is in use by another trainer (pid {owner.get("pid")} '
            f'on host {owner.get("host")}, started {when}; lock file {self.path}). Two runs '
            'writing one MODEL_DIR would overwrite each other\'s checkpoints. Use another '
            'MODEL_DIR, or delete the lock file if that process is gone.') from None
      with os.fdopen(fd, 'w') as f:
        json.dump(me, f)
      self._held = True
      return self
    raise ModelDirLockedError(f'Could not take the lock {self.path}.')

  def _read(self) -> dict | None:
    try:
      with open(self.path) as f:
        return json.load(f)
    except (OSError, ValueError):
      return None  # Unreadable or half-written: its writer died mid-write.

  def release(self) -> None:
    if self._held:
      self._held = False
      try:
        os.remove(self.path)
      except FileNotFoundError:
        pass

  def __enter__(self) -> 'ModelDirLock':
    return self.acquire()

  def __exit__(self, *exc) -> None:
    self.release()


class DiskSpaceError(OSError):
  """MODEL_DIR cannot hold the next checkpoint."""


class ModelDirError(PermissionError):
  """MODEL_DIR cannot be created or written."""


def prepare_model_dir(model_dir: str) -> str:
  """Creates MODEL_DIR and proves it writable, naming the directory when it is not."""
  model_dir = os.path.abspath(model_dir)
  try:
    os.makedirs(model_dir, exist_ok=True)
    probe = os.path.join(model_dir, f'.write-test-{os.getpid()}')
    with open(probe, 'w') as f:
      f.write('ok')
    os.remove(probe)
  except OSError as e:
    raise ModelDirError(f'MODEL_DIR {model_dir} is not a writable directory ({e}); '
                          'training would fail at its first checkpoint.') from e
  return model_dir


def state_bytes(abstract_state: Any) -> int:
  """Bytes one checkpoint of `abstract_state` takes (all arrays, uncompressed)."""
  return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize
             for x in jax.tree.leaves(abstract_state))


def free_bytes(path: str) -> int:
  return shutil.disk_usage(path).free


def check_free_space(model_dir: str, checkpoint_bytes: int, margin: float = 1.5) -> None:
  """Fails before training when MODEL_DIR cannot hold a checkpoint (with `margin`)."""
  need = int(checkpoint_bytes * margin)
  free = free_bytes(model_dir)
  if free < need:
    raise DiskSpaceError(
        f'MODEL_DIR {model_dir} has {free / 2**20:.1f} MiB free, but one checkpoint of this '
        f'model takes about {checkpoint_bytes / 2**20:.1f} MiB (need {need / 2**20:.1f} MiB '
        f'with a {margin}x margin). Free space or choose another MODEL_DIR.')


class NonFiniteLossError(FloatingPointError):
  """A train step's loss, gradients or update were NaN/Inf (the update was not applied)."""


def describe_nonfinite(step: int, metrics: dict[str, float], where: str) -> str:
  """The message naming the step, the loss terms and the batch's task."""
  names = ('loss', 'cross_ent_loss', 'z_loss', 'grad_norm', 'learning_rate')
  terms = ', '.join(f'{k} {metrics[k]:.6g}' for k in names if k in metrics)
  return f'Non-finite training step {step}: {terms}; batch {where}.'


class CheckpointMismatchError(ValueError):
  """A checkpoint (orbax or a Hugging Face folder) that is not the configured model's:
  a parameter missing, or of another shape; files that cannot be read (damaged, cut
  short, Git LFS pointers); or a run resumed on another input stream. The message
  names it and the checkpoint."""


# Failures the entry points report as one line (exit 1) rather than a traceback.
EXPECTED_FAULTS = (NonFiniteLossError, ModelDirLockedError, DiskSpaceError, ModelDirError,
                   CheckpointMismatchError)
