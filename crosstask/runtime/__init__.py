"""A lean T5X-style runtime: gin command lines, sharded training, orbax, SeqIO eval.

Its folders, each importing only folders listed below it (tests/test_layers.py finds
no cycle among them):

  jobs/      the gin-configured jobs behind `python -m crosstask.{train,eval,infer,...}`
    train_lib / eval_lib / infer_lib / relevance_lib
    restoring     what eval and infer share: their job around a Run, checkpoint selection
    best_checkpoint  the best checkpoint of a run by a validation metric
    embedding     batched, sharded encoder embeddings (`python -m crosstask.embed`)
    aot           ahead-of-time compiles of a run's step (`python -m crosstask.compile`)
  state/     the train state and what keeps it
    trainer       train state and the jitted, sharded train step
    optimizers    Adafactor / AdamW and T5X's learning-rate schedules (optax)
    adafactor     Adafactor with second moments factored by logical axes (T5X's rules)
    checkpoints   orbax save/restore, parameters-only loads, shape checks
  predict/   whole datasets through a trained model
    inference     batched, sharded predict and score
    evaluation    seqio.Evaluator and its summaries
    fingerprint   a hash of what defines a task's numbers, beside each metrics record
  config/    what a job runs with
    run           the Run every job resolves once at its start: model for the platform,
                  tasks for its vocabulary, batch checked, abstract parameters and key
    saved_run     a trained run's saved config: `--run_dir` starts eval and infer from it;
                  the one reader of its macros (what a checkpoint was trained on)
    gin_utils     flag parsing, search paths, errors naming their file
    model_gin     a model gin file -> config / model / parameter count
    platform      per-platform profiles (CPU, GPU, TPU): XLA options, PRNG, allocator,
                  attention and remat defaults, compilation cache; a quiet start-up
    host_memory   glibc malloc settings the entry points make first on CPU
  data/      training inputs
    pipeline      SeqIO pipelines (DatasetConfig), seeded and sharded per host
    packing       the feature converter's first-fit-decreasing packing of training rows
    input_state   the tf.data iterator position saved with each checkpoint
    batching      fixed-size global batches for inference, embedding and scoring
    host_inputs   eval inputs without TensorFlow: text -> the converter's batches in numpy
  report/    what a researcher watches
    console       the one reporter: process 0 prints, the other processes log
    progress      console progress and TensorBoard scalars
    faults        SIGTERM, MODEL_DIR lock, writability, disk space, NaN/Inf errors
  sharding/  where tensors live and what a step will cost
    partitioning  the ('data', 'fsdp', 'model') mesh, layouts as logical-axis rules,
                  which batch rows each host loads
    topology      named TPU slices as compile-only devices; each chip's HBM, peak, bandwidth
    compile_report  a compiled step's per-chip memory, cost, collectives, predicted
                  step time and MFU; its text and JSON
    hlo           an optimized HLO module's loops (trip counts), collectives and traffic
    model_flops   the model's matmul FLOPs per train step: MFU's numerator

It knows no benchmark: tasks come from the module named by MIXTURE_OR_TASK_MODULE, and
the benchmark-specific jobs (`crosstask/embed.py`, `crosstask/relevance.py`) are entry
points that join a benchmark's inputs to these libraries.

Nothing here imports TensorFlow or SeqIO at module load; `Inference.predict_batches`
with `data.host_inputs` decodes a task's examples with neither installed, and where
neither is, `jobs.infer_lib` reads a task's plain form (`data.pipeline.plain_task`).
"""
