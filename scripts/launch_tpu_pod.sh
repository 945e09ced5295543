#!/usr/bin/env bash
# Trains on every host of a Cloud TPU VM pod slice, one process per host.
#
# JAX's own multi-controller runtime does the rest: --gin.MULTIHOST=True makes the
# entry point call jax.distributed.initialize(), whose Cloud TPU detection reads the
# coordinator and each host's process id from the TPU metadata. Nothing else is set.
#
# Usage (from a checkout; the gin flags after the script name go to crosstask.train):
#   TPU=my-v5e-16 ZONE=us-west4-a MODEL_DIR=gs://bucket/outgen \
#     scripts/launch_tpu_pod.sh --gin_file=longlm/large.gin --gin_file=lot/finetune_outgen.gin
# Environment: BATCH_PER_PROCESS rows each host feeds a step (default 32; the global
# BATCH_SIZE is that times the hosts), LAYOUT (default fsdp: what `crosstask.compile`
# said fits), HOSTS (default: the slice's workers), SYNC=0 to skip copying this
# checkout to the workers and installing it there.
set -euo pipefail
: "${TPU:?the TPU VM name}" "${ZONE:?its zone}" "${MODEL_DIR:?a gs:// directory every host can write}"
BATCH_PER_PROCESS=${BATCH_PER_PROCESS:-32}
LAYOUT=${LAYOUT:-fsdp}
if [[ -z "${HOSTS:-}" ]]; then
  HOSTS=$(gcloud compute tpus tpu-vm describe "$TPU" --zone="$ZONE" \
            --format='value(networkEndpoints.len())')
fi
on_all_workers() { gcloud compute tpus tpu-vm ssh "$TPU" --zone="$ZONE" --worker=all "$@"; }

if [[ "${SYNC:-1}" == 1 ]]; then
  archive=$(mktemp --suffix=.tar.gz)
  git -C "$(dirname "$0")/.." archive --format=tar.gz -o "$archive" HEAD
  gcloud compute tpus tpu-vm scp "$archive" "$TPU:crosstask.tar.gz" --zone="$ZONE" --worker=all
  on_all_workers --command="mkdir -p crosstask && tar xzf crosstask.tar.gz -C crosstask &&
    pip install -q -e 'crosstask[tasks,tpu]'"
fi

train=(python -m crosstask.train "$@" --gin.MODEL_DIR="'$MODEL_DIR'" --gin.MULTIHOST=True
       --gin.LAYOUT="'$LAYOUT'" --gin.BATCH_SIZE=$((BATCH_PER_PROCESS * HOSTS)))
on_all_workers --command="cd crosstask && $(printf '%q ' "${train[@]}")"
