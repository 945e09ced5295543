"""A lean T5X-style runtime: gin command lines, sharded training, orbax, SeqIO eval.

  train_lib / eval_lib / infer_lib   the gin-configured jobs behind
                                     `python -m crosstask.{train,eval,infer}`
  trainer       train state and the jitted, sharded train step
  partitioning  the ('data', 'model') mesh and logical-axis rules
  optimizers    Adafactor / AdamW and T5X's learning-rate schedules (optax)
  checkpoints   orbax save/restore, parameters-only loads, shape checks
  input_state   the tf.data iterator position saved with each checkpoint
  faults        SIGTERM, MODEL_DIR lock, writability, disk space, NaN/Inf errors
  data          SeqIO pipelines (DatasetConfig), seeded and sharded per host
  inference     batched predict/score; evaluation: seqio.Evaluator + summaries
  progress      console progress and TensorBoard scalars
  gin_utils     flag parsing, search paths, errors naming their file
  scenarios     CSL scenario names for gin; demo: the demo hook

Nothing here imports TensorFlow or SeqIO at module load.
"""
