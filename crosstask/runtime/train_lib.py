"""`train(...)`: T5X's training loop, resumable to the step and to the batch.

A restart restores the newest complete checkpoint (state and number of batches
consumed), skips that many batches of the seeded pipeline, and folds the step into
the dropout key, so a killed-and-resumed run matches an uninterrupted one.
"""

import os
from typing import Any, Callable

import gin
import jax

from crosstask.runtime import checkpoints, data, gin_utils, inference, optimizers
from crosstask.runtime import partitioning, progress, trainer as trainer_lib


def _teacher_forced_eval(model, partitioner, param_shardings, cfg: data.DatasetConfig,
                         max_batches: int) -> Callable[[Any], dict[str, float]]:
  """T5X's train_eval: mean teacher-forced metrics (loss, accuracy) on an eval split."""
  fn = jax.jit(lambda p, b: model.loss_fn(p, b, None)[1],
               in_shardings=(param_shardings, partitioner.data_sharding))
  local_batch = data.per_host_batch_size(cfg.batch_size)

  def evaluate(params) -> dict[str, float]:
    outs = []
    # The last, short batch is zero-padded: padding has zero loss weight.
    ds = data.get_dataset(cfg, num_epochs=1, drop_remainder=False)
    with partitioner.context():
      for i, batch in enumerate(data.numpy_batches(ds)):
        if max_batches and i >= max_batches:
          break
        batch, _ = data.pad_batch(batch, local_batch)
        outs.append(fn(params, partitioner.shard_batch(batch)))
    sums = {}
    for metrics in jax.device_get(outs):  # One read-back, not one per batch.
      for k, v in metrics.items():
        sums[k] = sums.get(k, 0.0) + float(v)
    return {k: v / len(outs) for k, v in sums.items()} if outs else {}
  return evaluate


@gin.configurable(module='train_script')
def train(*,
          model: Any = gin.REQUIRED,
          train_dataset_cfg: data.DatasetConfig = gin.REQUIRED,
          train_eval_dataset_cfg: data.DatasetConfig | None = None,
          infer_eval_dataset_cfg: data.DatasetConfig | None = None,
          checkpoint_cfg: checkpoints.SaveCheckpointConfig | None = None,
          restore_checkpoint_cfg: checkpoints.RestoreCheckpointConfig | None = None,
          partitioner: partitioning.Partitioner | None = None,
          optimizer_fn: Callable[[], tuple] = optimizers.create_optimizer,
          model_dir: str = gin.REQUIRED,
          total_steps: int = gin.REQUIRED,
          eval_period: int = 0,
          eval_steps: int = 20,
          random_seed: int = 0,
          num_microbatches: int = 1,
          log_every: int = 10,
          summarize_config_fn: Callable[..., None] = gin_utils.summarize_gin_config,
          ) -> tuple[int, dict]:
  """Trains to `total_steps`; returns (final step, last train metrics).

  Mirrors t5x.train.train's arguments; `optimizer_fn` returns (optax transform,
  schedule) and is usually `optimizers.create_optimizer` configured in gin.
  """
  model_dir = os.path.abspath(model_dir)
  os.makedirs(model_dir, exist_ok=True)
  partitioner = partitioner or partitioning.Partitioner()
  checkpoint_cfg = checkpoint_cfg or checkpoints.SaveCheckpointConfig()
  writer = progress.writer(os.path.join(model_dir, 'train'))
  summarize_config_fn(model_dir, writer, 0)

  tx, schedule = optimizer_fn()
  check_initial_checkpoint(restore_checkpoint_cfg)
  data.check_run_vocabulary(model, train_dataset_cfg)
  trainer = trainer_lib.Trainer(model, partitioner, tx, schedule,
                                data.model_input_shapes(train_dataset_cfg),
                                num_microbatches=num_microbatches)
  mgr = checkpoints.manager(model_dir, checkpoint_cfg)
  latest = mgr.latest_step()
  consumed = 0
  if latest is not None:
    state, consumed = checkpoints.restore(mgr, latest, trainer.abstract_state())
    print(f'Restored {model_dir}/{checkpoints.STEP_PREFIX}_{latest}: continuing at step '
          f'{latest} after {consumed} batches.', flush=True)
  elif restore_checkpoint_cfg and restore_checkpoint_cfg.path:
    params = checkpoints.load_params(restore_checkpoint_cfg.path, trainer.abstract_params())
    state = trainer.state_from_params(params)
    print(f'Initialised parameters from {restore_checkpoint_cfg.path}.', flush=True)
  else:
    state = trainer.init_state(random_seed)
  start = int(jax.device_get(state['step']))

  train_eval = infer_eval = runner = None
  if eval_period and infer_eval_dataset_cfg is not None:
    from crosstask.runtime import evaluation
    infer_eval = evaluation.Evaluator(infer_eval_dataset_cfg,
                                      os.path.join(model_dir, 'inference_eval'),
                                      progress.writer(os.path.join(model_dir, 'inference_eval')))
    runner = inference.Inference(model, partitioner, trainer.param_shardings,
                                 infer_eval_dataset_cfg.batch_size)
  if eval_period and train_eval_dataset_cfg is not None:
    train_eval = _teacher_forced_eval(model, partitioner, trainer.param_shardings,
                                      train_eval_dataset_cfg, eval_steps)
    train_eval_writer = progress.writer(os.path.join(model_dir, 'training_eval'))

  ds = data.get_dataset(train_dataset_cfg, num_epochs=None, skip_batches=consumed)
  batches = data.numpy_batches(ds)
  # Placed once as the step expects it (replicated), not re-transferred every step.
  rng = jax.device_put(jax.random.key(random_seed + 1), partitioner.replicated)
  report = progress.Progress(total_steps, start, writer, every=log_every)
  step = start
  while step < total_steps:
    batch = partitioner.shard_batch(next(batches))
    state, metrics = trainer.train_step(state, batch, rng)
    step += 1
    consumed += 1
    report.update(step, metrics)
    if step == start + 1:
      gin_utils.write_operative_config(model_dir)
    if step % checkpoint_cfg.period == 0 or step == total_steps:
      checkpoints.save(mgr, step, state, consumed)
    if eval_period and (step % eval_period == 0 or step == total_steps):
      if train_eval is not None:
        m = train_eval(state['params'])
        train_eval_writer.write_scalars(step, {f'training_eval/{k}': v for k, v in m.items()})
        train_eval_writer.flush()
        print(f'step {step} training_eval ' + ' '.join(f'{k} {v:.4f}' for k, v in m.items()),
              flush=True)
      if infer_eval is not None and infer_eval.has_tasks:
        res = infer_eval.evaluate(runner, state['params'], step)
        print(f'step {step} inference_eval {res}', flush=True)
  mgr.wait_until_finished()
  mgr.close()
  writer.close()
  return step, report.last  # The final step is always a report step.


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
