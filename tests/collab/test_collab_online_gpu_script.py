"""CPU rehearsal of scripts/gpu/collab-online.sh: a tiny random Llama, SFT on a few
demonstrations, one online round; and the clear stop when training packages are missing."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "gpu" / "collab-online.sh"


def _run(tmp_path, **env):
    out = tmp_path / "out"
    run = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "OUT": str(out), "WORK": str(tmp_path / "work"),
                              "PYTHON": sys.executable, "DEVICE": "cpu",
                              "OMP_NUM_THREADS": "1", **env})
    return run, out


def test_script_rehearsal_on_cpu(tmp_path):
    from icml25.collab.hf_online import save_tiny_policy

    tiny = save_tiny_policy(tmp_path / "tiny", hidden=16, layers=1)
    run, out = _run(tmp_path, POLICY=f"hf:{tiny}", ROUNDS="1", TASKS_PER_ROUND="4",
                    EVAL_TASKS="2", SFT_DEMOS="8",
                    EXTRA_TRAIN_ARGS="--max-tokens 8 --min-gap 0 --pool-size 20")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rec = json.loads((out / "result.json").read_text())
    assert rec["status"] == "ok" and rec["rounds"] == 1 and rec["device"] == "cpu"
    assert rec["settings"]["config"]["lora_r"] == 32 and rec["settings"]["sft_demos"] == 8
    assert rec["baseline"]["n"] == 2 and rec["curve"][0]["eval"]["n"] == 2
    assert set(rec["curve"][0]["seconds"]) == {"generate", "reward", "dpo"}
    assert (out / "adapter_model.safetensors").stat().st_size > 0
    assert "done" in (out / "log.txt").read_text()
    assert len(list(out.iterdir())) <= 8  # what a device machine sends back


def test_script_stops_clearly_without_training_packages(tmp_path):
    run, out = _run(tmp_path, REQUIRED="transformers no_such_module_for_training")
    assert run.returncode == 3
    rec = json.loads((out / "result.json").read_text())
    assert rec["status"] == "missing-packages"
    assert rec["missing"] == ["no_such_module_for_training"]
    assert "no_such_module_for_training" in (out / "log.txt").read_text()
