"""The autoregressive (row-major) Sudoku baseline: rows, loss alignment, decoding, CLI."""

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from icml25.mdm import sudoku
from icml25.mdm.cli import app
from icml25.mdm.sudoku_ar import CELLS, IGNORE, ar_loss, ar_rows, default_ar_config, solve_grids_ar
from icml25.mdm.sudoku_mdm import evaluate
from icml25.nn import Transformer


@pytest.fixture(scope="module")
def data():
    return sudoku.generate_dataset(5, seed=12)


class _Oracle(torch.nn.Module):
    """A causal 'model' that knows the solutions: position 80 + c predicts cell c."""

    def __init__(self, puzzles: np.ndarray, solutions: np.ndarray) -> None:
        super().__init__()
        self.cfg = default_ar_config()
        self.answers = {tuple(p): torch.from_numpy(s.astype(np.int64))
                        for p, s in zip(puzzles, solutions, strict=True)}

    def forward(self, x):
        logits = torch.zeros(*x.shape, 10)
        for b, row in enumerate(x):
            sol = self.answers[tuple(row[:CELLS].tolist())]
            for j in range(CELLS - 1, x.shape[1]):
                logits[b, j, sol[j - CELLS + 1]] = 30.0
        return logits


def test_rows_target_only_blank_cells_one_step_ahead(data):
    puzzles, solutions = data
    sol = torch.from_numpy(solutions.astype(np.int64))
    blanks = torch.from_numpy(puzzles == 0)
    inputs, targets = ar_rows(sol, blanks)
    assert inputs.shape == targets.shape == (len(puzzles), 2 * CELLS - 1)
    assert (inputs[:, :CELLS].numpy() == puzzles).all()
    assert (inputs[:, CELLS:].numpy() == solutions[:, :-1]).all()
    scored = targets != IGNORE
    assert scored.sum() == blanks.sum()
    assert (targets[:, CELLS - 1:][blanks] == sol[blanks]).all()


def test_oracle_has_zero_loss_and_decodes_the_solution(data):
    puzzles, solutions = data
    oracle = _Oracle(puzzles, solutions)
    loss, metrics = ar_loss(oracle, ar_rows(torch.from_numpy(solutions.astype(np.int64)),
                                            torch.from_numpy(puzzles == 0)))
    assert float(loss) < 1e-6 and metrics["masked_cell_acc"] == 1.0
    assert (solve_grids_ar(oracle, puzzles, batch_size=2) == solutions).all()
    assert evaluate(oracle, puzzles, solutions)["autoregressive"]["solved"] == 1.0


def test_untrained_model_keeps_clues_and_writes_only_digits(data):
    puzzles, _ = data
    torch.manual_seed(0)
    model = Transformer(default_ar_config(d_model=16, n_layers=1, n_heads=2))
    grids = solve_grids_ar(model, puzzles)
    assert ((grids == puzzles) | (puzzles == 0)).all()
    assert ((grids >= 1) & (grids <= 9)).all()


def test_cli_trains_and_evaluates_the_baseline(tmp_path, data):
    f = sudoku.save_dataset(tmp_path / "d.npz", *data)
    run = tmp_path / "ar"
    out = CliRunner().invoke(app, ["train", "--data", str(f), "--out", str(run), "--steps", "2",
                                   "--batch-size", "4", "--warmup", "1", "--d-model", "16",
                                   "--n-layers", "1", "--n-heads", "2", "--autoregressive"])
    assert out.exit_code == 0, out.output
    assert json.loads((run / "model" / "config.json").read_text())["autoregressive"] is True
    out = CliRunner().invoke(app, ["evaluate", "--model", str(run), "--data", str(f)])
    assert out.exit_code == 0, out.output
    assert list(json.loads(out.stdout)) == ["autoregressive"]
