"""`python -m crosstask.infer` where TensorFlow and SeqIO cannot be imported (the GPU image):
a task without a plain form stops the job with the task named and the tasks that have
one. That a CSL arrow task's plain form gives the SeqIO job's file, line for line, which
`crosstask.score` takes as it takes that one, is checked on the demo's trained run
(tests/test_demo.py); that both forms read the same token batches, predictions and
metrics, in tests/runtime/test_runtime_host_inputs.py."""

import subprocess

import runtime_subprocess as rs
from crosstask import paths

TASK = 'csl_zh_abstract_to_title'


def _run(cmd: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
  env = {**rs.env(), paths.DATA_DIR_ENV: str(paths.SAMPLE_DIR)}
  return subprocess.run(cmd, cwd=rs.REPO, env=env, capture_output=True, text=True,
                        timeout=timeout)


def test_a_task_without_a_plain_form_stops_the_job_naming_the_ones_with_one(tmp_path):
  task = f'{TASK}.p1'  # a prompt variant: SeqIO has it, the plain forms do not
  res = _run(rs.without_tensorflow(
      'crosstask.infer', f'--gin_file={rs.TINY}', '--gin_file=runs/infer.gin',
      f"--gin.MIXTURE_OR_TASK_NAME='{task}'", "--gin.MIXTURE_OR_TASK_MODULE='crosstask.tasks.csl'",
      "--gin.TASK_FEATURE_LENGTHS={'inputs': 64, 'targets': 16}",
      f"--gin.CHECKPOINT_PATH='{tmp_path / 'none'}'", f"--gin.INFER_OUTPUT_DIR='{tmp_path}'"),
      timeout=300)
  assert res.returncode == 2, res.stdout[-3000:] + res.stderr[-3000:]
  error = next((line for line in res.stderr.splitlines() if line.startswith('ERROR: ')), '')
  assert error.startswith(f"ERROR: Task '{task}' has no form that runs without SeqIO and "
                          'TensorFlow'), res.stderr[-3000:]
  assert f'lists: 360 of crosstask.tasks.csl, e.g. {TASK},' in error
  assert 'Traceback' not in res.stderr and not list(tmp_path.glob('*.jsonl'))
