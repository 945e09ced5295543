#!/usr/bin/env bash
# One lent GPU session's measurements in one call (about 8 minutes on an H100):
#   0. the cuDNN-vs-XLA attention check (padding, packing and causal masks together)
#   1. the profile of LongLM-large's train step at the current best setting
#      (cudnn, remat dots_attention, scan, batch 64): top ops and the split into categories
#   2. the fair HF training rows (Adafactor / fused AdamW, with and without gradient
#      checkpointing, torch.compile last) beside crosstask's best, Adafactor and AdamW
#   3. the decoding rows with their rooflines, against HF's static (eager and
#      compiled) and dynamic caches
#   4. the eval-only job end to end (infer / hf-infer; needs SeqIO and TensorFlow)
# `--profiles` runs the profiles alone (train step and greedy decode, raw traces kept)
# with the rows they are read against; `--quick-profiles` is its CPU smoke run.
# Everything goes under $OUT (default: a temporary directory): profile_step.json,
# profile_step.txt, gpu.json and gpu.txt. Rows the deadline leaves out are recorded
# as not_run, with the reason.
#
#   benchmarks/gpu_session.sh                 # on the GPU machine, from the repository root
#   benchmarks/gpu_session.sh --quick         # the same script on a CPU: tiny model, short
#
# gin-config is not in the device image: carry it as a wheel in .whl/ (see
# benchmarks/README.md, GPU); it is installed from there when `import gin` fails.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
if ! "$PY" -c 'import gin' 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .whl/gin_config-*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

MODE=${1:-}
if [[ "$MODE" == "--quick" || "$MODE" == "--quick-profiles" ]]; then
  M=tiny; ATT=xla; LEN=(--platform=cpu --lengths=32/16 --new_tokens=6 --steps=1)
  PROFILE=(--quick); DECODE_PROFILE=(--quick --decode); DEADLINE=3000; TIMEOUT=1200
  B=8; BIG=8; DEC=8; BASE=tiny
else
  M=longlm_large; ATT=cudnn; LEN=(--steps=5); DEADLINE=330; TIMEOUT=240; B=16; BIG=64; DEC=32
  PROFILE=(--model=longlm_large --attention=cudnn --remat=dots_attention --batch=64 --scan --steps=2)
  DECODE_PROFILE=(--model=longlm_large --decode --batch=32 --scan --steps=1); BASE=t5_1_1_base
fi

if [[ "$MODE" == "--profiles" || "$MODE" == "--quick-profiles" ]]; then
  # Where the time goes, before changing anything: the train step and one greedy
  # decode, each with its raw trace and HLO kept (gzipped) under $OUT/raw, then the
  # rows those profiles are read against. Eight files come back at most.
  "$PY" benchmarks/profile_step.py "${PROFILE[@]}" --out="$OUT/profile_train.json" \
    --save_raw="$OUT/raw" | tee -a "$OUT/log.txt" || echo "train profile failed (above)"
  "$PY" benchmarks/profile_step.py "${DECODE_PROFILE[@]}" --out="$OUT/profile_decode.json" \
    --save_raw="$OUT/raw" | tee -a "$OUT/log.txt" || echo "decode profile failed (above)"
  "$PY" benchmarks/gpu.py "${LEN[@]}" --deadline_s="${PROFILE_ROWS_DEADLINE:-150}" \
    --timeout_s="$TIMEOUT" --out="$OUT/gpu.json" --rows "train:$M:$ATT:dots_attention:$BIG:scan" \
    "decode:$M:1:$DEC:scan" "hf-train:$M:$B:adamw" "train:$BASE:$ATT:dots_attention:$BIG:scan" | tee -a "$OUT/log.txt"
  echo "results under $OUT"
  exit 0
fi

"$PY" benchmarks/profile_step.py "${PROFILE[@]}" --out="$OUT/profile_step.json" \
  | tee "$OUT/profile_step.txt" || echo "profile_step.py failed (above); the rows still run"

ROWS=(
  check "train:$M:$ATT:dots_attention:$BIG:scan" "hf-train:$M:$B:adamw" "hf-train:$M:$B"
  "hf-train:$M:$BIG:adamw:ckpt" "train:$M:$ATT:dots_attention:$BIG:scan:adamw"
  "decode:$M:1:$DEC:scan" "hf-decode:$M:1:$DEC" "hf-decode:$M:1:$DEC:compile"
  "hf-decode:$M:1:$DEC:dynamic"
  "infer:$M:$DEC:scan" "hf-infer:$M:$DEC"
  "decode:$M:4:$DEC:scan" "hf-decode:$M:4:$DEC"
  "decode:$M:1:$((DEC * 4)):scan" "hf-decode:$M:1:$((DEC * 4))"
  "hf-train:$M:$BIG:ckpt" "hf-train:$M:$B:adamw:compile"
)
"$PY" benchmarks/gpu.py "${LEN[@]}" --deadline_s="$DEADLINE" --timeout_s="$TIMEOUT" \
  --out="$OUT/gpu.json" --rows "${ROWS[@]}" | tee "$OUT/gpu.txt"
echo "results under $OUT"
