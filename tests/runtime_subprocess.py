"""Starting the entry points as real subprocesses on the tiny test config."""

import contextlib
import os
import pathlib
import subprocess
import sys

import xla_test_flags

TESTS = pathlib.Path(__file__).resolve().parent
REPO = TESTS.parent
TINY = str(TESTS / 'runtime_configs' / 'tiny_model.gin')


# Console lines a researcher cannot act on: TensorFlow's C++ start-up (and, on a
# machine without a GPU driver, its failed CUDA start-up), SeqIO's advice to itself,
# orbax's notes on how the runtime opens a checkpoint, libtpu's search for a TPU on a
# CPU machine. The entry points keep them off the console unless --verbose.
NOISE = ('All log messages before absl::InitializeLog', 'oneDNN custom operations',
         'cudart_stub', 'Could not find cuda drivers', 'failed call to cuInit',
         'Given sequence lengths', 'uncached FunctionDataset',
         'CheckpointManagerOptions.read_only', 'Given directory is read only',
         'Metadata file does not exist',
         # libtpu (the `tpu` extra) starting on a machine without a TPU
         'could not determine TPU', 'Logging before InitGoogle')


def noise_in(text: str) -> list[str]:
  return [line for line in text.splitlines() if any(n in line for n in NOISE)]


# Virtual CPU devices of an entry point's process: two still shard every batch and
# checkpoint over a mesh, and each device is a share of the step's work to schedule on
# 2 cores (the eleven end-to-end test modules, cold: 642 CPU s with 8 devices, 586 with 2).
DEVICES = 2


def env(compile_speed: bool = True) -> dict[str, str]:
  """The entry points' environment: the CPU, DEVICES virtual devices, the tests' XLA
  flags (`compile_speed=False`: XLA's optimised code, for a job that runs more than it
  compiles), the tests' modules importable, and TensorFlow's log level left unset, as a
  user leaves it, so that a test reading the console reads the user's."""
  e = dict(os.environ)
  e.pop('TF_CPP_MIN_LOG_LEVEL', None)  # conftest.py quiets the test processes' own
  e.update(JAX_PLATFORMS='cpu',
           XLA_FLAGS=xla_test_flags.flags(DEVICES, compile_speed=compile_speed),
           PYTHONUNBUFFERED='1',
           PYTHONPATH=os.pathsep.join([str(TESTS), str(REPO), e.get('PYTHONPATH', '')]))
  # JAX's persistent compile cache comes with os.environ: conftest.py set it for the run.
  return e


# The GPU image: neither TensorFlow nor SeqIO imports (an import of either fails).
WITHOUT_TENSORFLOW = "import sys; sys.modules['tensorflow'] = None; sys.modules['seqio'] = None\n"


def without_tensorflow(module: str, *args: str) -> list[str]:
  """`python -m module args...` in a process where TensorFlow and SeqIO cannot be imported."""
  return [sys.executable, '-c', WITHOUT_TENSORFLOW + 'import runpy\n'
          f'runpy.run_module({module!r}, run_name="__main__", alter_sys=True)\n', *args]


def slurm_env(process_id: int, num_processes: int, port: int) -> dict[str, str]:
  """What `srun` tells task `process_id` of a one-node job, and the coordinator port:
  jax.distributed's Slurm detection reads exactly these, as under
  scripts/launch_slurm_gpu.sh, so a test's processes start the way a cluster's do."""
  return dict(SLURM_JOB_ID='1', SLURM_STEP_NODELIST='localhost', SLURM_STEP_NUM_NODES='1',
              SLURM_NTASKS=str(num_processes), SLURM_PROCID=str(process_id),
              SLURM_LOCALID=str(process_id), JAX_COORDINATOR_PORT=str(port))


def task_flags(feature_len: int = 16) -> list[str]:
  return ["--gin.MIXTURE_OR_TASK_NAME='runtime_copy_reverse'",
          "--gin.MIXTURE_OR_TASK_MODULE='runtime_helpers'",
          f"--gin.TASK_FEATURE_LENGTHS={{'inputs': {feature_len}, 'targets': {feature_len}}}"]


def train_cmd(model_dir, steps: int, *extra: str, run_gin: str = 'runs/finetune.gin') -> list[str]:
  return [sys.executable, '-m', 'crosstask.train', f'--gin_file={TINY}',
          f'--gin_file={run_gin}', f"--gin.MODEL_DIR='{model_dir}'",
          f'--gin.TRAIN_STEPS={steps}', '--gin.BATCH_SIZE=8', *task_flags(), *extra]


def start(cmd: list[str], log_path) -> subprocess.Popen:
  log = open(log_path, 'w')
  return subprocess.Popen(cmd, cwd=REPO, env=env(), stdout=log, stderr=subprocess.STDOUT)


def run(cmd: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
  return subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True,
                        timeout=timeout)


@contextlib.contextmanager
def reaped(procs: list[subprocess.Popen]):
  """Kills whatever of `procs` still runs on leaving: a failed process of a pair would
  otherwise wait for its peer forever. `procs` may grow inside the block."""
  try:
    yield procs
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait()


def assert_all_succeed(procs: list[subprocess.Popen], logs: list, timeout: int) -> None:
  """Each process exits 0 within `timeout` s; a failure shows the end of its log."""
  for p, log in zip(procs, logs):
    assert p.wait(timeout=timeout) == 0, pathlib.Path(log).read_text()[-3000:]
