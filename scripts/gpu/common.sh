# Shared by scripts/gpu/*.sh (sourced): settings from the environment, the log, the helpers.
#
#   OUT            where the result, log and checkpoint go (the device machine's $OUT)
#   WORK           where data and the full run folder go (default: a folder under /tmp)
#   DEVICE         cuda (default) | cpu | cuda:N ...      PRECISION  bf16 (default) | fp32 | fp16
#   TRAIN_SECONDS  training budget; STEPS, if set, replaces the calibrated step count
#   N_TRAIN N_TEST BATCH PROCS   data sizes, per-step batch, generator processes
#   EXTRA_TRAIN_ARGS             more flags for the train command (they override the preset)
#   PEAK_SIZE      side of the bf16 matmul that measures the peak (8192; smaller for a CPU)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 ICML25_NO_PROGRESS=1
OUT=${OUT:-runs/gpu-out}
WORK=${WORK:-/tmp/icml25-gpu-$$}
DEVICE=${DEVICE:-cuda}
PRECISION=${PRECISION:-bf16}
PROCS=${PROCS:-$(nproc)}
PEAK_SIZE=${PEAK_SIZE:-8192}
EXTRA=(${EXTRA_TRAIN_ARGS:-})
mkdir -p "$OUT" "$WORK"
exec > >(tee "$OUT/log.txt") 2>&1
icml25() { "$PY" -m icml25 "$@"; }
summarize() { "$PY" scripts/gpu/summarize.py "$@"; }
say() { echo "[$(date +%H:%M:%S) +${SECONDS}s] $*"; }
say "device $DEVICE, precision $PRECISION, work $WORK, out $OUT, $PROCS processes"
if [ "${DEVICE%%:*}" = cuda ]; then nvidia-smi --query-gpu=name,memory.total --format=csv || true; fi

# fit_steps NAME BATCH SECONDS CMD...: STEPS if set; else run CMD (a short calibration that
# writes $WORK/NAME) and print the steps of BATCH that fit SECONDS at its rate.
fit_steps() {
  local name=$1 batch=$2 seconds=$3; shift 3
  if [ -n "${STEPS:-}" ]; then echo "$STEPS"; return; fi
  "$@" >&2
  summarize steps "$(summarize rate "$WORK/$name")" "$batch" "$seconds"
}

# train_in_budget: a 200-step calibration of `train` (the caller's function), then one run of
# the steps that fit $TRAIN_SECONDS into $WORK/run; sets $train_seconds (wall time of the run).
train_in_budget() {
  say "calibrating"
  local steps
  steps=$(fit_steps calib "$BATCH" "$TRAIN_SECONDS" train "$WORK/calib" 200 --warmup 20)
  say "training $steps steps x $BATCH"
  local start=$SECONDS
  train "$WORK/run" "$steps" --max-seconds "$TRAIN_SECONDS"
  train_seconds=$((SECONDS - start))
}
