#!/usr/bin/env bash
# One lent GPU session's measurements in one call (about 8 minutes), most wanted
# first, so a deadline leaves out the least:
#   1. the profiles of LongLM-large's train step as the GPU profile trains it (cudnn,
#      remat dots_attention, scan, two layers an iteration, batch 64) and of a beam-4
#      decode (batch 32), raw traces kept under $OUT/raw
#   2. the GPU default's train row and HF's fused AdamW beside it; the attention check;
#      the default with attention's projections of one input as one matmul (`fused_qkv`);
#      greedy and beam-4 decoding as they are and with each step's cross-attention one
#      Pallas flash-decoding kernel (`pallas_cross`: +2.6% at greedy batch 32 on an
#      H200, run 11; its beam row decides whether it becomes the default) and with
#      each step's query, key and value one matmul (`fused_qkv`: three small GEMMs a
#      layer took 12 us for 2 us of weights at full HBM rate, H100 run 9); beam 4 with
#      its self-attention caches copied into each step's beam order (`beam_reorder`,
#      the default until the caches stayed in place); greedy at batch 128
#   3. T5 1.1 base and large, base also with `fused_qkv` and its gated MLP's two input
#      matmuls as one (`fused_mlp`); the remat that saves the norms too (batch 48);
#      optax AdamW
#   4. HF's compiled and checkpointed settings (each may take its whole time limit)
#      and the other HF settings
#   5. settings measured already and kept for their CPU twins' tests: the eval-only
#      job (run 11: 3.5% outside decoding), cuBLAS GEMMs (-4.9%), cuDNN's ragged layout
#      with and without conditionals as CUDA-graph nodes (-18%, -15%), one layer an
#      iteration
# `--unrolled` runs, alone, the default with each scanned stack unrolled whole
# (`unrollfull`): it builds none of the scan's stacked residuals (~70 of the H200 step's
# 566 ms: zeroed, written a layer per iteration, sliced), but an unrolled step compiles
# for minutes (the unscanned one took 369 s on the H100), so it gets a call of its own
# (up to 9 minutes) and no place in the list below. For a v5e-8 (T5 1.1 base, 64 x
# 512/512, remat dots_attention) XLA plans it at 5.4 GiB a chip against the loop's 5.2,
# with 3.6% more HBM bytes.
# `--profiles` runs the profiles alone with the rows they are read against; `--ttq`
# the time-to-quality pair (about 5 minutes; later arguments go to time_to_quality.py,
# e.g. `--ttq --residual_dtype=float32`); `--infer` the eval-only job alone,
# crosstask's and HF's eager and compiled (about 6 minutes); `--quick`,
# `--quick-profiles`, `--quick-ttq`, `--quick-infer`, `--quick-unrolled` are CPU smoke
# runs. The data root does not travel to the device machine: the eval-only job and time
# to quality read $CROSSTASK_DATA_DIR, else .gpu_data/ (`cp -r ../shared/data .gpu_data`,
# 43 MB; carry `.gpu_data`). Everything goes under $OUT (default: a temporary
# directory); rows the deadline leaves out are recorded as not_run, with the reason.
#
#   benchmarks/gpu_session.sh                 # on the GPU machine, from the repository root
#   benchmarks/gpu_session.sh --quick         # the same script on a CPU: tiny model, short
#
# The device image lacks some packages crosstask needs (benchmarks/gpu_image.py lists
# them): carry their wheels in .whl/ (`python benchmarks/gpu_image.py --download .whl`);
# they are installed from there when one of them cannot be imported.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
if ! "$PY" -c 'import gin, nltk, rapidfuzz, rouge' 2>/dev/null; then  # gpu_image.CARRIED
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .whl/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

if [[ -z "${CROSSTASK_DATA_DIR:-}" && -d .gpu_data ]]; then
  export CROSSTASK_DATA_DIR=$PWD/.gpu_data
fi

MODE=${1:-}
if [[ "$MODE" == "--quick" || "$MODE" == "--quick-profiles" || "$MODE" == "--quick-infer"
      || "$MODE" == "--quick-unrolled" ]]; then
  # The rows of one framework share a process on the CPU (no device memory to give back).
  M=tiny; ATT=xla; SEG=dot_product
  ROW_ARGS=(--platform=cpu --lengths=32/16 --new_tokens=6 --steps=1 --share_processes)
  PROFILE=(--quick); DECODE_PROFILE=(--quick --decode --beams=4); DEADLINE=3000; TIMEOUT=1200
  # One size a kind: rows that differ only in model or batch on the GPU are one row here,
  # and so is beam search's kernel row (beam tokens with the kernel: model tests).
  B=8; BIG=8; MID=8; DEC=8; WIDE=8; BASE=tiny; LARGE=tiny; BEAM_KERNEL=
else
  M=longlm_large; ATT=cudnn; SEG=cudnn_segments; ROW_ARGS=(--steps=5); DEADLINE=400; TIMEOUT=240
  B=16; BIG=64; MID=48; DEC=32; WIDE=128; BASE=t5_1_1_base; LARGE=t5_1_1_large
  BEAM_KERNEL=:pallas_cross
  PROFILE=(--model=longlm_large --attention=cudnn --remat=dots_attention --batch=64 --scan
           --options unroll2 --steps=2)
  # Beam 4: the decode row furthest from its roofline (6.4x, H100 run 8); greedy's
  # profile is results/profile_decode_h100.json (run 9).
  DECODE_PROFILE=(--model=longlm_large --decode --beams=4 --batch=32 --scan --steps=1)
fi

if [[ "$MODE" == "--ttq" || "$MODE" == "--quick-ttq" ]]; then
  # Time to quality (time_to_quality.py) on the text of every benchmark in the data root.
  if [[ "$MODE" == "--quick-ttq" ]]; then
    TTQ=(--device=cpu --model=tiny --dtype=float32 --steps=12 --batch=4 --lengths=64/16
         --eval_every=6 --threads=1)
  else
    TTQ=(--device=cuda --scan)
  fi
  "$PY" benchmarks/time_to_quality.py "${TTQ[@]}" --data="${CROSSTASK_DATA_DIR:-.gpu_data}" \
    --out="$OUT" "${@:2}" | tee -a "$OUT/log.txt"
  exit 0
fi

if [[ "$MODE" == "--infer" || "$MODE" == "--quick-infer" ]]; then
  # The eval-only job (gpu_infer.py) and HF's loop over the same examples at its batch.
  "$PY" benchmarks/gpu.py "${ROW_ARGS[@]}" --deadline_s="$((DEADLINE + 80))" --timeout_s="$TIMEOUT" \
    --out="$OUT/gpu.json" --rows "infer:$M:$DEC:scan" "hf-infer:$M:$DEC" \
    "hf-infer:$M:$DEC:compile" | tee -a "$OUT/log.txt"
  echo "results under $OUT"
  exit 0
fi

if [[ "$MODE" == "--unrolled" || "$MODE" == "--quick-unrolled" ]]; then
  # The row whose compile takes minutes on a GPU, given most of a 10-minute call.
  "$PY" benchmarks/gpu.py "${ROW_ARGS[@]}" --timeout_s=520 --out="$OUT/gpu.json" \
    --rows "train:$M:$ATT:dots_attention:$BIG:scan:unrollfull" | tee -a "$OUT/log.txt"
  echo "results under $OUT"
  exit 0
fi

if [[ "$MODE" == "--profiles" || "$MODE" == "--quick-profiles" ]]; then
  # Where the time goes, before changing anything: the train step and one greedy
  # decode, each with its raw trace and HLO kept (gzipped) under $OUT/raw, then the
  # rows those profiles are read against. Eight files come back at most.
  "$PY" benchmarks/profile_step.py "${PROFILE[@]}" --out="$OUT/profile_train.json" \
    --save_raw="$OUT/raw" | tee -a "$OUT/log.txt" || echo "train profile failed (above)"
  "$PY" benchmarks/profile_step.py "${DECODE_PROFILE[@]}" --out="$OUT/profile_decode.json" \
    --save_raw="$OUT/raw" | tee -a "$OUT/log.txt" || echo "decode profile failed (above)"
  "$PY" benchmarks/gpu.py "${ROW_ARGS[@]}" --deadline_s="${PROFILE_ROWS_DEADLINE:-150}" \
    --timeout_s="$TIMEOUT" --out="$OUT/gpu.json" --rows "train:$M:$ATT:dots_attention:$BIG:scan" \
    "decode:$M:1:$DEC:scan" "hf-train:$M:$B:adamw" "train:$BASE:$ATT:dots_attention:$BIG:scan" | tee -a "$OUT/log.txt"
  echo "results under $OUT"
  exit 0
fi

"$PY" benchmarks/profile_step.py "${PROFILE[@]}" --out="$OUT/profile_train.json" \
  --save_raw="$OUT/raw" | tee -a "$OUT/log.txt" || echo "train profile failed (above)"
"$PY" benchmarks/profile_step.py "${DECODE_PROFILE[@]}" --out="$OUT/profile_decode.json" \
  --save_raw="$OUT/raw" | tee -a "$OUT/log.txt" || echo "decode profile failed (above)"

ROWS=(  # most wanted first: the deadline leaves out the tail
  "train:$M:$ATT:dots_attention:$BIG:scan:unroll2" "hf-train:$M:$B:adamw" check
  "train:$M:$ATT:dots_attention:$BIG:scan:unroll2:fused_qkv"
  "decode:$M:1:$DEC:scan" "decode:$M:1:$DEC:scan:pallas_cross" "decode:$M:1:$DEC:scan:fused_qkv"
  "decode:$M:4:$DEC:scan" "decode:$M:4:$DEC:scan$BEAM_KERNEL" "decode:$M:4:$DEC:scan:fused_qkv"
  "decode:$M:4:$DEC:scan:beam_reorder"
  "decode:$M:1:$WIDE:scan"
  "train:$BASE:$ATT:dots_attention:$BIG:scan:unroll2" "train:$LARGE:$ATT:dots_attention:$MID:scan:unroll2"
  "train:$BASE:$ATT:dots_attention:$BIG:scan:unroll2:fused_qkv:fused_mlp"
  "train:$M:$ATT:dots_attention_norms:$MID:scan:unroll2"
  "train:$M:$ATT:dots_attention:$BIG:scan:unroll2:adamw"
  "hf-decode:$M:1:$DEC:compile" "hf-train:$M:$BIG:adamw:ckpt" "hf-decode:$M:1:$WIDE:compile"
  "hf-decode:$M:4:$DEC" "hf-train:$M:$B:adamw:compile" "hf-train:$M:$B"
  "hf-decode:$M:1:$DEC" "hf-decode:$M:1:$DEC:dynamic"
  # Measured already (runs 9-12), kept for their CPU twins' tests: the eval-only job
  # (--infer runs it alone), cuBLAS GEMMs, the ragged layout, one layer an iteration.
  "infer:$M:$DEC:scan" "hf-infer:$M:$DEC" "decode:$M:1:$DEC:scan:no_triton_gemm"
  "train:$M:$SEG:dots_attention:$BIG:scan:unroll2:graph_while"
  "train:$M:$ATT:dots_attention:$BIG:scan:unroll2:graph_while"
  "train:$M:$ATT:dots_attention:$BIG:scan" "train:$M:$SEG:dots_attention:$BIG:scan"
)
# gpu.py measures a row named twice once (--quick's sizes make some rows the same row).
"$PY" benchmarks/gpu.py "${ROW_ARGS[@]}" --deadline_s="$DEADLINE" --timeout_s="$TIMEOUT" \
  --out="$OUT/gpu.json" --rows "${ROWS[@]}" | tee -a "$OUT/log.txt"
echo "results under $OUT"
