"""The shipped autoregressive baseline: a trained causal model that the public names use as such;
decoded in row-major order it solves far fewer held-out easy puzzles than the MDM with top margin
(tests/mdm/test_mdm_shipped.py: at least 25 of the same 40)."""

from importlib import resources

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from icml25.mdm import solve_sudoku, sudoku
from icml25.mdm.cli import app
from icml25.mdm.sudoku_ar import IGNORE, ar_rows, solve_grids_ar
from icml25.mdm.sudoku_mdm import load_model

N_FIXED = 40
# Measured on this set with the shipped baseline (2026-11-30; docs/mdm.md has the 1,000-puzzle
# table): teacher-forced accuracy on the blanks 0.907, greedy cell accuracy 0.379, 0 solved.
MIN_TEACHER_FORCED_ACC = 0.85
MIN_GREEDY_CELL_ACC = 0.30  # chance is 1/9
MDM_MIN_SOLVED = 25


@pytest.fixture(scope="module")
def model():
    return load_model(task="sudoku-ar")


@pytest.fixture(scope="module")
def fixed_set():
    return sudoku.generate_dataset(N_FIXED, seed=2)  # the held-out evaluation seed


def test_shipped_baseline_is_causal_and_reads_the_whole_puzzle(model):
    assert model.cfg.causal and model.cfg.seq_len == 161


def test_teacher_forced_predictions_are_trained(model, fixed_set):
    puzzles, solutions = fixed_set
    inputs, targets = ar_rows(torch.from_numpy(solutions.astype(np.int64)),
                              torch.from_numpy(puzzles == 0))
    with torch.no_grad():
        pred = model(inputs).argmax(-1)
    scored = targets != IGNORE
    assert float(((pred == targets) & scored).sum() / scored.sum()) >= MIN_TEACHER_FORCED_ACC


def test_row_major_decoding_copies_clues_and_trails_the_planned_mdm(model, fixed_set):
    puzzles, solutions = fixed_set
    grids = solve_grids_ar(model, puzzles)
    clues, blanks = puzzles > 0, puzzles == 0
    assert (grids[clues] == puzzles[clues]).all()
    assert (grids[blanks] == solutions[blanks]).mean() >= MIN_GREEDY_CELL_ACC
    assert int(sudoku.is_solution_of(puzzles, grids).sum()) < MDM_MIN_SOLVED


def test_public_names_accept_the_baseline(model, tmp_path):
    puzzles, _ = sudoku.generate_dataset(3, seed=2)
    lines = ["".join(map(str, p)) for p in puzzles]
    results = solve_sudoku(lines, model=model)
    assert [len(r.solution) for r in results] == [81] * 3
    path = tmp_path / "p.txt"
    path.write_text("\n".join(lines + ["12"]) + "\n")
    folder = str(resources.files("icml25.mdm") / "checkpoints/sudoku-ar")
    out = CliRunner().invoke(app, ["solve", "--file", str(path), "--model", folder])
    assert out.exit_code == 0, out.output
    rows = out.stdout.strip().splitlines()
    assert len(rows) == 4 and rows[3].startswith("error:")
