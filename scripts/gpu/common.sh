# Shared by scripts/gpu/*.sh (sourced): settings from the environment, the log, the time plan,
# and the guarantee that a result lands: whatever happens (a failed step, the time guard, a
# SIGTERM from `timeout`), $OUT/result.json says what was reached.
#
#   OUT            where the result, log and checkpoint go (the device machine's $OUT)
#   WORK           where data and the full run folders go (default: a folder under /tmp)
#   DEVICE         cuda (default) | cpu | cuda:N ...      PRECISION  bf16 (default) | fp32 | fp16
#   TOTAL_SECONDS  hard wall-clock budget of the whole script (540: a 600 s command, 60 s spare)
#   EVAL_SECONDS   reserved first for the evaluation; SUMMARY_SECONDS for the result record
#   STARTUP_SECONDS  a training process's start before its clock runs (Python, CUDA, data)
#   STEPS          if set, a fixed step count per stage (no budget fit; the rehearsals)
#   MAX_STEPS      if set (and STEPS not), the most steps a budget fit may choose
#   GUARD          1 (default): the trainer's own --max-seconds guard (5% + 5 s past the stage's
#                  budget); 0: only the kill by timeout
#   GRACE          seconds past a stage's budget before `timeout` sends SIGTERM (the trainer then
#                  stops at its next step, saves, and the script goes on to the evaluation)
#   COMPILE        1 | 0: torch.compile (default: 1 on CUDA, 0 elsewhere; a script may narrow it)
#   COMPILE_MODE   default | reduce-overhead | max-autotune | max-autotune-no-cudagraphs
#   N_TEST BATCH PROCS   held-out size, per-step batch, generator processes
#   EXTRA_TRAIN_ARGS     more flags for every train command (they override the preset)
#   PEAK_SIZE      side of the bf16 matmul that measures the peak (8192; smaller for a CPU)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 ICML25_NO_PROGRESS=1
OUT=${OUT:-runs/gpu-out}
WORK=${WORK:-/tmp/icml25-gpu-$$}
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-bf16}
PROCS=${PROCS:-$(nproc)}
PEAK_SIZE=${PEAK_SIZE:-8192}
TOTAL_SECONDS=${TOTAL_SECONDS:-540}
SUMMARY_SECONDS=${SUMMARY_SECONDS:-25}
STARTUP_SECONDS=${STARTUP_SECONDS:-15}
GUARD=${GUARD:-1}
GRACE=${GRACE:-20}
COMPILE_MODE=${COMPILE_MODE:-default}
if [ "${DEVICE%%:*}" = cuda ]; then COMPILE=${COMPILE:-1}; else COMPILE=${COMPILE:-0}; fi
EXTRA=(${EXTRA_TRAIN_ARGS:-})
mkdir -p "$OUT" "$WORK"
exec > >(tee "$OUT/log.txt") 2>&1
STEPS_DONE=()     # "name rc seconds" of every step, for the record
RESULT_ARGS=()    # the script's own arguments of `summarize.py result`
icml25() { "$PY" -m icml25 "$@"; }
say() { echo "[$(date +%H:%M:%S) +${SECONDS}s] $*"; }
left() { echo $((TOTAL_SECONDS - SECONDS)); }
say "device $DEVICE, precision $PRECISION, compile $COMPILE ($COMPILE_MODE), work $WORK," \
    "out $OUT, $PROCS processes, total budget ${TOTAL_SECONDS}s"
if [ "${DEVICE%%:*}" = cuda ]; then nvidia-smi --query-gpu=name,memory.total --format=csv || true; fi

# step NAME SECONDS CMD...: run CMD for at most SECONDS (then SIGTERM, and SIGKILL 15 s later),
# in the background so that a SIGTERM to this script is handled at once; record its exit code.
# Never stops the script: what comes after decides what to do without it.
CHILD=
step() {
  local name=$1 limit=$2 start=$SECONDS rc; shift 2
  if [ "$limit" -lt 1 ]; then limit=1; fi
  timeout --signal=TERM --kill-after=15 "$limit" "$@" &
  CHILD=$!
  wait "$CHILD"; rc=$?
  CHILD=
  STEPS_DONE+=("$name $rc $((SECONDS - start))")
  say "$name: exit $rc after $((SECONDS - start))s"
  return "$rc"
}

# budget SHARE: the seconds a training stage may take: SHARE percent of what is left once the
# evaluation, the record and the other stages' start-ups are reserved (STAGES_LEFT of them).
budget() {
  local share=$1 stages=${STAGES_LEFT:-1}
  local avail=$(( $(left) - EVAL_SECONDS - SUMMARY_SECONDS - stages * STARTUP_SECONDS ))
  local b=$(( avail * share / 100 ))
  if [ "$b" -lt 1 ]; then b=1; fi
  echo "$b"
}

# train_args SECONDS: the time flags of one training stage (a fixed STEPS, or a budget fit) and
# the device flags.
train_args() {
  local seconds=$1 args=(--device "$DEVICE" --precision "$PRECISION")
  if [ -n "${STEPS:-}" ]; then args+=(--steps "$STEPS"); else args+=(--budget-seconds "$seconds"); fi
  if [ -z "${STEPS:-}" ] && [ -n "${MAX_STEPS:-}" ]; then args+=(--steps "$MAX_STEPS"); fi
  if [ "$GUARD" = 1 ]; then args+=(--max-seconds $((seconds + seconds / 20 + 5))); fi
  if [ "${STAGE_COMPILE:-$COMPILE}" = 1 ]; then args+=(--compile --compile-mode "$COMPILE_MODE"); fi
  echo "${args[@]}"
}

# eager_retry NAME RUN_DIR CMD...: after a compiled stage that failed without leaving a model
# (a compiler error on the first try must not cost the run), run CMD again without compiling,
# for what is left of the time (resuming from RUN_DIR's checkpoint if it has one). CMD is the
# stage's function, called with STAGE_COMPILE=0.
eager_retry() {
  local name=$1 dir=$2; shift 2
  if [ -f "$dir/model/config.json" ] || [ "${STAGE_COMPILE:-$COMPILE}" != 1 ]; then return 0; fi
  say "$name left no model: retrying without compilation"
  STAGE_COMPILE=0 "$@"
}

# finish STATUS: write $OUT/result.json (once) from whatever the run folders hold.
FINISHED=0
finish() {
  local status=$1
  if [ "$FINISHED" = 1 ]; then return; fi
  FINISHED=1
  if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null; fi
  local steps_json
  steps_json=$(printf '%s\n' "${STEPS_DONE[@]:-}")
  timeout --signal=KILL "$SUMMARY_SECONDS" "$PY" scripts/gpu/summarize.py result \
    --out "$OUT" --device "$DEVICE" --peak-size "$PEAK_SIZE" --status "$status" \
    --script-seconds "$SECONDS" --total-seconds "$TOTAL_SECONDS" --steps-done "$steps_json" \
    "${RESULT_ARGS[@]}" || echo "{\"status\": \"$status\", \"error\": \"summarize failed\"}" \
    > "$OUT/result.json"
  say "done ($status)"
}
trap 'finish "terminated by signal"; exit 143' TERM INT
trap 'finish "exit $?"' EXIT
