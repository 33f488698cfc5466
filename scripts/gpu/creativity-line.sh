#!/usr/bin/env bash
# Line construction (Nagarajan et al.) at the paper preset's size (GPT-2 small, 86M
# non-embedding: 12 x 768, 12 heads, dropout 0.1) with the recipe that made the CPU models
# coherent (docs/creativity.md, "Coherent models"): token shift and a per-block shift; the
# chain-start lookup stage as the pretrained start (our stand-in for pretrained GPT-2); LP-FT
# (HEAD_STEPS steps of the output head alone) then fine-tuning on the paper's NTP objective with
# its optimiser (batch 64, lr 1e-4 constant after 2,000 warm-up steps) and replay of the lookup
# (32 fresh answers a step). All in one 10-minute command on one GPU, bf16: the lookup stage gets
# LOOKUP_SHARE percent of the training time, the fine-tuning the rest, each fitted to steps after
# its start-up. Scores 1,024 greedy generations on fresh seeds (creativity, coherence,
# memorization) and writes result.json, log.txt and train_log.jsonl to $OUT (the 86M checkpoint,
# 344 MB, stays in $WORK). Not compiled by default (COMPILE=1 turns it on): each of the three
# phases would compile its own graph, ~1 minute apiece at this size, more than it would save at
# batch 64. Whatever happens, result.json lands (scripts/gpu/common.sh). Rehearsed on a CPU by
# tests/nn/test_gpu_scripts.py.
EVAL_SECONDS=${EVAL_SECONDS:-45}
COMPILE=${COMPILE:-0}
source "$(dirname "$0")/common.sh"
N_TRAIN=${N_TRAIN:-10000}
N_TEST=${N_TEST:-1024}
BATCH=${BATCH:-64}
HEAD_STEPS=${HEAD_STEPS:-1000}
LOOKUP_SHARE=${LOOKUP_SHARE:-35}
SIZE=(${SIZE:---d-model 768 --n-layers 12 --n-heads 12})  # the lookup stage's; the preset's
RESULT_ARGS=(--system creativity-line --stage "$WORK/lookup" --stage "$WORK/run/head"
             --stage "$WORK/run" --eval "$WORK/eval.json" --extra-rows 32
             --paper-examples 2560000
             --paper-note "40,000 fine-tuning steps at batch 64 from pretrained GPT-2 (Nagarajan et al. 2025)")

say "generating $N_TRAIN training lines"
icml25 creativity data --task line -o "$WORK/data" --seed-len 10 --param "n_train=$N_TRAIN" \
  --param "n_test=$N_TEST"

plan=$(( $(left) - EVAL_SECONDS - SUMMARY_SECONDS - 2 * STARTUP_SECONDS ))
s1=$((plan * LOOKUP_SHARE / 100))
say "lookup stage for ${s1}s, then fine-tuning for the rest (~$((plan - s1))s)"
step lookup $((s1 + STARTUP_SECONDS + GRACE)) \
  "$PY" -m icml25 creativity pretrain-lookup --task line -o "$WORK/lookup" --method ntp \
  "${SIZE[@]}" --token-shift --layer-shift --dropout 0.1 --lr 3e-4 --warmup 500 \
  --batch-size "$BATCH" --seed-len 10 --steps 100000 --eval-every 1000 $(train_args "$s1")
STAGES_LEFT=1
s2=$(budget 100)
init=(); [ -f "$WORK/lookup/model/config.json" ] && init=(--init-from "$WORK/lookup" \
  --head-only-steps "$HEAD_STEPS" --replay-weight 1)
step train $((s2 + STARTUP_SECONDS + GRACE)) \
  "$PY" -m icml25 creativity train --task line --method ntp --data "$WORK/data" -o "$WORK/run" \
  --preset paper "${SIZE[@]}" --batch-size "$BATCH" --token-shift --layer-shift "${init[@]}" \
  $(train_args "$s2") "${EXTRA[@]}"

say "scoring $N_TEST greedy generations on fresh seeds"
step evaluate $(( $(left) - SUMMARY_SECONDS )) sh -c '"$0" -m icml25 creativity evaluate "$1" \
  --n "$2" --device "$3" --json > "$4"' "$PY" "$WORK/run" "$N_TEST" "$DEVICE" "$WORK/eval.json"
cat "$WORK/eval.json" 2>/dev/null
