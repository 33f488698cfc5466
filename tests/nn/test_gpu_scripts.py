"""CPU rehearsals of the prepared GPU scripts (scripts/gpu/*.sh): each runs end to end with
DEVICE=cpu, 20 steps, a shrunken model and a few puzzles, and must leave a result record, its
log and the checkpoint in $OUT as it would on the GPU."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
SMALL = {"DEVICE": "cpu", "PRECISION": "bf16", "STEPS": "20", "BATCH": "4", "PROCS": "1",
         "PEAK_SIZE": "256", "EXTRA_TRAIN_ARGS": "--d-model 32 --n-heads 2 --n-layers 1"}


def _rehearse(script: str, tmp_path: Path, steps: int = 20, **env) -> dict:
    out = tmp_path / "out"
    run = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu" / script)], capture_output=True, text=True,
        timeout=600, env={**os.environ, **SMALL, **env, "OUT": str(out),
                          "WORK": str(tmp_path / "work"), "PYTHON": sys.executable})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    record = json.loads((out / "result.json").read_text())
    assert record["steps"] == steps and record["device"] == "cpu"
    assert record["examples_per_s_median"] > 0 and 0 < record["utilisation"] < 1
    assert record["bf16_matmul_peak_flops"] > record["achieved_flops"] > 0
    assert "done" in (out / "log.txt").read_text()
    rows = (out / "train_log.jsonl").read_text().splitlines()
    assert json.loads(rows[-1])["step"] == steps
    from icml25.nn import Transformer

    model = Transformer.load(out)  # the checkpoint came back whole and loads on a CPU
    assert model.cfg.d_model == 32 and model.cfg.n_layers == 1 and model.cfg.n_heads == 2
    assert len(list(out.iterdir())) <= 8  # what a device machine sends back
    return record


def test_mdm_sudoku_script_rehearsal(tmp_path):
    record = _rehearse("mdm-sudoku.sh", tmp_path, N_TRAIN="12", N_TEST="8")
    assert record["eval"]["top_margin"]["n"] == 8 and record["tokens_per_example"] == 81
    card = json.loads((tmp_path / "out" / "training.json").read_text())
    assert card["preset"] == "paper" and card["precision"] == "bf16"
    assert json.loads((tmp_path / "out" / "config.json").read_text())["model"]["dropout"] == 0.1


@pytest.mark.slow  # ~30 s on 2 busy cores: 12 commands, each starting Python and torch
def test_mdm_zebra_script_rehearsal(tmp_path):
    # STEPS=20 is split 2 + 3 + 15 over the curriculum's stages; the record is the last one's
    record = _rehearse("mdm-zebra.sh", tmp_path, steps=15, N_TRAIN="12", N_LOOKUP="8",
                       N_TEST="6")
    assert record["eval"]["top_margin"]["n"] == 6
    assert 36 < record["tokens_per_example"] < 36 + 220
    # the three curriculum stages ran, each a warm restart of the one before
    for stage in ("stage1", "stage2", "run"):
        assert (tmp_path / "work" / stage / "model" / "model.safetensors").exists()


def test_creativity_line_script_rehearsal(tmp_path):
    record = _rehearse("creativity-line.sh", tmp_path, N_TRAIN="40", N_TEST="8")
    assert record["eval"]["n"] == 8 and record["eval"]["task"] == "line"
    assert record["eval"]["seed_len"] == 10


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
    assert summarize.zebra_tokens  # used by mdm-zebra.sh


@pytest.mark.parametrize("rate, batch, seconds, steps",
                         [(1000.0, 100, 60, 540), (1.0, 100, 1, 100)])
def test_steps_fit_the_budget(rate, batch, seconds, steps, capsys):
    summarize = _summarize()

    class Args:
        pass

    args = Args()
    args.rate, args.batch, args.seconds, args.minimum = rate, batch, seconds, 100
    summarize.cmd_steps(args)
    assert int(capsys.readouterr().out) == steps
