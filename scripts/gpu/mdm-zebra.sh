#!/usr/bin/env bash
# Zebra MDM, the paper preset (19M parameters: 6 x 512, 8 heads, dropout 0.1; the paper gives
# only the count) on one GPU in one 10-minute command, with the shipped model's three-stage
# curriculum (docs/mdm.md): 3-house lookup puzzles, lookups of every size (both with every answer
# cell masked), then real puzzles with a quarter as many lookups mixed in (the MDM objective);
# each stage a warm restart of the one before, its share of the time (STAGE_SHARES, percent of
# the training time) fitted to steps after its start-up. The lookup puzzles (fast) are made
# first; the real and held-out puzzles (slow: a solver checks each clue set) are made in the
# background while the first two stages train. Evaluates top-margin on 1,000 held-out puzzles
# (seed 11, as `icml25 reproduce mdm-zebra`) and writes result.json, log.txt and train_log.jsonl
# to $OUT (the 19M checkpoint, 76 MB, stays in $WORK: too large to come back from a device
# machine). Only the last stage is compiled (the first two are too short to repay it).
# Whatever happens, result.json lands (scripts/gpu/common.sh). Rehearsed on a CPU by
# tests/nn/test_gpu_scripts.py.
EVAL_SECONDS=${EVAL_SECONDS:-45}
source "$(dirname "$0")/common.sh"
N_TRAIN=${N_TRAIN:-8000}
N_LOOKUP=${N_LOOKUP:-8000}
N_TEST=${N_TEST:-1000}
BATCH=${BATCH:-512}
STAGE_SHARES=(${STAGE_SHARES:-10 15 75})
RESULT_ARGS=(--system mdm-zebra --stage "$WORK/stage1" --stage "$WORK/stage2" --stage "$WORK/run"
             --eval "$WORK/eval.json" --zebra-data "$WORK/real.jsonl"
             --paper-examples 448000000
             --paper-note "300 epochs of ~1.5M puzzles at batch 128 (Kim et al. 2025)")

gen() {  # gen N SEED OUT [--lookup] [--houses 3]: puzzles in one process pool
  "$PY" - "$@" <<'PYEOF'
import sys
from icml25.mdm import zebra
n, seed, out, rest = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
houses = 3 if "--houses" in rest else None
procs = int(__import__("os").environ.get("PROCS", "1"))
zebra.save_puzzles(out, zebra.generate_dataset(n, seed, houses, None, processes=procs,
                                               lookup="--lookup" in rest))
print(f"wrote {n} puzzles to {out}", file=sys.stderr)
PYEOF
}
export PROCS
say "generating $N_LOOKUP + $((N_LOOKUP / 2)) lookup puzzles"
gen "$N_LOOKUP" 30 "$WORK/lookup.jsonl" --lookup
gen $((N_LOOKUP / 2)) 32 "$WORK/lookup-h3.jsonl" --lookup --houses 3
say "generating $N_TRAIN real, $((N_LOOKUP / 4)) mixed-in lookup and $N_TEST held-out puzzles" \
    "in the background"
( export PROCS=$((PROCS > 3 ? PROCS - 2 : 1))  # two cores stay with the training process
  gen "$N_TRAIN" 10 "$WORK/real.jsonl" && gen $((N_LOOKUP / 4)) 31 "$WORK/lookup-mix.jsonl" --lookup \
  && gen "$N_TEST" 11 "$WORK/test.jsonl" ) &
GEN=$!

stage() {  # stage NAME SECONDS [flags...]
  local name=$1 seconds=$2; shift 2
  step "$name" $((seconds + STARTUP_SECONDS + GRACE)) \
    "$PY" -m icml25 mdm train --task zebra --preset paper --cell-embeddings --out "$WORK/$name" \
    --batch-size "$BATCH" --checkpoint-every 2000 $(train_args "$seconds") "${EXTRA[@]}" "$@"
}
model_of() {  # the model a stage left (its final model, else its last checkpoint)
  if [ -f "$WORK/$1/model/config.json" ]; then echo "$WORK/$1/model"; else echo "$WORK/$1/checkpoint"; fi
}
init_from() {  # --init with the model a stage left; nothing (a fresh start) if it left none
  local m; m=$(model_of "$1")
  if [ -f "$m/config.json" ]; then echo --init "$m"; else say "no model from $1: fresh start" >&2; fi
}
# the three shares of the training time, fixed now (each stage's start-up reserved)
plan=$(( $(left) - EVAL_SECONDS - SUMMARY_SECONDS - 3 * STARTUP_SECONDS ))
s1=$((plan * STAGE_SHARES[0] / 100)); s2=$((plan * STAGE_SHARES[1] / 100))
say "training: stages of ${s1}s + ${s2}s + the rest (~$((plan - s1 - s2))s) x $BATCH"
STAGE_COMPILE=0 stage stage1 "$s1" --min-mask-rate 1 --data "$WORK/lookup-h3.jsonl" --warmup 100
STAGE_COMPILE=0 stage stage2 "$s2" --min-mask-rate 1 --data "$WORK/lookup.jsonl" \
  $(init_from stage1) --warmup 100
wait "$GEN" || say "puzzle generation failed"
STAGES_LEFT=1
last_stage() {
  stage run "$(budget 100)" --data "$WORK/real.jsonl" --data "$WORK/lookup-mix.jsonl" \
    $(init_from stage2) --warmup 200
}
last_stage
eager_retry run "$WORK/run" last_stage

say "evaluating on $N_TEST held-out puzzles"
step evaluate $(( $(left) - SUMMARY_SECONDS )) sh -c '"$0" -m icml25 mdm evaluate --task zebra \
  --model "$1" --data "$2" --planners top_margin --device "$3" > "$4"' \
  "$PY" "$(model_of run)" "$WORK/test.jsonl" "$DEVICE" "$WORK/eval.json"
cat "$WORK/eval.json" 2>/dev/null
