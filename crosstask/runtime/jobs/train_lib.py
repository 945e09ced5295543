"""`train(...)`: T5X's training loop, resumable to the step and to the batch.

A restart restores the newest complete checkpoint: the state, and the input
iterator's position saved with it (tf.data checkpointing; a pipeline that cannot
save it skips the consumed batches of the seeded stream instead). The step is
folded into the dropout key, so a killed-and-resumed run matches an
uninterrupted one.
"""

import dataclasses
import os
from typing import Any, Callable

import gin
import jax
import numpy as np

from crosstask.runtime.config import gin_utils
from crosstask.runtime.config import run as run_lib
from crosstask.runtime.config import saved_run
from crosstask.runtime.data import batching
from crosstask.runtime.data import input_state
from crosstask.runtime.data import pipeline as data
from crosstask.runtime.jobs import restoring
from crosstask.runtime.predict import inference
from crosstask.runtime.report import console
from crosstask.runtime.report import faults
from crosstask.runtime.report import progress
from crosstask.runtime.sharding import model_flops
from crosstask.runtime.sharding import partitioning
from crosstask.runtime.state import checkpoints
from crosstask.runtime.state import optimizers
from crosstask.runtime.state import trainer as trainer_lib


def _teacher_forced_eval(model, partitioner, param_shardings, cfg: data.DatasetConfig,
                         max_batches: int) -> Callable[[Any], dict[str, float]]:
  """T5X's train_eval: mean teacher-forced metrics (loss, accuracy) on an eval split."""
  fn = jax.jit(lambda p, b: model.loss_fn(p, b, None)[1],
               in_shardings=(param_shardings, partitioner.data_sharding))
  host = partitioner.host_input(cfg.batch_size)

  def evaluate(params) -> dict[str, float]:
    outs = []
    # The last, short batch is zero-padded: padding has zero loss weight.
    ds = data.get_dataset(cfg, num_epochs=1, drop_remainder=False, host_input=host)
    with partitioner.context():
      # The batches are the loop's own iterator, not a local: an error leaving this frame
      # drops them with it, where a named one would stay with the traceback (_train).
      for i, batch in enumerate(data.numpy_batches(ds)):
        if max_batches and i >= max_batches:
          break
        batch, _ = batching.pad_rows(batch, host.batch_size)
        outs.append(fn(params, partitioner.shard_batch(batch)))
    sums = {}
    for metrics in jax.device_get(outs):  # One read-back, not one per batch.
      for k, v in metrics.items():
        sums[k] = sums.get(k, 0.0) + float(v)
    means = {k: v / len(outs) for k, v in sums.items()}
    per_token = progress.loss_per_token(sums)  # As the progress line's.
    if per_token is not None:
      means['loss_per_token'] = per_token
    return means
  return evaluate


def _train_eval_line(step: int, metrics: dict[str, float]) -> str:
  """The console's train_eval line: the loss a token and the share of target tokens
  predicted right under teacher forcing, a fraction as T5X's `accuracy` summary is (the
  inference eval's accuracy is whole outputs, in percent); every metric stays in the
  summaries."""
  parts = [f'step {step} training_eval']
  if 'loss_per_token' in metrics:
    parts.append(f'loss {metrics["loss_per_token"]:.4f}/token')
  if 'accuracy' in metrics:
    parts.append(f'token accuracy {metrics["accuracy"]:.4f} (teacher-forced)')
  return '  '.join(parts)


@gin.configurable(module='train_script')
def train(*,
          model: Any = gin.REQUIRED,
          train_dataset_cfg: data.DatasetConfig = gin.REQUIRED,
          train_eval_dataset_cfg: data.DatasetConfig | None = None,
          infer_eval_dataset_cfg: data.DatasetConfig | None = None,
          checkpoint_cfg: checkpoints.SaveCheckpointConfig | None = None,
          restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig | None = None,
          partitioner: partitioning.Partitioner | None = None,
          optimizer_fn: Callable[..., tuple] = optimizers.create_optimizer,
          model_dir: str = gin.REQUIRED,
          total_steps: int = gin.REQUIRED,
          eval_period: int = 0,
          eval_steps: int = 20,
          evaluator_num_examples: int | None = None,
          random_seed: int = 0,
          num_microbatches: int = 1,
          log_every: int = 10,
          summarize_config_fn: Callable[..., None] = gin_utils.summarize_gin_config,
          report_guard: restoring.ReportGuard | None = None,
          ) -> tuple[int, dict]:
  """Trains to `total_steps`; returns (final step, last train metrics).

  Mirrors t5x.train.train's arguments; `optimizer_fn(param_axes=...)` returns (optax
  transform, schedule) and is usually `optimizers.create_optimizer` configured in gin.
  `evaluator_num_examples` (T5X's EVALUATOR_NUM_EXAMPLES) decodes only the first N
  examples of each infer_eval task, as the eval job's NUM_EXAMPLES does (None: all).
  Faults (README "When a run fails"): SIGTERM checkpoints and raises
  `faults.Preempted`; a NaN/Inf step raises `faults.NonFiniteLossError` unless
  `trainer.Trainer.skip_nonfinite_batches`; a second trainer on `model_dir`,
  an unwritable or nearly full `model_dir` fail before the first step. The entry
  point's `report_guard` sees each evaluation's task and split against what the run
  trains on (and its initial checkpoint was trained on) before anything is read.
  """
  checkpoint_cfg = checkpoint_cfg or checkpoints.SaveCheckpointConfig()
  for macro, value, least in (('TRAIN_STEPS', total_steps, 1), ('EVAL_PERIOD', eval_period, 0),
                              ('EVAL_STEPS', eval_steps, 1), ('LOG_EVERY', log_every, 1),
                              ('RANDOM_SEED', random_seed, 0),
                              ('CHECKPOINT_PERIOD', checkpoint_cfg.period, 1),
                              ('CHECKPOINTS_TO_KEEP', checkpoint_cfg.keep, 1)):
    if not (value is None and macro == 'CHECKPOINTS_TO_KEEP'):  # None keeps every one
      gin_utils.check_count(macro, value, least)
  if evaluator_num_examples is not None:  # 0 or -1 had decoded the whole split
    gin_utils.check_count('EVALUATOR_NUM_EXAMPLES', evaluator_num_examples, 1)
  model_dir = faults.prepare_model_dir(model_dir)
  check_initial_checkpoint(restore_checkpoint_cfg)
  run = run_lib.resolve(model, partitioner,
                        datasets={'train': train_dataset_cfg,
                                  'train_eval': train_eval_dataset_cfg,
                                  'infer_eval': infer_eval_dataset_cfg},
                        num_microbatches=num_microbatches)
  if report_guard is not None:  # The tasks are registered now.
    trained = [run.dataset('train').mixture_or_task_name] + saved_run.trained_on(
        restore_checkpoint_cfg.path if restore_checkpoint_cfg else None)
    for role in ('train_eval', 'infer_eval'):
      cfg = run.dataset(role)
      if cfg is not None:
        report_guard(trained, cfg.mixture_or_task_name, cfg.split)
  job = TrainJob(run=run, model_dir=model_dir, total_steps=int(total_steps),
                 checkpoint_cfg=checkpoint_cfg,
                 restore_checkpoint_cfg=restore_checkpoint_cfg, optimizer_fn=optimizer_fn,
                 eval_period=eval_period, eval_steps=eval_steps,
                 evaluator_num_examples=evaluator_num_examples, random_seed=random_seed,
                 log_every=log_every, summarize_config_fn=summarize_config_fn)
  with faults.ModelDirLock(model_dir), faults.PreemptionWatcher() as preemption:
    return _train(job, preemption)


@dataclasses.dataclass(frozen=True)
class TrainJob:
  """A training run: the resolved Run and what `train` adds to it (its arguments)."""
  run: run_lib.Run
  model_dir: str
  total_steps: int
  checkpoint_cfg: checkpoints.SaveCheckpointConfig
  restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig | None
  optimizer_fn: Callable[..., tuple]
  eval_period: int
  eval_steps: int
  evaluator_num_examples: int | None
  random_seed: int
  log_every: int
  summarize_config_fn: Callable[..., None]


def _train(job: TrainJob, preemption: faults.PreemptionWatcher) -> tuple[int, dict]:
  run, model_dir, total_steps = job.run, job.model_dir, job.total_steps
  model, partitioner = run.model, run.partitioner
  train_dataset_cfg = run.dataset('train')
  train_eval_dataset_cfg = run.dataset('train_eval')
  infer_eval_dataset_cfg = run.dataset('infer_eval')
  checkpoint_cfg = job.checkpoint_cfg
  eval_period = job.eval_period
  tx, schedule = job.optimizer_fn(param_axes=run.param_axes)
  trainer = trainer_lib.Trainer(run, tx, schedule)
  faults.check_free_space(model_dir, faults.state_bytes(trainer.abstract_state()))
  writer = progress.writer(os.path.join(model_dir, 'train'))
  partitioning.wait_for_all_processes('crosstask_train_setup')
  mgr = checkpoints.manager(model_dir, checkpoint_cfg)
  # From here on the manager is closed however the run ends: one left open when setting
  # up failed (a missing INITIAL_CHECKPOINT_PATH) had its background clean-up of temporary
  # folders cut off by the interpreter's exit, and orbax printed a traceback after the error.
  try:
    latest = mgr.latest_step()
    state, consumed, skipped = _initial_state(job, trainer, mgr, latest)
    start = int(jax.device_get(state['step']))
    if start >= total_steps:
      console.say(f'{model_dir} is at step {start}, TRAIN_STEPS={total_steps}: nothing to '
                  'train (raise TRAIN_STEPS to continue).')

    train_eval = infer_eval = runner = None
    if eval_period and infer_eval_dataset_cfg is not None:
      from crosstask.runtime.predict import evaluation
      infer_eval = evaluation.Evaluator(infer_eval_dataset_cfg,
                                        os.path.join(model_dir, 'inference_eval'),
                                        progress.writer(os.path.join(model_dir, 'inference_eval')),
                                        num_examples=job.evaluator_num_examples)
      runner = inference.Inference(model, partitioner, trainer.param_shardings,
                                   infer_eval_dataset_cfg.batch_size)
    if eval_period and train_eval_dataset_cfg is not None:
      train_eval = _teacher_forced_eval(model, partitioner, trainer.param_shardings,
                                        train_eval_dataset_cfg, job.eval_steps)
      train_eval_writer = progress.writer(os.path.join(model_dir, 'training_eval'))

    iterator = _input_stream(train_dataset_cfg, mgr, latest, consumed,
                             partitioner.host_input(train_dataset_cfg.batch_size))
    partitioning.wait_for_all_processes('crosstask_train_loop')
    saves_input = None  # Known once the iterator has produced a batch.
    # Placed once as the step expects it (replicated), not re-transferred every step;
    # made by a jitted call, since device_put cannot place onto other hosts' devices.
    with partitioner.context():
      rng = jax.jit(lambda: jax.random.key(job.random_seed + 1),
                    out_shardings=partitioner.replicated)()
    report = progress.Progress(
        total_steps, start, writer, every=job.log_every,
        hw=progress.hardware(list(partitioner.mesh.devices.flat),
                             model_flops.of_input_shapes(model, run.input_shapes)))
    step = saved_step = start
    pending = None  # The last step, checked for NaN/Inf one step late (see `_check_finite`).

    def check_pending():
      nonlocal pending, skipped
      if pending is not None:
        skipped += _check_finite(*pending, trainer, model, train_dataset_cfg, mgr, model_dir,
                                 skipped)
        pending = None

    def save(at: int):
      nonlocal saved_step, saves_input
      check_pending()  # Never save a step that was not checked.
      if saves_input is None:
        saves_input = _saves_input(train_dataset_cfg, iterator)
      checkpoints.save(mgr, at, state, consumed, iterator if saves_input else None,
                       input_record=_input_record(train_dataset_cfg), skipped_nonfinite=skipped)
      saved_step = at

    while step < total_steps:
      batch = data.to_numpy(next(iterator))
      state, metrics = trainer.train_step(state, partitioner.shard_batch(batch), rng)
      step += 1
      consumed += 1
      check_pending()  # The previous step's, so the host stays one step ahead.
      pending = (step, batch, metrics)
      report.update(step, metrics)
      if step == start + 1:
        # Once a step has run on what was restored: a start that fails (another model's
        # checkpoint, other batch shapes) leaves the run's saved configuration as it was.
        job.summarize_config_fn(model_dir, writer, start)
        gin_utils.write_operative_config(model_dir)
      if step % checkpoint_cfg.period == 0 or step == total_steps:
        save(step)
      if step < total_steps and preemption.reached(step):
        if saved_step != step:
          save(step)
        mgr.wait_until_finished()
        raise faults.Preempted(
            f'Preempted (SIGTERM) at step {step}: saved {model_dir}/'
            f'{checkpoints.STEP_PREFIX}_{step}. Rerun the same command to continue.')
      if eval_period and (step % eval_period == 0 or step == total_steps):
        check_pending()
        if train_eval is not None:
          m = train_eval(state['params'])
          train_eval_writer.write_scalars(step, {f'training_eval/{k}': v for k, v in m.items()})
          train_eval_writer.flush()
          console.say(_train_eval_line(step, m))
        if infer_eval is not None and infer_eval.has_tasks:
          res = infer_eval.evaluate(runner, state['params'], step)
          console.say(f'step {step} inference_eval {console.metrics_line(res)}')
    check_pending()
  finally:
    mgr.wait_until_finished()  # Saves already started are good steps: let them finish.
    mgr.close()
    writer.close()
    # The input pipeline goes now, not with the traceback of an error that ends the loop
    # (NaN loss, preemption): that traceback's frames sit in a reference cycle, and a
    # tf.data iterator freed by a later garbage collection blocked it until the pipeline's
    # autotuning thread next woke, a period that grows while it lives (18-27 s seen).
    iterator = None
  if skipped:
    console.say(f'Skipped {skipped} batches with a non-finite loss.')
  return step, report.last  # The final step is always a report step.


def _initial_state(job: TrainJob, trainer: trainer_lib.Trainer, mgr, latest: int | None
                   ) -> tuple[Any, int, int]:
  """(state, batches consumed, batches skipped): MODEL_DIR's newest checkpoint, else the
  parameters of INITIAL_CHECKPOINT_PATH, else a fresh initialisation."""
  run, model_dir, restore = job.run, job.model_dir, job.restore_checkpoint_cfg
  if latest is not None:
    state, saved = checkpoints.restore_with_progress(mgr, latest, trainer.abstract_state())
    consumed, skipped = saved['batches_consumed'], saved.get('skipped_nonfinite', 0)
    _check_same_input(saved.get('input'), _input_record(run.dataset('train')),
                      f'{model_dir}/{checkpoints.STEP_PREFIX}_{latest}')
    console.say(f'Restored {model_dir}/{checkpoints.STEP_PREFIX}_{latest}: continuing at '
                f'step {latest} after {consumed} batches.')
    return state, consumed, skipped
  if restore and restore.path:
    params = checkpoints.load_params(restore.path, trainer.abstract_params(),
                                     run.vocabularies, run.model_config)
    state = trainer.state_from_params(params)
    del params  # Donated to the state; no second copy for the run.
    console.say(f'Initialised parameters from {restore.path}.')
    return state, 0, 0
  return trainer.init_state(job.random_seed), 0, 0


# What the saved input position is a position in, by the macro that sets it.
_INPUT_MACROS = {'task': 'MIXTURE_OR_TASK_NAME', 'split': 'the train split',
                 'batch_size': 'BATCH_SIZE', 'lengths': 'TASK_FEATURE_LENGTHS', 'pack': 'PACK',
                 'shuffle': 'SHUFFLE', 'seed': 'RANDOM_SEED'}


def _input_record(cfg: data.DatasetConfig) -> dict:
  return {'task': cfg.mixture_or_task_name, 'split': cfg.split, 'batch_size': cfg.batch_size,
          'lengths': {k: int(v) for k, v in cfg.task_feature_lengths.items()},
          'pack': bool(cfg.pack), 'shuffle': bool(cfg.shuffle), 'seed': cfg.seed}


def _check_same_input(saved: dict | None, now: dict, checkpoint: str) -> None:
  """A resume continues the saved input stream, so one on another stream is refused:
  the position (batches consumed, the iterator's state) means nothing there, and a
  changed batch or length would fail in tf.data after the restore. Checkpoints from
  before the record was kept carry none and are not checked."""
  if saved is None:
    return
  changed = [f'{_INPUT_MACROS[k]} {saved.get(k)!r} -> {now[k]!r}'
             for k in _INPUT_MACROS if saved.get(k) != now[k]]
  if changed:
    raise faults.CheckpointMismatchError(
        f'{checkpoint} was trained on another input stream ({"; ".join(changed)}): a resume '
        'continues the saved stream. Rerun with the saved settings, or train the changed '
        f'one in a new MODEL_DIR with INITIAL_CHECKPOINT_PATH={checkpoint!r}.')


def _input_stream(cfg: data.DatasetConfig, mgr, latest: int | None, consumed: int,
                  host: partitioning.HostInput):
  """An iterator over this host's rows of the train batches, at the resume position.

  A checkpoint that holds the iterator state (a pipeline of TF ops) resumes from
  it, re-reading nothing; otherwise the seeded stream is re-read and `consumed`
  batches are skipped.
  """
  iterator = iter(data.get_dataset(cfg, num_epochs=None, host_input=host))
  if latest is None:
    return iterator
  if checkpoints.has_input_state(mgr, latest):
    try:
      checkpoints.restore_input(mgr, latest, iterator)
      console.say(f'Restored the input position of step {latest} (no batch re-read).')
      return iterator
    except Exception as e:  # pylint: disable=broad-except  A changed pipeline, say.
      console.warn(f'Could not restore the input position of step {latest} ({e}); skipping '
                   f'{consumed} batches instead.')
  console.say(f'Skipping {consumed} consumed batches to reach the input position of step '
              f'{latest}.')
  return iter(data.get_dataset(cfg, num_epochs=None, skip_batches=consumed, host_input=host))


def _saves_input(cfg: data.DatasetConfig, iterator) -> bool:
  """Whether the iterator's state can be saved (probed once it has produced a batch)."""
  reason = input_state.why_not_checkpointable(iterator)
  if reason is not None:
    console.warn(f'The input pipeline of {cfg.mixture_or_task_name!r} cannot save its '
                 f'position ({reason}); a restart will re-read the batches it consumed to '
                 'skip them.')
  return reason is None


def _check_finite(step, batch, metrics, trainer, model, cfg, mgr, model_dir, skipped) -> int:
  """1 if the step was non-finite and skipped; raises if it was and skipping is off."""
  metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
  if not metrics.get('nonfinite'):
    return 0
  where = _describe_batch(batch, model, cfg)
  message = faults.describe_nonfinite(step, metrics, where)
  if trainer.skip_nonfinite_batches:
    console.say(f'{message} Skipped (no update applied; {skipped + 1} so far).')
    return 1
  dump = os.path.join(model_dir, f'nonfinite_batch_step_{step}-{jax.process_index()}.npz')
  np.savez(dump, **batch)
  mgr.wait_until_finished()
  last = mgr.latest_step()
  kept = (f'the last good checkpoint is {model_dir}/{checkpoints.STEP_PREFIX}_{last}'
          if last is not None else 'no checkpoint was saved yet')
  raise faults.NonFiniteLossError(
      f'{message} Stopped: {kept} (nothing after it is saved); the batch is in {dump}. '
      'To skip such batches instead, set --gin.SKIP_NONFINITE_BATCHES=True.')


def _describe_batch(batch, model, cfg: data.DatasetConfig) -> str:
  """The task (or mixture and its tasks) and the first example's input text."""
  what = f"of '{cfg.mixture_or_task_name}'"
  try:
    task = data.get_mixture_or_task(cfg.mixture_or_task_name)
    names = [t.name for t in getattr(task, 'tasks', [])]
    if names:
      what = f"of mixture '{task.name}' (tasks {', '.join(names)})"
    tokens = [int(t) for t in batch['encoder_input_tokens'][0] if t > 0]
    text = model.input_vocabulary.decode(tokens)
    what += f', first input {text[:80]!r}'
  except Exception:  # pylint: disable=broad-except  Naming the task is best effort.
    pass
  return what


def check_initial_checkpoint(cfg: checkpoints.RestoreCheckpointConfig | None) -> None:
  """Fails on settings a training run cannot honour, rather than ignoring them.

  A run resumes its full state from MODEL_DIR; INITIAL_CHECKPOINT_PATH only seeds
  the parameters of a new run.
  """
  if cfg is None or not cfg.path:
    return
  if not cfg.params_only:
    raise ValueError(
        f'RestoreCheckpointConfig.params_only=False for {cfg.path!r}: training takes only '
        'parameters from INITIAL_CHECKPOINT_PATH and resumes full state from MODEL_DIR. '
        'To continue that run, train with MODEL_DIR set to its directory.')
  if cfg.mode not in ('latest', 'specific'):
    raise ValueError(f"RestoreCheckpointConfig.mode={cfg.mode!r} for {cfg.path!r}: training "
                     "starts from one checkpoint; use 'latest' or 'specific'.")
