"""scripts/launch_*.sh start crosstask.train through JAX's own cluster detection with the
macros README's "Multi-host launches" names, and those macros parse with the shipped
configs. `gcloud` and `srun` are stand-ins that record their arguments."""

import shlex
import subprocess
import sys

import gin
import pytest

import runtime_subprocess as rs
from crosstask.runtime.config import gin_utils

SCRIPTS = rs.REPO / 'scripts'
RECORDER = '#!/usr/bin/env bash\nprintf "%s\\0" "$@" >> "$RECORD"; printf "\\n" >> "$RECORD"\n'
DESCRIBE = 'if [[ "$*" == *describe* ]]; then echo 4; fi\n'  # A v5e-16 slice: four hosts.
USER_FLAGS = ['--gin_file=longlm/large.gin', "--gin.TRAIN_STEPS=1000"]


def _run(script: str, tmp_path, **env) -> list[list[str]]:
  """The commands the script handed gcloud/srun, each as its argv."""
  bin_dir = tmp_path / 'bin'
  bin_dir.mkdir()
  for tool, extra in (('gcloud', DESCRIBE), ('srun', '')):
    (bin_dir / tool).write_text(RECORDER + extra)
    (bin_dir / tool).chmod(0o755)
  record = tmp_path / 'record'
  env = {'PATH': f'{bin_dir}:/usr/bin:/bin', 'RECORD': str(record), 'MODEL_DIR': '/runs/x', **env}
  subprocess.run(['bash', str(SCRIPTS / script), *USER_FLAGS], env=env, check=True,
                 capture_output=True, text=True, timeout=60)
  return [line.strip('\0').split('\0') for line in record.read_text().splitlines() if line]


def _train_argv(argv: list[str]) -> list[str]:
  return argv[argv.index('-m') - 1:]


def _bindings(train: list[str]) -> dict[str, str]:
  return dict(a[len('--gin.'):].split('=', 1) for a in train if a.startswith('--gin.'))


@pytest.mark.parametrize('script', ['launch_tpu_pod.sh', 'launch_slurm_gpu.sh'])
def test_script_is_valid_bash(script):
  subprocess.run(['bash', '-n', str(SCRIPTS / script)], check=True)


def test_slurm_script_runs_train_under_srun_with_the_global_batch(tmp_path):
  (srun,) = _run('launch_slurm_gpu.sh', tmp_path, SLURM_NTASKS='16', BATCH_PER_PROCESS='8')
  assert srun[0] == '--kill-on-bad-exit=1'
  train = _train_argv(srun)
  assert train[:3] == ['python', '-m', 'crosstask.train'] and train[3:5] == USER_FLAGS
  assert _bindings(train) == {'TRAIN_STEPS': '1000', 'MODEL_DIR': "'/runs/x'",
                              'MULTIHOST': 'True', 'LAYOUT': "'fsdp'", 'BATCH_SIZE': '128'}


def test_tpu_script_runs_train_on_every_worker_with_the_global_batch(tmp_path):
  calls = _run('launch_tpu_pod.sh', tmp_path, TPU='pod', ZONE='z', SYNC='0', LAYOUT='data')
  describe, ssh = calls
  assert 'describe' in describe and ssh[:4] == ['compute', 'tpus', 'tpu-vm', 'ssh']
  assert {'pod', '--zone=z', '--worker=all'} <= set(ssh)
  command = next(a for a in ssh if a.startswith('--command='))[len('--command='):]
  assert command.startswith('cd crosstask && ')
  train = shlex.split(command[len('cd crosstask && '):])
  assert train[:3] == ['python', '-m', 'crosstask.train'] and train[3:5] == USER_FLAGS
  assert _bindings(train) == {'TRAIN_STEPS': '1000', 'MODEL_DIR': "'/runs/x'",
                              'MULTIHOST': 'True', 'LAYOUT': "'data'", 'BATCH_SIZE': '128'}


def test_the_macros_the_scripts_set_are_the_readme_s_and_parse(tmp_path):
  (srun,) = _run('launch_slurm_gpu.sh', tmp_path, SLURM_NTASKS='2')
  bindings = _bindings(_train_argv(srun))
  set_by_script = {k: v for k, v in bindings.items() if k != 'TRAIN_STEPS'}
  readme = (rs.REPO / 'README.md').read_text(encoding='utf-8')
  section = readme.split('### Multi-host launches', 1)[1].split('\n#', 1)[0]
  for name in [*set_by_script, 'BATCH_PER_PROCESS', 'launch_tpu_pod.sh', 'launch_slurm_gpu.sh']:
    assert name in section, name
  gin.clear_config()
  try:
    task = [f[len('--gin.'):] for f in rs.task_flags()]
    gin_utils.parse([rs.TINY, 'runs/finetune.gin'],
                    task + [f'{k}={v}' for k, v in bindings.items()])
    assert gin.query_parameter('%MULTIHOST') is True and gin.query_parameter('%LAYOUT') == 'fsdp'
    assert gin.query_parameter('%BATCH_SIZE') == 64
  finally:
    gin.clear_config()


def test_multihost_outside_a_cluster_says_how_to_launch():
  env = {k: v for k, v in rs.env().items()
         if not k.startswith(('SLURM_', 'OMPI_', 'JAX_COORDINATOR', 'KUBERNETES_'))}
  code = ('from crosstask.runtime.sharding import partitioning\n'
          'partitioning.initialize_distributed(enabled=True)')
  done = subprocess.run([sys.executable, '-c', code], cwd=rs.REPO, env=env,
                        capture_output=True, text=True, timeout=120)
  assert done.returncode != 0
  assert 'ValueError: MULTIHOST=True, but jax.distributed.initialize' in done.stderr
  assert 'scripts/launch_slurm_gpu.sh' in done.stderr and 'JAX_COORDINATOR_ADDRESS' in done.stderr
