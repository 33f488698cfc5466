#!/usr/bin/env bash
# Zebra MDM, the paper preset (19M parameters: 6 x 512, 8 heads, dropout 0.1; the paper gives
# only the count) on one GPU in one 10-minute command, with the shipped model's three-stage
# curriculum (docs/mdm.md): 3-house lookup puzzles, lookups of every size (both with every answer
# cell masked), then real puzzles with a quarter as many lookups mixed in (the MDM objective);
# each stage a warm restart of the one before. Generates the data here, trains in bf16 for
# TRAIN_SECONDS in all, evaluates top-margin on 1,000 held-out puzzles (seed 11, as
# `icml25 reproduce mdm-zebra`) and writes result.json, log.txt and train_log.jsonl to $OUT (the
# 19M checkpoint, 76 MB, stays in $WORK: too large to come back from a device machine).
# Rehearsed on a CPU by tests/nn/test_gpu_scripts.py.
source "$(dirname "$0")/common.sh"
N_TRAIN=${N_TRAIN:-8000}
N_LOOKUP=${N_LOOKUP:-8000}
N_TEST=${N_TEST:-1000}
BATCH=${BATCH:-512}
TRAIN_SECONDS=${TRAIN_SECONDS:-300}

say "generating $N_TRAIN real, $N_LOOKUP + $((N_LOOKUP / 2)) + $((N_LOOKUP / 4)) lookup and $N_TEST held-out puzzles"
gen() { icml25 mdm generate --task zebra --processes "$PROCS" "$@"; }
gen --n "$N_TRAIN" --seed 10 -o "$WORK/real.jsonl"
gen --n "$N_LOOKUP" --seed 30 --lookup -o "$WORK/lookup.jsonl"
gen --n $((N_LOOKUP / 2)) --seed 32 --lookup --houses 3 -o "$WORK/lookup-h3.jsonl"
gen --n $((N_LOOKUP / 4)) --seed 31 --lookup -o "$WORK/lookup-mix.jsonl"
gen --n "$N_TEST" --seed 11 -o "$WORK/test.jsonl"

train() {  # train OUT_DIR STEPS [flags...]
  local dir=$1 steps=$2; shift 2
  icml25 mdm train --task zebra --preset paper --cell-embeddings --out "$dir" --steps "$steps" \
    --batch-size "$BATCH" --device "$DEVICE" --precision "$PRECISION" \
    --checkpoint-every 100000000 "${EXTRA[@]}" "$@"
}
real=(--data "$WORK/real.jsonl" --data "$WORK/lookup-mix.jsonl")
say "calibrating on the real puzzles"
steps=$(fit_steps calib "$BATCH" "$TRAIN_SECONDS" train "$WORK/calib" 100 --warmup 10 "${real[@]}")
s1=$((steps / 10)); s2=$((steps * 15 / 100)); s3=$((steps - s1 - s2))
say "training $s1 + $s2 + $s3 steps x $BATCH"
start=$SECONDS
train "$WORK/stage1" "$s1" --warmup $((s1 / 10)) --min-mask-rate 1 --data "$WORK/lookup-h3.jsonl" \
  --max-seconds $((TRAIN_SECONDS * 15 / 100))
train "$WORK/stage2" "$s2" --warmup $((s2 / 10)) --min-mask-rate 1 --data "$WORK/lookup.jsonl" \
  --init "$WORK/stage1/model" --max-seconds $((TRAIN_SECONDS * 20 / 100))
train "$WORK/run" "$s3" --warmup $((s3 / 20)) "${real[@]}" --init "$WORK/stage2/model" \
  --max-seconds $((TRAIN_SECONDS - (SECONDS - start)))
train_seconds=$((SECONDS - start))
say "evaluating on $N_TEST held-out puzzles"
icml25 mdm evaluate --task zebra --model "$WORK/run/model" --data "$WORK/test.jsonl" \
  --planners top_margin --device "$DEVICE" > "$WORK/eval.json"
cat "$WORK/eval.json"
summarize result --system mdm-zebra --run "$WORK/run" --eval "$WORK/eval.json" --out "$OUT" \
  --device "$DEVICE" --zebra-data "$WORK/real.jsonl" --train-seconds "$train_seconds" \
  --peak-size "$PEAK_SIZE"
say "done"
