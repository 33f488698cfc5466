#!/usr/bin/env bash
# CollabLLM online DPO on a transformers model, one command on a lent GPU: optional SFT, then
# ROUNDS rounds of `icml25 collab train-online` (candidates, multiturn-aware reward with the
# rule-based user, DPO with TRL on LoRA r 32 / alpha 16), held-out success and interactivity
# before the first round and after each; result.json, log.txt, state.json and the last adapter
# come back in $OUT.
#
#   POLICY           hf:DIR (a transformers causal LM folder carried to the machine) | gemma-270m
#   TASKS            ask-or-guess-nl (default) | math-roots | ask-or-guess
#   ROUNDS TASKS_PER_ROUND EVAL_TASKS SFT_DEMOS WINDOW   the budget (defaults 3, 128, 300, 400, 2)
#   WHEELS           a folder of wheels installed first (--no-index) when packages are missing
#   REQUIRED         the Python modules checked before training (transformers trl peft datasets)
#
# The device image has transformers and peft but, as last seen, neither trl nor datasets: then
# this script says so, writes a result.json with status "missing-packages" and exits 3, unless
# WHEELS supplies them. Rehearsed on a CPU by tests/collab/test_collab_online_gpu_script.py
# (DEVICE=cpu, a tiny random Llama, 2 rounds of 4 tasks).
source "$(dirname "$0")/common.sh"
# This script writes its own result.json; whatever ends it, one lands (with the exit status).
trap - EXIT TERM INT
collab_finish() {
  local rc=$?
  if [ ! -s "$OUT/result.json" ]; then
    printf '{"system": "collab-online", "status": "exit %s"}\n' "$rc" > "$OUT/result.json"
  fi
  say "done (exit $rc)"
}
trap collab_finish EXIT
trap 'exit 143' TERM INT
POLICY=${POLICY:-gemma-270m}
TASKS=${TASKS:-ask-or-guess-nl}
ROUNDS=${ROUNDS:-3}
TASKS_PER_ROUND=${TASKS_PER_ROUND:-128}
EVAL_TASKS=${EVAL_TASKS:-300}
SFT_DEMOS=${SFT_DEMOS:-400}
WINDOW=${WINDOW:-2}
REQUIRED=${REQUIRED:-transformers trl peft datasets}

missing() { "$PY" - $REQUIRED <<'PY'
import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))
PY
}
gone=$(missing)
if [ -n "$gone" ] && [ -n "${WHEELS:-}" ]; then
  say "installing from $WHEELS: $gone missing"
  "$PY" -m pip install -q --no-index --no-deps --target "$WORK/site" "$WHEELS"/*.whl
  export PYTHONPATH="$PYTHONPATH:$WORK/site"
  gone=$(missing)
fi
if [ -n "$gone" ]; then
  say "cannot train: the Python modules '$gone' are missing on this machine"
  say "carry their wheels (see the device notes) and set WHEELS=folder, then run again"
  "$PY" - "$OUT/result.json" "$gone" "$DEVICE" <<'PY'
import json, sys
out, gone, device = sys.argv[1], sys.argv[2].split(), sys.argv[3]
json.dump({"system": "collab-online", "status": "missing-packages", "missing": gone,
           "device": device, "message": "train-online needs " + ", ".join(gone) +
           "; install them (or carry wheels and set WHEELS) and run the script again"},
          open(out, "w"), indent=1)
PY
  exit 3
fi

say "online DPO: $POLICY on $TASKS, $ROUNDS rounds x $TASKS_PER_ROUND tasks, w=$WINDOW"
start=$SECONDS
icml25 collab train-online --policy "$POLICY" --user rule --tasks "$TASKS" \
  --rounds "$ROUNDS" --tasks-per-round "$TASKS_PER_ROUND" --lora-r 32 --lora-alpha 16 \
  --out "$WORK/run" --resume --window "$WINDOW" --eval-tasks "$EVAL_TASKS" \
  --sft-demos "$SFT_DEMOS" --device "${DEVICE%%:*}" "${EXTRA[@]}" > "$WORK/printed.json" \
  || exit $?
seconds=$((SECONDS - start))
"$PY" - "$WORK/run" "$OUT" "$DEVICE" "$seconds" <<'PY'
import json, shutil, sys
from pathlib import Path
run, out, device, seconds = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
state = json.loads((run / "state.json").read_text())
last = sorted(run.glob("round-[0-9][0-9][0-9]"))[-1]
for name in ("adapter_model.safetensors", "adapter_config.json"):
    shutil.copy(last / "adapter" / name, out / name)
shutil.copy(run / "state.json", out / "state.json")
shutil.copy(run / "run.json", out / "run.json")
log = state["log"]
rec = {"system": "collab-online", "status": "ok", "device": device, "seconds": seconds,
       "settings": json.loads((run / "run.json").read_text()), "rounds": len(log),
       "baseline": state.get("baseline") and {k: state["baseline"][k]
                                              for k in ("n", "success", "interactivity")},
       "curve": [{"round": e["round"], "pairs": e["pairs"], "loss": e["loss"],
                  "seconds": e.get("seconds"), "eval": e.get("eval")} for e in log],
       "adapter": last.name}
(out / "result.json").write_text(json.dumps(rec, indent=1))
print(json.dumps({k: rec[k] for k in ("status", "rounds", "seconds", "baseline")}))
PY
