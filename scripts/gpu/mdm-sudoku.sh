#!/usr/bin/env bash
# Sudoku MDM, the paper preset (6M parameters: 3 x 384, 12 heads, dropout 0.1) on one GPU in one
# 10-minute command: generate the data here, train in bf16 for TRAIN_SECONDS at the authors'
# effective batch (8 GPUs x 128 = 1,024), evaluate top-margin on 1,000 held-out easy puzzles
# (seed 2, as `icml25 reproduce mdm-sudoku`), and write result.json, log.txt, train_log.jsonl
# and the checkpoint (config.json, training.json, model.safetensors[.NN]) to $OUT.
# Rehearsed on a CPU by tests/nn/test_gpu_scripts.py (DEVICE=cpu STEPS=20 and small sizes).
source "$(dirname "$0")/common.sh"
N_TRAIN=${N_TRAIN:-12000}
N_TEST=${N_TEST:-1000}
BATCH=${BATCH:-1024}
TRAIN_SECONDS=${TRAIN_SECONDS:-300}

say "generating $N_TRAIN training and $N_TEST held-out easy puzzles"
icml25 mdm generate --n "$N_TRAIN" --seed 1000 --processes "$PROCS" -o "$WORK/train.npz"
icml25 mdm generate --n "$N_TEST" --seed 2 --processes "$PROCS" -o "$WORK/test.npz"

train() {  # train OUT_DIR STEPS [flags...]
  local dir=$1 steps=$2; shift 2
  icml25 mdm train --task sudoku --preset paper --data "$WORK/train.npz" --out "$dir" \
    --steps "$steps" --batch-size "$BATCH" --device "$DEVICE" --precision "$PRECISION" \
    --checkpoint-every 100000000 "${EXTRA[@]}" "$@"
}
train_in_budget
say "evaluating on $N_TEST held-out puzzles"
icml25 mdm evaluate --task sudoku --model "$WORK/run/model" --data "$WORK/test.npz" \
  --planners top_margin --device "$DEVICE" > "$WORK/eval.json"
cat "$WORK/eval.json"
summarize result --system mdm-sudoku --run "$WORK/run" --eval "$WORK/eval.json" --out "$OUT" \
  --device "$DEVICE" --tokens 81 --train-seconds "$train_seconds" --peak-size "$PEAK_SIZE"
say "done"
