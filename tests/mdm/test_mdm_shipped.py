"""The shipped Sudoku checkpoint: it solves the issue's puzzle through the public names, and a
fixed set of held-out easy puzzles far better with the top-margin planner than in random order."""

import pytest
from typer.testing import CliRunner

from icml25.mdm import solve_sudoku, sudoku
from icml25.mdm.cli import app
from icml25.mdm.sudoku_mdm import load_model, solve_grids

PUZZLE = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"
SOLUTION = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
N_FIXED = 40
# Measured on this set with the shipped model (see docs/mdm.md for the 1,000-puzzle table):
# top margin 27 of 40, random 0 (2026-11-30, after the second warm restart; before it 22 and 0);
# the bounds leave room for float differences.
MIN_MARGIN_SOLVED = 25


@pytest.fixture(scope="module")
def model():
    return load_model()


@pytest.fixture(scope="module")
def fixed_set():
    return sudoku.generate_dataset(N_FIXED, seed=2)  # the held-out evaluation seed


def test_solves_the_issue_puzzle(model):
    (result,) = solve_sudoku(PUZZLE, model=model)
    assert result.valid and result.solution == SOLUTION
    out = CliRunner().invoke(app, ["solve", PUZZLE])
    assert out.exit_code == 0 and out.stdout.strip() == SOLUTION


def test_top_margin_solves_the_fixed_easy_set_and_random_order_does_not(model, fixed_set):
    puzzles, _ = fixed_set
    solved = {planner: int(sudoku.is_solution_of(
        puzzles, solve_grids(model, puzzles, planner=planner, steps=50)).sum())
        for planner in ("random", "top_margin")}
    assert solved["top_margin"] >= MIN_MARGIN_SOLVED
    assert solved["top_margin"] >= 5 * max(solved["random"], 1)


def solved(model, puzzles, **kw) -> int:
    return int(sudoku.is_solution_of(puzzles, solve_grids(model, puzzles, **kw)).sum())


def test_remasking_on_the_trained_model_keeps_the_target(model, fixed_set):
    # before: re-predicting revealed cells in place (which the model was never trained to do)
    # solved 0 of these puzzles. Measured here (docs/mdm/remask-300.json and
    # remask-heldout.json, whose first 40 easy puzzles are this set): 50 steps plain 27, cap
    # (eta 0.05) 31, rescale (eta 0.05) 31; 20 steps plain 18, conf (eta 0.1) 22. The target:
    # never worse than plain by more than 2 points, i.e. here not one puzzle fewer at 50
    # steps (2 points of 40 is 0.8 puzzles); at 20 steps conf is at least as good as plain.
    # (On all 300 puzzles cap and rescale lose 4 points at 20 steps: docs/mdm.md.)
    puzzles, _ = fixed_set
    plain = solved(model, puzzles, steps=50)
    for schedule in ("cap", "rescale"):
        got = solved(model, puzzles, steps=50, remask=schedule)
        assert got >= plain and got >= MIN_MARGIN_SOLVED, (schedule, got, plain)
    plain20 = solved(model, puzzles, steps=20)
    conf20 = solved(model, puzzles, steps=20, remask="conf:0.1")
    assert conf20 >= plain20, (conf20, plain20)
