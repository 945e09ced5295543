"""The runtime's one voice on the console: process 0 speaks, the others log.

On a pod slice each host runs the same program, so a line printed by all of them
arrives once per host, interleaved. Jobs report through `say` (progress, what was
restored, where files went), `warn` and `error`; the other processes send those
lines to absl logging instead. Errors are the exception: each process may fail
alone, so each says why.
"""

import re
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
from absl import logging


def is_lead_process() -> bool:
  """Whether this is process 0, asked without starting JAX's backends.

  Before the backends start (a usage message, a gin error) only the distributed
  client knows the process id; without one the process is alone, so it leads.
  """
  jax = sys.modules.get('jax')
  if jax is None:
    return True
  from jax._src import distributed, xla_bridge  # pylint: disable=import-outside-toplevel
  if xla_bridge.backends_are_initialized():
    return jax.process_index() == 0
  return distributed.global_state.process_id in (None, 0)


def say(message: str) -> None:
  """A line for the researcher: on stdout from process 0, in the log of the others."""
  if is_lead_process():
    print(message, flush=True)
  else:
    logging.info(message)


def metrics_line(results: Mapping[str, Mapping[str, Any]]) -> str:
  """`task: metric value, ...; task: ...` with four significant digits, for a console line.

  A dict's repr prints a float's seventeen digits (46.666666666666664) and nests
  SciRepEval's metrics in braces; this is what a researcher reads, the files keep
  the exact values.
  """
  def flat(metrics: Mapping[str, Any], prefix: str = '') -> list[str]:
    items = []
    for key, value in metrics.items():
      if isinstance(value, Mapping):
        items += flat(value, f'{prefix}{key}/')
      elif isinstance(value, (float, np.floating)):
        items.append(f'{prefix}{key} {value:.4g}')
      else:
        items.append(f'{prefix}{key} {value}')
    return items
  return '; '.join(f"{task}: {', '.join(flat(metrics))}" for task, metrics in results.items())


def warn(message: str) -> None:
  """Something the researcher can act on: stderr from process 0, the others' logs."""
  if is_lead_process():
    print(f'WARNING: {message}', file=sys.stderr, flush=True)
  else:
    logging.warning(message)


# The line gin appends to an error as it leaves each configurable it passed through.
_GIN_CALL_NOTE = re.compile(r"\n[ \t]*In call to configurable '[^'\n]*' \(<[^\n]*>\)(?=\n|$)")


def error(message: str) -> None:
  """Why the job stops, on stderr: from every process, since each may fail alone.

  Without gin's notes ("In call to configurable 'train' (<function train at 0x7f...>)"):
  the message already names what is wrong, and the addresses mean nothing to a user.
  """
  print(f'ERROR: {without_gin_call_notes(message)}', file=sys.stderr, flush=True)


def without_gin_call_notes(message: str) -> str:
  """`message` less the lines gin appended as the error left each configurable."""
  return _GIN_CALL_NOTE.sub("", message)
