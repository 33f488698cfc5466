"""Sudoku engine: parsing, checks, exact search, 7-technique grader, generation, augmentation."""

from __future__ import annotations

import time

import numpy as np
import pytest

from icml25.mdm import sudoku as S

WIKI = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"
WIKI_SOLUTION = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
# Arto Inkala's "world's hardest sudoku": one solution, needs search beyond the 7 techniques.
INKALA = "800000000003600000070090200050007000000045700000100030001000068008500010090000400"

# Easy puzzles that need a given technique: solved with all seven, stuck without that one.
# (Found by scanning generated puzzles; the xy_wing, unique_rectangle, naked_triple and
# hidden_single ones are also solved by the independent `dokusan` step solver.)
NEEDS = {
    "hidden_single": (
        "500700000090400050080020000803000519000001060005000203460000001007003000000009008"
    ),
    "naked_pair": (
        "001500007500080000900000203008000001040802500060000470000000005050004900002003700"
    ),
    "naked_triple": (
        "206008000000200016000000075400000100001600080609000002900703050002800000000006009"
    ),
    "locked_candidates": (
        "604003805080000007000006000003602000007000000001047000000900004000020301400010500"
    ),
    "xy_wing": "000000643006900070000083009059000000400017060000000400087040000000090206200000080",
    "unique_rectangle": (
        "006070040200600000090050002080000203500300401000065080000800000750000000408006030"
    ),
}


def bit(d: int) -> int:
    return 1 << (d - 1)


def full_state() -> list[int]:
    return [S.ALL] * 81


# ----- parsing -------------------------------------------------------------------------------
def test_parse_accepts_zero_dot_and_whitespace():
    p = S.parse_puzzle("  " + WIKI.replace("0", ".") + "\n")
    assert p.dtype == np.int8 and p.shape == (81,)
    assert S.format_grid(p) == WIKI
    assert int((p > 0).sum()) == 30


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (WIKI[:80], "wrong length: expected 81 characters, got 80"),
        (WIKI + "1", "got 82"),
        ("", "got 0"),
        (WIKI[:12] + "x" + WIKI[13:], "bad character 'x' at position 13 (row 2, column 4)"),
        ("55" + "0" * 79, "digit 5 appears twice in row 1"),
        ("5" + "0" * 8 + "5" + "0" * 71, "digit 5 appears twice in column 1"),
        ("5" + "0" * 9 + "5" + "0" * 70, "digit 5 appears twice in box 1"),
    ],
)
def test_parse_errors_name_the_problem(text, needle):
    with pytest.raises(S.SudokuError) as info:
        S.parse_puzzle(text)
    assert needle in str(info.value)


def test_parse_puzzles_keeps_good_lines_and_reports_bad_ones():
    lines = [WIKI, "123", INKALA, "9" * 81]
    puzzles, errors = S.parse_puzzles(lines)
    assert puzzles.shape == (2, 81)
    assert errors[0] is None and errors[2] is None
    assert "wrong length" in errors[1] and "contradictory" in errors[3]
    assert S.format_grid(puzzles[1]) == INKALA
    empty, errs = S.parse_puzzles(["bad"])
    assert empty.shape == (0, 81) and len(errs) == 1


def test_pretty_printer_layout():
    text = S.format_pretty(WIKI)
    rows = text.splitlines()
    assert len(rows) == 11 and rows[0] == "5 3 . | . 7 . | . . ."
    assert rows[3] == "------+-------+------"


# ----- checks and exact search ----------------------------------------------------------------
def test_validity_checks_single_and_batch():
    sol = S.parse_puzzle(WIKI_SOLUTION)
    puz = S.parse_puzzle(WIKI)
    assert S.is_valid_solution(sol) is True
    assert S.is_solution_of(puz, sol) is True
    bad = sol.copy()
    bad[[0, 1]] = bad[[1, 0]]  # swap two cells in a row: rows fine, columns broken
    other = sol.copy()
    other[2] = 0  # incomplete
    batch = np.stack([sol, bad, other])
    assert S.is_valid_solution(batch).tolist() == [True, False, False]
    # A valid grid that breaks a clue is not a solution of the puzzle.
    relabelled = np.where(sol > 0, sol % 9 + 1, 0).astype(np.int8)
    assert S.is_valid_solution(relabelled)
    assert S.is_solution_of(puz, np.stack([sol, relabelled])).tolist() == [True, False]


def test_exact_search_counts_and_solves():
    assert S.count_solutions(WIKI) == 1
    assert S.format_grid(S.solve_backtrack(WIKI)) == WIKI_SOLUTION
    assert S.count_solutions(INKALA) == 1
    sol = S.solve_backtrack(INKALA)
    assert S.is_solution_of(S.parse_puzzle(INKALA), sol)
    # Remove the clues of two digits entirely: those digits can be swapped, so >= 2 solutions.
    two = "".join("0" if ch in "56" else ch for ch in WIKI)
    assert S.count_solutions(two, limit=2) == 2
    assert S.count_solutions("0" * 81, limit=5) == 5
    assert S.count_solutions("11" + "0" * 79) == 0
    assert S.solve_backtrack("11" + "0" * 79) is None


# ----- grader: whole puzzles --------------------------------------------------------------------
def test_grader_solves_known_easy_puzzle_in_a_correct_order():
    g = S.grade(WIKI)
    assert g.solved and not g.contradiction
    assert S.format_grid(g.grid) == WIKI_SOLUTION
    assert len(g.order) == 81 - 30
    assert sorted(c for c, _, _ in g.order) == [i for i, ch in enumerate(WIKI) if ch == "0"]
    assert all(WIKI_SOLUTION[c] == str(d) for c, d, _ in g.order)
    assert set(g.techniques) == set(S.TECHNIQUES)
    assert sum(g.techniques[t] for t in ("lone_single", "hidden_single")) == len(g.order)


def test_grader_fails_on_known_hard_puzzle():
    g = S.grade(INKALA)
    assert not g.solved and not g.contradiction
    assert S.count_solutions(INKALA) == 1  # unique, so "hard" in Shah et al.'s sense
    assert not S.is_easy(INKALA)
    assert S.is_easy(WIKI)
    # Whatever it did fill is right.
    sol = S.solve_backtrack(INKALA)
    filled = g.grid > 0
    assert (g.grid[filled] == sol[filled]).all()


@pytest.mark.parametrize("technique", sorted(NEEDS))
def test_each_technique_is_needed_by_some_puzzle(technique):
    puzzle = NEEDS[technique]
    full = S.grade(puzzle)
    assert full.solved and full.techniques[technique] >= 1
    assert S.format_grid(full.grid) == S.format_grid(S.solve_backtrack(puzzle))
    without = S.grade(puzzle, [t for t in S.TECHNIQUES if t != technique])
    assert not without.solved
    assert S.count_solutions(puzzle) == 1


def test_grade_rejects_unknown_technique():
    with pytest.raises(ValueError, match="unknown techniques"):
        S.grade(WIKI, ["x_wing"])


# ----- grader: hand-made candidate states, one per technique ----------------------------------
def test_lone_and_hidden_single_on_hand_made_states():
    cand = full_state()
    cand[10] = bit(5)
    assert S.find_lone_single(cand) == (10, 5)
    cand = full_state()
    for c in S.ROWS[0]:
        if c != 4:
            cand[c] &= ~bit(7)  # 7 can only go in r1c5 within row 1
    assert S.find_lone_single(cand) is None
    assert S.find_hidden_single(cand) == (4, 7)


def test_naked_pair_and_triple_on_hand_made_states():
    cand = full_state()
    cand[0] = cand[1] = bit(1) | bit(2)
    assert S.find_naked_pair(cand) == [(c, bit(1) | bit(2)) for c in range(2, 9)]
    cand = full_state()
    cand[0], cand[1], cand[2] = bit(1) | bit(2), bit(2) | bit(3), bit(1) | bit(3)
    assert S.find_naked_pair(cand) is None
    trio = bit(1) | bit(2) | bit(3)
    assert S.find_naked_triple(cand) == [(c, trio) for c in range(3, 9)]


def test_locked_candidates_pointing_and_claiming():
    cand = full_state()
    for c in S.BOXES[0]:
        if S.ROW_OF[c] != 0:
            cand[c] &= ~bit(5)  # in box 1, digit 5 only in row 1 -> points along row 1
    assert S.find_locked_candidates(cand) == [(c, bit(5)) for c in range(3, 9)]
    cand = full_state()
    for c in range(3, 9):
        cand[c] &= ~bit(5)  # in row 1, digit 5 only inside box 1 -> claims box 1
    expected = [(c, bit(5)) for c in S.BOXES[0] if S.ROW_OF[c] != 0]
    assert S.find_locked_candidates(cand) == expected
    assert S.find_locked_candidates(full_state()) is None


def test_xy_wing_on_hand_made_state():
    cand = full_state()
    cand[0] = bit(1) | bit(2)  # pivot r1c1 {1,2}
    cand[4] = bit(1) | bit(3)  # pincer r1c5 {1,3}
    cand[36] = bit(2) | bit(3)  # pincer r5c1 {2,3}
    assert S.find_xy_wing(cand) == [(40, bit(3))]  # r5c5 sees both pincers
    cand[36] = bit(1) | bit(3)  # both pincers hold the same pivot digit: no wing
    assert S.find_xy_wing(cand) is None


def test_unique_rectangle_type1_on_hand_made_state():
    ab = bit(1) | bit(2)
    cand = full_state()
    cand[0] = cand[3] = cand[9] = ab  # r1c1, r1c4, r2c1 = {1,2}; two boxes
    cand[12] = ab | bit(5)  # r2c4 = {1,2,5}
    assert S.find_unique_rectangle(cand) == [(12, ab)]
    # The same shape over four boxes is no deadly pattern (no uniqueness argument).
    cand = full_state()
    cand[0] = cand[3] = cand[36] = ab
    cand[39] = ab | bit(5)
    assert S.find_unique_rectangle(cand) is None


# ----- generation -------------------------------------------------------------------------------
def test_random_full_grids_are_valid_and_differ():
    rng = np.random.default_rng(0)
    grids = np.stack([S.random_full_grid(rng) for _ in range(20)])
    assert S.is_valid_solution(grids).all()
    assert len({S.format_grid(g) for g in grids}) == 20


def test_generated_easy_puzzles_are_unique_easy_and_sized_like_radcliffe():
    t0 = time.perf_counter()
    puzzles, solutions = S.generate_dataset(12, seed=1, difficulty="easy")
    per = (time.perf_counter() - t0) / 12
    assert puzzles.dtype == np.int8 and puzzles.shape == (12, 81)
    assert S.is_solution_of(puzzles, solutions).all()
    clues = (puzzles > 0).sum(axis=1)
    for p, s in zip(puzzles, solutions, strict=True):
        assert S.count_solutions(p) == 1
        g = S.grade(p)
        assert g.solved and (g.grid == s).all()
    # Radcliffe's puzzles have 19-31 clues, mostly 23-26; ours are minimal for "easy".
    assert clues.min() >= 20 and clues.max() <= 30
    assert 22 <= np.median(clues) <= 27
    assert per < 1.0  # measured ~0.1 s on one core; generous for a shared CI machine


def test_generated_hard_puzzles_are_unique_and_beyond_the_seven_techniques():
    puzzles, solutions = S.generate_dataset(4, seed=2, difficulty="hard")
    assert S.is_solution_of(puzzles, solutions).all()
    for p in puzzles:
        assert S.count_solutions(p) == 1
        assert not S.grade(p).solved
        # Minimal: every clue is needed for uniqueness.
        for c in np.flatnonzero(p)[:6]:
            q = p.copy()
            q[c] = 0
            assert S.count_solutions(q) == 2


def test_generation_is_deterministic_for_a_seed_and_prefix_stable():
    a = S.generate_dataset(3, seed=7)
    b = S.generate_dataset(3, seed=7)
    c = S.generate_dataset(2, seed=7)
    d = S.generate_dataset(3, seed=8)
    assert all((x == y).all() for x, y in zip(a, b, strict=True))
    assert (a[0][:2] == c[0]).all()
    assert not (a[0] == d[0]).all()


def test_generation_with_two_processes_matches_one():
    one = S.generate_dataset(4, seed=3, processes=1)
    two = S.generate_dataset(4, seed=3, processes=2)
    assert (one[0] == two[0]).all() and (one[1] == two[1]).all()


def test_save_and_load_round_trip(tmp_path):
    p, s = S.generate_dataset(2, seed=4)
    path = S.save_dataset(tmp_path / "set.npz", p, s, seed=4, difficulty="easy")
    q, t = S.load_dataset(path)
    assert (p == q).all() and (s == t).all() and q.dtype == np.int8
    with pytest.raises(S.SudokuError):
        S.save_dataset(tmp_path / "bad.npz", p, s[:1])


# ----- augmentation -------------------------------------------------------------------------------
def test_augment_preserves_validity_clues_and_easiness():
    base_p = np.stack([S.parse_puzzle(WIKI), S.parse_puzzle(NEEDS["xy_wing"])])
    base_s = np.stack([S.solve_backtrack(p) for p in base_p])
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 2, 256)
    p, s = S.augment(base_p[idx], base_s[idx], rng)
    assert p.dtype == np.int8 and p.shape == (256, 81)
    assert S.is_valid_solution(s).all()
    assert S.is_solution_of(p, s).all()
    assert ((p > 0).sum(1) == (base_p[idx] > 0).sum(1)).all()  # blanks stay blank
    # Boards really change, and independently per board.
    assert len({S.format_grid(x) for x in s}) > 250
    for k in range(4):  # symmetries keep the logical difficulty and the unique solution
        g = S.grade(p[k])
        assert g.solved and (g.grid == s[k]).all()
        assert sorted(g.techniques.items()) == sorted(S.grade(base_p[idx[k]]).techniques.items())


def test_augment_spreads_cells_and_digits_uniformly_and_transposes():
    sol = S.parse_puzzle(WIKI_SOLUTION)
    n = 8100
    rng = np.random.default_rng(1)
    one = np.zeros((n, 81), np.int8)
    one[:, 0] = sol[0]  # a single clue in r1c1
    p, s = S.augment(one, np.tile(sol, (n, 1)), rng)
    assert S.is_solution_of(p, s).all()
    cell = np.argmax(p > 0, axis=1)
    # Band/row/stack/column permutations move one cell uniformly over all 81 (100 expected
    # each; a count below 50 has probability < 1e-6 per cell under uniformity).
    assert np.bincount(cell, minlength=81).min() > 50
    # Relabelling sends the clue digit uniformly to 1..9 (900 expected each).
    assert np.bincount(p[np.arange(n), cell], minlength=10)[1:].min() > 750
    # A full first row of clues stays a row without transpose and becomes a column with it.
    row = np.zeros((n, 81), np.int8)
    row[:, :9] = sol[:9]
    p, _ = S.augment(row, np.tile(sol, (n, 1)), rng)
    grids = (p > 0).reshape(n, 9, 9)
    in_a_row = (grids.sum(axis=2) == 9).any(axis=1)
    in_a_col = (grids.sum(axis=1) == 9).any(axis=1)
    assert (in_a_row ^ in_a_col).all()
    assert abs(in_a_col.mean() - 0.5) < 0.03  # sd 0.0056 for p = 1/2


def test_augment_speed_and_shape_errors():
    p, s = S.generate_dataset(4, seed=5)
    rng = np.random.default_rng(0)
    big_p, big_s = np.tile(p, (256, 1)), np.tile(s, (256, 1))
    S.augment(big_p, big_s, rng)
    t0 = time.perf_counter()
    for _ in range(20):
        S.augment(big_p, big_s, rng)
    rate = 20 * len(big_p) / (time.perf_counter() - t0)
    assert rate > 50_000  # measured ~240k boards/s on one core; target >= 100k
    with pytest.raises(S.SudokuError):
        S.augment(p, s[:, :80], rng)
