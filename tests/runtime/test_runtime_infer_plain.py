"""`python -m crosstask.infer` where TensorFlow and SeqIO cannot be imported (the GPU image):
a CSL arrow task's plain form gives the file the SeqIO job gives, line for line and field
for field, which `crosstask.score` takes as it takes that one; a task without a plain
form stops the job with the task named and the tasks that have one."""

import json
import subprocess
import sys

import pytest

import runtime_subprocess as rs
from crosstask import paths
from crosstask import score

TASK = 'csl_zh_abstract_to_title'
FIELDS = ('index', 'inputs', 'targets', 'prediction', 'score', 'target_score', 'step',
          'fingerprint')


def _run(cmd: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
  env = {**rs.env(), paths.DATA_DIR_ENV: str(paths.SAMPLE_DIR)}  # 30 validation examples
  return subprocess.run(cmd, cwd=rs.REPO, env=env, capture_output=True, text=True,
                        timeout=timeout)


def _ok(res: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
  assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
  return res


def _lines(path) -> list[dict]:
  return [json.loads(line) for line in path.read_text(encoding='utf-8').splitlines()]


@pytest.mark.slow
def test_the_plain_job_writes_the_seqio_jobs_file_and_score_takes_it(tmp_path, capsys):
  model_dir = tmp_path / 'model'
  _ok(_run(rs.train_cmd(model_dir, 1, f"--gin.MIXTURE_OR_TASK_NAME='{TASK}'",
                        "--gin.MIXTURE_OR_TASK_MODULE='crosstask.tasks.csl'",
                        "--gin.TASK_FEATURE_LENGTHS={'inputs': 64, 'targets': 16}",
                        '--gin.EVAL_PERIOD=0')))
  # Both from the run's saved config; batches of 8: the last of the 30 examples padded.
  _ok(_run([sys.executable, '-m', 'crosstask.infer', f'--run_dir={model_dir}',
            '--gin.BATCH_SIZE=8']))
  plain = _ok(_run(rs.without_tensorflow('crosstask.infer', f'--run_dir={model_dir}',
                                         '--gin.BATCH_SIZE=8',
                                         f"--gin.INFER_OUTPUT_DIR='{tmp_path / 'plain'}'")))
  name = f'{TASK}-validation.jsonl'
  want, got = _lines(model_dir / 'infer' / name), _lines(tmp_path / 'plain' / name)
  assert len(got) == len(want) == 30
  for g, w in zip(got, want):
    assert tuple(g) == tuple(w) == FIELDS
    for field in FIELDS:
      assert g[field] == w[field], (w['index'], field)
  assert f'Wrote 30 predictions to {tmp_path / "plain" / name}' in plain.stdout
  assert not rs.noise_in(plain.stdout + plain.stderr)

  # The SeqIO job's file scored in this process (no TensorFlow start-up to pay for), the
  # plain job's by `python -m crosstask.score`, the one test that starts that command.
  scored = {}
  for which, path in (('seqio', model_dir / 'infer' / name), ('plain', tmp_path / 'plain' / name)):
    args = [str(path), '--bootstrap=0', '--module=crosstask.tasks.csl',
            f'--output_dir={tmp_path / which}']
    if which == 'plain':
      res = _ok(_run([sys.executable, '-m', 'crosstask.score', *args]))
      out, err = res.stdout, res.stderr
      assert not rs.noise_in(out + err)
    else:
      capsys.readouterr()
      with paths.use_data_dir(paths.SAMPLE_DIR):
        assert score.main(args) == 0
      out, err = capsys.readouterr()
    assert 'note:' not in out + err  # the fingerprint is the task's own
    scored[which] = (out, _lines(tmp_path / which / 'metrics.jsonl'))
  assert scored['plain'] == scored['seqio']
  (record,), = [scored['plain'][1]]
  assert record['fingerprint'] == want[0]['fingerprint'] and record['step'] == 1


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
