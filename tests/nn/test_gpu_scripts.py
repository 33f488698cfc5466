"""CPU rehearsals of the prepared GPU scripts (scripts/gpu/*.sh): each runs end to end with
DEVICE=cpu, a shrunken model and a few puzzles, and must leave a result record, its log and (when
it fits) the checkpoint in $OUT as it would on the GPU, on each of the paths that can end a run:
a fixed step count (Zebra), the step count fitted to a time budget (creativity), the trainer's
time guard (Sudoku), and a SIGTERM to the whole script."""

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
# Every step gets minutes before a kill: a busy machine takes long to start Python and torch.
SMALL = {"DEVICE": "cpu", "PRECISION": "bf16", "BATCH": "4", "PROCS": "1", "PEAK_SIZE": "256",
         "STARTUP_SECONDS": "0", "SUMMARY_SECONDS": "300", "TOTAL_SECONDS": "1500",
         "GRACE": "600", "EXTRA_TRAIN_ARGS": "--d-model 32 --n-heads 2 --n-layers 1"}
# A small training budget (~4 s) whatever the machine's load: most of the total is reserved for
# the evaluation and the record, and `timeout` waits long past a stage's budget (only the
# trainer ends it).
BUDGET = {"TOTAL_SECONDS": "1175", "EVAL_SECONDS": "870"}


def _start(script: str, tmp_path: Path, **env) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / "out"
    proc = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "gpu" / script)], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        env={**os.environ, **SMALL, **env, "OUT": str(out), "WORK": str(tmp_path / "work"),
             "PYTHON": sys.executable})
    return proc, out


def _check_record(out: Path) -> dict:
    """What every result record holds, however the run ended."""
    record = json.loads((out / "result.json").read_text())
    assert record["device"] == "cpu" and record["device_name"] == "cpu"
    for key in ("examples_per_s", "achieved_flops", "bf16_matmul_peak_flops", "utilisation"):
        assert math.isfinite(record[key]) and record[key] > 0, key  # no ratio of timings
    assert record["examples_seen"] > 0 and record["paper_examples"] > record["examples_seen"]
    assert record["targets"]["utilisation"]["target"] == 0.4
    assert "done" in (out / "log.txt").read_text()
    assert len(list(out.iterdir())) <= 8  # what a device machine sends back
    return record


def _rehearse(script: str, tmp_path: Path, failing: tuple[str, ...] = (), **env) -> dict:
    proc, out = _start(script, tmp_path, **env)
    log, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, log[-4000:]
    record = _check_record(out)
    assert record["status"] == "exit 0" and record["errors"] == [], record["errors"]
    exits = [s["exit"] != "0" for s in record["script_steps"]]
    assert [s["name"] for s, bad in zip(record["script_steps"], exits, strict=True)
            if bad] == list(failing), record["script_steps"]
    rows = (out / "train_log.jsonl").read_text().splitlines()
    assert json.loads(rows[-1])["step"] == record["stages"][-1]["steps"]
    return record


def test_mdm_sudoku_script_stopped_by_its_time_guard_still_evaluates(tmp_path):
    # a step count it cannot reach: the trainer's --max-seconds guard ends training. And a
    # compiled first try that fails (here: a mode torch does not have) is retried eagerly.
    record = _rehearse("mdm-sudoku.sh", tmp_path, failing=("train",), STEPS="1000000",
                       N_TEST="8", COMPILE="1", COMPILE_MODE="no-such-mode", **BUDGET)
    assert [s["name"] for s in record["script_steps"]] == ["train", "train", "evaluate"]
    assert "retrying without compilation" in (tmp_path / "out" / "log.txt").read_text()
    (stage,) = record["stages"]
    assert stage["stopped_early"] and 0 < stage["steps"] < 1_000_000
    assert record["stopped_early"] and record["examples_seen"] == 4 * stage["steps"]
    assert record["eval"]["top_margin"]["n"] == 8 and record["tokens_per_example"] == 81
    assert record["targets"]["top_margin.solved"]["target"] == 0.895
    out = tmp_path / "out"
    card = json.loads((out / "training.json").read_text())
    assert card["preset"] == "paper" and card["precision"] == "bf16" and card["stopped_early"]
    assert json.loads((out / "config.json").read_text())["model"]["dropout"] == 0.1
    from icml25.nn import Transformer

    model = Transformer.load(out)  # the checkpoint came back whole and loads on a CPU
    assert model.cfg.d_model == 32 and model.cfg.n_layers == 1 and model.cfg.n_heads == 2
    assert card["base_puzzles"] == 20_000  # the shipped data/mdm/sudoku-train-*.npz


def test_mdm_zebra_script_rehearsal(tmp_path):
    # STEPS=3 per stage of the curriculum; the record is the last stage's, the examples all
    record = _rehearse("mdm-zebra.sh", tmp_path, STEPS="3", N_TRAIN="12", N_LOOKUP="8",
                       N_TEST="6")
    assert [s["name"] for s in record["stages"]] == ["stage1", "stage2", "run"]
    assert [s["steps"] for s in record["stages"]] == [3, 3, 3]
    assert record["examples_seen"] == 3 * 3 * 4 and not record["stopped_early"]
    assert record["eval"]["top_margin"]["n"] == 6
    assert 36 < record["tokens_per_example"] < 36 + 220
    # each stage a warm restart of the one before (its log starts from its init's loss level)
    work = tmp_path / "work"
    for stage in ("stage1", "stage2", "run"):
        assert (work / stage / "model" / "model.safetensors").exists()
    card = json.loads((work / "run" / "model" / "training.json").read_text())
    assert "--init" in card["command"] and "stage2" in card["command"]


def test_creativity_line_script_fits_its_stages_to_the_budget(tmp_path):
    # no STEPS: each stage's step count is fitted to its share of the time after its start-up
    # and a calibration window (steps 11-30); the budget (minutes) is far more than 32 steps
    # take, so the fit keeps MAX_STEPS whatever the machine's load
    record = _rehearse("creativity-line.sh", tmp_path, HEAD_STEPS="2", N_TRAIN="40", N_TEST="8",
                       MAX_STEPS="32", SIZE="--d-model 32 --n-heads 2 --n-layers 1",
                       **{**BUDGET, "EVAL_SECONDS": "100"})
    lookup, head, run = record["stages"]
    assert (lookup["name"], head["name"], run["name"]) == ("lookup", "head", "run")
    assert head["steps"] == 2 and head["budget"] is None  # LP-FT's head phase: fixed steps
    for stage in (lookup, run):
        fit = stage["budget"]
        assert fit is not None and fit["at_step"] == 30 and fit["configured_steps"] == 32
        assert fit["startup_seconds"] >= 0 and fit["steps_per_s"] > 0
        assert fit["budget_seconds"] > 60 and stage["steps"] == fit["steps"] == 32
        assert not stage["stopped_early"]
    assert record["extra_rows_per_step"] == 32  # replay
    assert record["targets"]["coherence"]["target"] == 0.9
    assert record["eval"]["n"] == 8 and record["eval"]["task"] == "line"
    assert record["eval"]["seed_len"] == 10
    card = json.loads((tmp_path / "work" / "run" / "model" / "config.json").read_text())
    assert card["model"]["token_shift"] and card["model"]["layer_shift"]
    assert card["model"]["dropout"] == 0.1


def test_a_script_terminated_mid_training_still_writes_what_it_reached(tmp_path):
    proc, out = _start("mdm-sudoku.sh", tmp_path, STEPS="1000000", N_TEST="8", GUARD="0",
                       **{**BUDGET, "EXTRA_TRAIN_ARGS": SMALL["EXTRA_TRAIN_ARGS"]
                          + " --checkpoint-every 20"})
    first = tmp_path / "work" / "run" / "checkpoint" / "trainer_state.pt"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not first.exists() and proc.poll() is None:
        time.sleep(0.5)  # until training is under way (its first checkpoint, step 20)
    proc.send_signal(signal.SIGTERM)  # as `timeout` would, to the whole script
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 143, text[-4000:]
    record = _check_record(out)
    assert record["status"] == "terminated by signal"
    (stage,) = record["stages"]
    assert stage["steps"] >= 20 and stage["stopped_early"]  # the trainer stopped and saved
    assert record["eval"] is None and any("evaluation" in e for e in record["errors"])


def _summarize():
    spec = importlib.util.spec_from_file_location("summarize",
                                                  ROOT / "scripts" / "gpu" / "summarize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_checkpoint_too_big_for_one_file_comes_back_in_parts(tmp_path, monkeypatch):
    import torch

    from icml25.nn import Transformer, TransformerConfig

    summarize = _summarize()
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=10, seq_len=8, d_model=32, n_layers=2))
    model.save(tmp_path / "model")
    size = (tmp_path / "model" / "model.safetensors").stat().st_size
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(summarize, "PART_BYTES", size // 2 + 1)
    info = summarize.pack_checkpoint(tmp_path / "model", out)
    assert info == {"checkpoint_bytes": size, "checkpoint_parts": 2}
    parts = sorted(out.glob("model.safetensors.*"))
    (out / "model.safetensors").write_bytes(b"".join(p.read_bytes() for p in parts))
    back = Transformer.load(out)
    assert all(torch.equal(v, back.state_dict()[k]) for k, v in model.state_dict().items())
    monkeypatch.setattr(summarize, "PART_BYTES", size // 3)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    info = summarize.pack_checkpoint(tmp_path / "model", fresh)
    assert info["checkpoint_parts"] == 0 and "too large" in info["checkpoint_note"]
    assert not list(fresh.glob("model.safetensors*"))


def test_the_record_is_written_when_nothing_ran(tmp_path):
    # a script that failed before any training: the record says so instead of missing
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, str(ROOT / "scripts/gpu/summarize.py"), "result",
                          "--out", str(out), "--system", "mdm-sudoku", "--device", "cpu",
                          "--stage", str(tmp_path / "never"), "--eval", str(tmp_path / "no.json"),
                          "--status", "exit 1", "--peak-size", "64", "--steps-done", "train 1 3"],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads((out / "result.json").read_text())
    assert record["status"] == "exit 1" and record["script_steps"] == [
        {"name": "train", "exit": "1", "seconds": "3"}]
    assert record["examples_seen"] == 0 and record["eval"] is None
    assert any(e.startswith("evaluation") for e in record["errors"])
    assert any(e.startswith("throughput") for e in record["errors"])
    assert record["targets"]["top_margin.solved"]["met"] is False


@pytest.mark.parametrize("script", ["mdm-sudoku.sh", "mdm-zebra.sh", "creativity-line.sh"])
def test_every_script_passes_bash_syntax_and_reserves_its_evaluation(script):
    text = (ROOT / "scripts" / "gpu" / script).read_text()
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu" / script)]).returncode == 0
    assert "EVAL_SECONDS=" in text and "RESULT_ARGS=" in text and "--paper-examples" in text
