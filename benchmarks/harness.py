"""Shared machinery of the benchmarks: one process per framework, alternating timings, JSON.

Why this shape: on a shared 2-core machine the two frameworks' numbers swing by
several times between runs, and more so when both live in one process (two
thread pools fighting). So each framework runs in its own worker process that
builds and warms up its workload once (compilation excluded), and the parent
asks the workers for one timed repetition at a time, alternating A B B A ...,
so both see the same machine state. Every result records the median, min and
max, the CPU model, the thread settings and the load average before and after.
"""

import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# Where a --quick (smoke) run writes when no --out is given: never over the measured
# results/ that benchmarks/README.md's table is built from.
QUICK_RESULTS = pathlib.Path(tempfile.gettempdir()) / f"crosstask-bench-quick-{os.getuid()}"
WORKER = ROOT / "benchmarks" / "side_worker.py"


def _widest_simd(flags: Sequence[str]) -> tuple[str | None, int]:
  """(name, float32 flop per cycle per core with 2 FMA pipes) of the widest SIMD in `flags`."""
  if "avx512f" in flags:
    return "AVX-512", 64
  if "avx2" in flags:
    return "AVX2", 32
  return None, 16


def cpu_model(cpuinfo: str | None = None) -> str:
  """The CPU's name with its family and model numbers and its widest float SIMD.

  Cloud machines often report only "AMD EPYC". The small training step took 4.8 s on
  one such machine with AVX2 and 1.8 s on a family-26 one with AVX-512, while HF
  PyTorch's barely moved, so ratios from different machines do not compare.
  """
  if cpuinfo is None:
    try:
      cpuinfo = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
      return platform.processor() or "unknown"
  fields = {}
  for line in cpuinfo.splitlines():  # The first processor's fields.
    key, _, value = line.partition(":")
    fields.setdefault(key.strip(), value.strip())
  name = fields.get("model name") or platform.processor() or "unknown"
  flags = fields.get("flags", "").split()
  simd = _widest_simd(flags)[0]
  details = [f"family {fields['cpu family']}, model {fields['model']}"
             if "cpu family" in fields and "model" in fields else None, simd]
  details = [d for d in details if d]
  return f"{name} ({', '.join(details)})" if details else name


def cpu_peak_gflops(threads: int) -> float | None:
  """Rough float32 peak of `threads` cores: 2 FMA pipes x SIMD width x clock, from /proc/cpuinfo.

  AVX2+FMA: 32 flop/cycle/core; AVX-512: 64. The clock is the reported current
  MHz, so the figure is a yardstick for "how much of the machine", not a spec.
  """
  try:
    info = pathlib.Path("/proc/cpuinfo").read_text()
  except OSError:
    return None
  flags = next((l for l in info.splitlines() if l.startswith("flags")), "").split()
  mhz = [float(l.split(":")[1]) for l in info.splitlines() if l.startswith("cpu MHz")]
  if not mhz or "fma" not in flags:
    return None
  return threads * _widest_simd(flags)[1] * max(mhz) / 1e3


def default_threads() -> int:
  return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def thread_env(threads: int) -> dict[str, str]:
  """Same intra-op parallelism on both sides: torch / OpenMP / MKL threads and XLA's pool."""
  env = dict(os.environ)
  env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
             CROSSTASK_BENCH_THREADS=str(threads),
             PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  env.setdefault("TRANSFORMERS_VERBOSITY", "error")
  env.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
  env.setdefault("TQDM_DISABLE", "1")
  return env


def machine(threads: int) -> dict[str, Any]:
  return {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "threads_per_framework": threads,
          "platform": platform.platform(), "python": platform.python_version(),
          "load_average_1_5_15min_at_start": list(os.getloadavg()),
          "xla_flags": os.environ.get("XLA_FLAGS", "")}


def summary(seconds: Sequence[float], units: float) -> dict[str, Any]:
  """Median / min / max of the repetitions, as seconds and as units per second.

  Each repetition's seconds are kept too, in the order they ran, so an outlier can be
  told from a slow machine.
  """
  med = statistics.median(seconds)
  return {"reps": len(seconds), "median_s": med, "min_s": min(seconds), "max_s": max(seconds),
          "per_s_median": units / med, "per_s_best": units / min(seconds),
          "per_s_worst": units / max(seconds), "seconds": [round(s, 4) for s in seconds]}


class Worker:
  """A framework in its own process, driven one request (a JSON line) at a time."""

  def __init__(self, framework: str, threads: int, training: bool = False):
    self.framework = framework
    self.proc = subprocess.Popen(
        [sys.executable, "-u", str(WORKER), framework] + (["train"] if training else []),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=thread_env(threads),
        cwd=str(ROOT))

  def call(self, op: str, **kwargs) -> dict[str, Any]:
    self.proc.stdin.write(json.dumps({"op": op, **kwargs}) + "\n")
    self.proc.stdin.flush()
    line = self.proc.stdout.readline()
    if not line:
      raise RuntimeError(f"{self.framework} worker died during {op!r} "
                         f"(exit code {self.proc.wait()}); its stderr is above")
    reply = json.loads(line)
    if "error" in reply:
      raise RuntimeError(f"{self.framework} worker failed on {op!r}: {reply['error']}")
    return reply

  def __enter__(self) -> "Worker":
    return self

  def __exit__(self, *exc) -> None:
    self.close()

  def close(self) -> None:
    if self.proc.poll() is None:
      try:
        self.call("exit")
      except (RuntimeError, BrokenPipeError):
        pass
      self.proc.wait(timeout=60)


def alternate(workers: Sequence[Worker], reps: int) -> dict[str, list[float]]:
  """`reps` timed runs per worker, order flipped every round (A B, B A, ...)."""
  times = {w.framework: [] for w in workers}
  for r in range(reps):
    order = workers if r % 2 == 0 else list(reversed(workers))
    for w in order:
      times[w.framework].append(w.call("run")["seconds"])
  return times


def run_child(cmd: Sequence[str], env: Mapping[str, str], timeout_s: float,
              cwd: str | pathlib.Path = ROOT) -> dict[str, Any]:
  """Runs `cmd` in its own process and returns the JSON object on its last stdout line.

  Why a process per measurement: it owns the device and its memory, and a crash or an
  out-of-memory costs that measurement only. A child that fails, prints no JSON or
  passes `timeout_s` gives {'error': reason, 'status': 'failed' | 'timeout'}, the
  reason ending with the last lines of its stderr.
  """
  objects, error = run_child_lines(cmd, env, timeout_s, cwd)
  return error or objects[-1]


def run_child_lines(cmd: Sequence[str], env: Mapping[str, str], timeout_s: float,
                    cwd: str | pathlib.Path = ROOT) -> tuple[list[dict[str, Any]], dict | None]:
  """Runs `cmd` in its own process: the JSON objects it printed (each on a line of its
  own, in order) and what went wrong, as run_child gives it (None when nothing did).

  A child that measures several things prints one object after each, so those it
  finished are kept when it later fails or passes `timeout_s`.
  """
  start = time.perf_counter()
  try:
    done = subprocess.run(list(cmd), capture_output=True, text=True, env=dict(env),
                          cwd=str(cwd), timeout=timeout_s, check=False)
  except subprocess.TimeoutExpired as e:  # its output is bytes whatever text= says
    out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or ""
    return _json_lines(out), {"error": f"passed its time limit ({timeout_s:.0f} s)",
                              "status": "timeout"}
  objects = _json_lines(done.stdout)
  lines = done.stdout.strip().splitlines()
  if done.returncode or not lines or not _json_lines(lines[-1]):
    tail = [l for l in (done.stderr or done.stdout).strip().splitlines() if l.strip()][-3:]
    return objects, {"error": f"exit {done.returncode} after {time.perf_counter() - start:.0f} "
                              "s: " + " | ".join(tail)[-600:], "status": "failed"}
  return objects, None


def _json_lines(stdout: str) -> list[dict[str, Any]]:
  objects = []
  for line in stdout.splitlines():
    if line.startswith("{"):
      try:
        objects.append(json.loads(line))
      except json.JSONDecodeError:  # a log line that only looks like one
        pass
  return objects


def write(name: str, payload: Mapping[str, Any], threads: int, start_load: Sequence[float],
          out: str | None = None, quick: bool = False) -> pathlib.Path:
  """benchmarks/results/<name>.json (QUICK_RESULTS/<name>.json for a `quick` smoke run, or
  `out`) with date, machine, versions and load at start and end."""
  info = machine(threads)
  info["load_average_1_5_15min_at_start"] = list(start_load)
  info["load_average_1_5_15min_at_end"] = list(os.getloadavg())
  result = {"benchmark": name,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": info, **payload}
  path = pathlib.Path(out) if out else (QUICK_RESULTS if quick else RESULTS) / f"{name}.json"
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(result, indent=2) + "\n")
  print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
  return path


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
  cells = [[str(c) for c in header]] + [[_fmt(c) for c in r] for r in rows]
  widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
  lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
           for r in cells]
  lines.insert(1, "  ".join("-" * w for w in widths))
  return "\n".join(lines)


def _fmt(c: Any) -> str:
  if isinstance(c, float):
    return f"{c:.2f}" if abs(c) < 100 else f"{c:.0f}"
  return str(c)


class Timer:
  def __enter__(self):
    self.start = time.perf_counter()
    return self

  def __exit__(self, *exc):
    self.seconds = time.perf_counter() - self.start
