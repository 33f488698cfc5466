#!/usr/bin/env bash
# Sudoku MDM, the paper preset (6M parameters: 3 x 384, 12 heads, dropout 0.1) on one GPU in one
# 10-minute command: train in bf16 (compiled on CUDA) on the shipped data/mdm/sudoku-train-*.npz
# (20,000 easy puzzles, a random symmetry per board per step, built on the GPU) at the authors'
# effective batch (8 GPUs x 128 = 1,024), with the step count fitted to the time left once the
# evaluation is reserved; evaluate top-margin on 1,000 held-out easy puzzles (seed 2, as
# `icml25 reproduce mdm-sudoku`; generated in the background while training runs) and write
# result.json, log.txt, train_log.jsonl and the checkpoint (config.json, training.json,
# model.safetensors[.NN]) to $OUT. Whatever happens, result.json lands (scripts/gpu/common.sh).
# Rehearsed on a CPU by tests/nn/test_gpu_scripts.py (DEVICE=cpu STEPS=... and small sizes).
EVAL_SECONDS=${EVAL_SECONDS:-45}
source "$(dirname "$0")/common.sh"
N_TEST=${N_TEST:-1000}
BATCH=${BATCH:-1024}
TRAIN_DATA=(data/mdm/sudoku-train-*.npz)
RESULT_ARGS=(--system mdm-sudoku --stage "$WORK/run" --eval "$WORK/eval.json" --tokens 81
             --paper-examples 540000000
             --paper-note "300 epochs of 1.8M puzzles at batch 128 (Kim et al. 2025)")

say "generating $N_TEST held-out easy puzzles (seed 2) in the background"
icml25 mdm generate --n "$N_TEST" --seed 2 --processes $((PROCS > 3 ? PROCS - 2 : 1)) \
  -o "$WORK/test.npz" &
GEN=$!

data=(); for f in "${TRAIN_DATA[@]}"; do data+=(--data "$f"); done
train() {
  local seconds; seconds=$(budget 100)
  say "training for ${seconds}s on ${#TRAIN_DATA[@]} shipped files x $BATCH"
  step train $((seconds + STARTUP_SECONDS + GRACE)) \
    "$PY" -m icml25 mdm train --task sudoku --preset paper "${data[@]}" --out "$WORK/run" \
    --batch-size "$BATCH" --checkpoint-every 2000 $(train_args "$seconds") "${EXTRA[@]}"
}
train
eager_retry train "$WORK/run" train

wait "$GEN" || say "held-out generation failed"
say "evaluating on $N_TEST held-out puzzles"
model="$WORK/run/model"; [ -f "$model/config.json" ] || model="$WORK/run/checkpoint"
step evaluate $(( $(left) - SUMMARY_SECONDS )) sh -c '"$0" -m icml25 mdm evaluate --task sudoku \
  --model "$1" --data "$2" --planners top_margin --device "$3" > "$4"' \
  "$PY" "$model" "$WORK/test.npz" "$DEVICE" "$WORK/eval.json"
cat "$WORK/eval.json" 2>/dev/null
