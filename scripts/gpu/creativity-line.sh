#!/usr/bin/env bash
# Line construction (Nagarajan et al.), the paper preset (GPT-2 small, 86M non-embedding: 12 x 768,
# 12 heads, dropout 0.1; batch 64, lr 1e-4 constant after 2,000 warm-up steps), NTP with
# seed-conditioning (10-character seeds), on one GPU in one 10-minute command: generate the
# paper's 10,000 training lines here, train from scratch in bf16 for TRAIN_SECONDS (the paper:
# 40,000 steps from pretrained GPT-2, which cannot be downloaded here), score 1,024 greedy
# generations on fresh seeds (creativity, coherence, memorization), and write result.json,
# log.txt and train_log.jsonl to $OUT (the 86M checkpoint, 344 MB, stays in $WORK).
# Rehearsed on a CPU by tests/nn/test_gpu_scripts.py.
source "$(dirname "$0")/common.sh"
N_TRAIN=${N_TRAIN:-10000}
N_TEST=${N_TEST:-1024}
BATCH=${BATCH:-64}
TRAIN_SECONDS=${TRAIN_SECONDS:-360}
METHOD=${METHOD:-ntp}

say "generating $N_TRAIN training lines"
icml25 creativity data --task line -o "$WORK/data" --seed-len 10 --param "n_train=$N_TRAIN" \
  --param "n_test=$N_TEST"
train() {  # train OUT_DIR STEPS [flags...]
  local dir=$1 steps=$2; shift 2
  icml25 creativity train --task line --method "$METHOD" --data "$WORK/data" -o "$dir" \
    --preset paper --steps "$steps" --batch-size "$BATCH" --device "$DEVICE" \
    --precision "$PRECISION" "${EXTRA[@]}" "$@"
}
train_in_budget
say "scoring $N_TEST greedy generations on fresh seeds"
icml25 creativity evaluate "$WORK/run" --n "$N_TEST" --device "$DEVICE" > "$WORK/eval.json"
cat "$WORK/eval.json"
summarize result --system creativity-line --run "$WORK/run" --eval "$WORK/eval.json" \
  --out "$OUT" --device "$DEVICE" --train-seconds "$train_seconds" --peak-size "$PEAK_SIZE"
say "done"
