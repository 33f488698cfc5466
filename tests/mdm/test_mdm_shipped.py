"""The shipped Sudoku checkpoint: it solves the issue's puzzle through the public names, and a
fixed set of held-out easy puzzles far better with the top-margin planner than in random order."""

import pytest
from typer.testing import CliRunner

from icml25.mdm import solve_sudoku, sudoku
from icml25.mdm.cli import app
from icml25.mdm.remask import REMASK_SCHEDULES
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


def test_remasking_on_the_trained_model_keeps_the_target(model, fixed_set):
    # The issue's target: no remask schedule at its default solves more than 2 points fewer
    # than plain top margin (same model, same steps). On these 40 puzzles 2 points is 0.8 of
    # a puzzle, so every default must solve at least as many as plain, at 20 and at 50 steps.
    # Measured (docs/mdm/remask-paced-300.json, whose first 40 easy puzzles are this set): 20
    # steps 18 for plain and every schedule; 50 steps plain 27, cap 27, rescale 27, conf 28.
    # The unpaced defaults before (ReMDM's count alone) fail this test here: conf at 50 steps
    # solved 24; on all 300 cap and rescale lost 4 points at 20 steps (docs/mdm.md). An earlier
    # version that re-predicted revealed cells in place solved 0 of these puzzles.
    puzzles, _ = fixed_set
    for steps in (20, 50):
        plain = solve_grids(model, puzzles, steps=steps)
        ok = int(sudoku.is_solution_of(puzzles, plain).sum())
        for schedule in REMASK_SCHEDULES:
            grids = solve_grids(model, puzzles, steps=steps, remask=schedule)
            got = int(sudoku.is_solution_of(puzzles, grids).sum())
            assert got >= ok, (steps, schedule, got, ok)
            if steps == 50:  # it acted: at 50 steps a paced schedule has room for one a pass
                assert (grids != plain).any(), schedule
