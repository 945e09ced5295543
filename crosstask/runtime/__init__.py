"""A lean T5X-style runtime: gin command lines, sharded training, orbax, SeqIO eval.

  train_lib / eval_lib / infer_lib   the gin-configured jobs behind
                                     `python -m crosstask.{train,eval,infer}`
  trainer       train state and the jitted, sharded train step
  partitioning  the ('data', 'fsdp', 'model') mesh, layouts as logical-axis rules,
                which batch rows each host loads
  optimizers    Adafactor / AdamW and T5X's learning-rate schedules (optax)
  adafactor     Adafactor with second moments factored by logical axes (T5X's rules)
  checkpoints   orbax save/restore, parameters-only loads, shape checks
  input_state   the tf.data iterator position saved with each checkpoint
  faults        SIGTERM, MODEL_DIR lock, writability, disk space, NaN/Inf errors
  data          SeqIO pipelines (DatasetConfig), seeded and sharded per host
  inference     batched predict/score; evaluation: seqio.Evaluator + summaries
  embedding     batched, sharded encoder embeddings (the SciRepEval jobs behind
                `python -m crosstask.embed|relevance` live in crosstask/tasks/scirepeval/)
  progress      console progress and TensorBoard scalars
  gin_utils     flag parsing, search paths, errors naming their file
  host_memory   glibc malloc settings the train entry point makes first (XLA:CPU's temporaries)
  restoring     what eval and infer share: checkpoint selection, parameter templates
  best_checkpoint  the best checkpoint of a run by a validation metric (early stopping)

It knows no benchmark: tasks come from the module named by MIXTURE_OR_TASK_MODULE.

Nothing here imports TensorFlow or SeqIO at module load.
"""
