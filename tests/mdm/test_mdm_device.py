"""Scale-out contract of the mdm room: a checkpoint trained in bf16 with gradient accumulation
loads on a CPU and solves; every solve / evaluate takes ``device=``."""

import numpy as np
import pytest
import torch

from icml25.mdm import sudoku, zebra
from icml25.mdm.sudoku_mdm import (
    default_model_config,
    evaluate,
    load_model,
    solve_sudoku,
    train_sudoku,
)
from icml25.mdm.zebra_mdm import default_model_config as zebra_config
from icml25.mdm.zebra_mdm import evaluate_zebra, solve_zebra
from icml25.nn import TrainConfig, Transformer


@pytest.fixture(scope="module")
def data():
    return sudoku.generate_dataset(8, seed=11)


def test_a_bf16_accumulating_checkpoint_loads_on_cpu_and_solves(tmp_path, data):
    puzzles, solutions = data
    cfg = TrainConfig(steps=6, batch_size=8, warmup_steps=1, checkpoint_every=3, log_every=3,
                      precision="bf16", grad_accum_steps=2, device="auto",
                      out_dir=str(tmp_path / "run"))
    trained, log = train_sudoku(puzzles, solutions, cfg,
                                default_model_config(d_model=32, n_layers=1, n_heads=2))
    assert [row["step"] for row in log] == [3, 6] and all(np.isfinite(r["loss"]) for r in log)
    from safetensors.torch import load_file

    stored = load_file(str(tmp_path / "run" / "checkpoint" / "model.safetensors"))
    assert {t.dtype for t in stored.values()} == {torch.float32}
    loaded = load_model(tmp_path / "run")  # finds checkpoint/ in the run folder
    assert next(loaded.parameters()).device.type == "cpu"
    lines = [sudoku.format_grid(p) for p in puzzles]
    here = solve_sudoku(lines, model=loaded, steps=10, device="cpu")
    there = solve_sudoku(lines, model=trained.cpu().eval(), steps=10)
    assert [r.solution for r in here] == [r.solution for r in there]
    for result, puzzle in zip(here, puzzles, strict=True):  # a full grid that keeps the clues
        grid = np.array([int(c) for c in result.solution])
        assert ((grid >= 1) & (grid <= 9)).all()
        assert (grid[puzzle > 0] == puzzle[puzzle > 0]).all()
    report = evaluate(loaded, puzzles, solutions, ["top_margin"], steps=10, device="cpu",
                      batch_size=3)
    assert report["top_margin"]["n"] == 8  # three batches (3 + 3 + 2) all scored
    assert 0.0 <= report["top_margin"]["cell_acc"] <= 1.0


def test_batch_size_does_not_change_a_deterministic_solve(data):
    torch.manual_seed(0)
    model = Transformer(default_model_config(d_model=16, n_layers=1, n_heads=2)).eval()
    lines = [sudoku.format_grid(p) for p in data[0]]
    a = solve_sudoku(lines, model=model, steps=5, batch_size=3)
    b = solve_sudoku(lines, model=model, steps=5, device="cpu")
    assert [r.solution for r in a] == [r.solution for r in b]
    with pytest.raises(ValueError, match="device must be"):
        solve_sudoku(lines, model=model, device="gpu")


def test_zebra_solving_and_evaluation_take_a_device():
    puzzles = zebra.generate_dataset(4, seed=3, n_houses=3, n_attrs=3)
    torch.manual_seed(0)
    model = Transformer(zebra_config(d_model=16, n_layers=1, n_heads=2)).eval()
    grids = solve_zebra(model, puzzles, device="cpu", batch_size=2)
    assert [g.shape for g in grids] == [(3, 3)] * 4
    again = solve_zebra(model, puzzles)
    assert all(np.array_equal(a, b) for a, b in zip(grids, again, strict=True))
    report = evaluate_zebra(model, puzzles, ["top_margin"], device="cpu")
    assert report["top_margin"]["n"] == 4
