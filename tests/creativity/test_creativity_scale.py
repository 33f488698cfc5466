"""`icml25 creativity`'s scale-out flags and device-aware generation."""

import json
import re

import numpy as np
import torch
from typer.testing import CliRunner

from icml25.creativity.cli import app
from icml25.creativity.tasks import generate, make_task
from icml25.creativity.training import (
    TrainSettings,
    evaluate_model,
    fresh_prompts,
    generate_answers,
    train_model,
)

runner = CliRunner()


def _plain(text: str) -> str:
    return re.sub(r"[\s│╭╮╰╯─]+", " ", re.sub(r"\x1b\[[0-9;]*m", "", text))


def test_train_and_evaluate_help_show_the_scale_options():
    out = _plain(runner.invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output)
    for flag in ("--device", "--precision", "--compile", "--no-compile", "--grad-accum",
                 "--preset", "--max-seconds"):
        assert flag in out, flag
    assert "--device" in _plain(runner.invoke(app, ["evaluate", "--help"],
                                              env={"COLUMNS": "200"}).output)


def test_paper_preset_is_gpt2_small_and_flags_override_it(tmp_path):
    data = tmp_path / "data"
    r = runner.invoke(app, ["data", "--task", "line", "-o", str(data), "--param", "n_train=40",
                            "--param", "n_test=8", "--seed-len", "3"])
    assert r.exit_code == 0, r.output
    run = tmp_path / "run"
    r = runner.invoke(app, ["train", "--task", "line", "--data", str(data), "-o", str(run),
                            "--preset", "paper", "--n-layers", "1", "--steps", "2",
                            "--batch-size", "2", "--precision", "bf16", "--grad-accum", "2",
                            "--device", "cpu"])
    assert r.exit_code == 0, r.output
    meta = json.loads((run / "model" / "config.json").read_text())
    m = meta["model"]
    assert (m["d_model"], m["n_heads"], m["n_layers"], m["dropout"]) == (768, 12, 1, 0.1)
    log = [json.loads(x) for x in (run / "train_log.jsonl").read_text().splitlines()]
    # the paper's lr (1e-4, constant after the warm-up, which is capped at the 2 steps here)
    assert log[-1]["step"] == 2 and log[-1]["lr"] == 1e-4
    r = runner.invoke(app, ["evaluate", str(run), "--n", "4", "--device", "cpu"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout[r.stdout.index("{"):])["n"] == 4
    r = runner.invoke(app, ["train", "--task", "line", "--data", str(data), "-o",
                            str(tmp_path / "bad"), "--precision", "half"],
                      env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "precision must be one of" in _plain(r.output)


def test_generation_on_a_named_device_matches_the_models_own():
    task = make_task("line", 0, n_train=60, n_test=8)
    data = generate(task, seed_len=3)
    for method in ("ntp", "diffusion"):
        run = train_model(task, data.train, TrainSettings(
            method=method, steps=3, d_model=16, n_layers=1, n_heads=2, batch_size=8,
            device="cpu", precision="bf16"))
        prompts = fresh_prompts(run, 6, np.random.default_rng(0))
        here = generate_answers(run, prompts, temperature=1.0, device="cpu", batch_size=4,
                                generator=torch.Generator().manual_seed(1))
        there = generate_answers(run, prompts, temperature=1.0, batch_size=4,
                                 generator=torch.Generator().manual_seed(1))
        assert here == there and len(here) == 6
        assert evaluate_model(run, n=6, device="cpu")["n"] == 6
