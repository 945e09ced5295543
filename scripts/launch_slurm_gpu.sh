#!/usr/bin/env bash
#SBATCH --job-name=crosstask
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
# Trains on a multi-node GPU cluster under Slurm, one process per GPU.
#
# JAX's own multi-controller runtime does the rest: --gin.MULTIHOST=True makes the
# entry point call jax.distributed.initialize(), whose Slurm detection reads srun's
# variables: the coordinator is the job's first node, process i is task i and uses
# GPU $SLURM_LOCALID of its node (so every task must see all of its node's GPUs:
# no --gpus-per-task). Set --ntasks-per-node to the GPUs per node.
#
# Usage (crosstask installed with its `gpu` extra on every node, MODEL_DIR on storage
# every node can write):
#   MODEL_DIR=/shared/runs/outgen sbatch scripts/launch_slurm_gpu.sh \
#     --gin_file=longlm/large.gin --gin_file=lot/finetune_outgen.gin
# Environment: BATCH_PER_PROCESS rows each GPU feeds a step (default 32; the global
# BATCH_SIZE is that times SLURM_NTASKS), LAYOUT (default fsdp: what
# `crosstask.compile` said fits), PYTHON (default python).
set -euo pipefail
: "${MODEL_DIR:?a directory every node can write}" "${SLURM_NTASKS:?run under sbatch or salloc}"
BATCH_PER_PROCESS=${BATCH_PER_PROCESS:-32}
LAYOUT=${LAYOUT:-fsdp}

srun --kill-on-bad-exit=1 "${PYTHON:-python}" -m crosstask.train "$@" \
  --gin.MODEL_DIR="'$MODEL_DIR'" --gin.MULTIHOST=True --gin.LAYOUT="'$LAYOUT'" \
  --gin.BATCH_SIZE=$((BATCH_PER_PROCESS * SLURM_NTASKS))
