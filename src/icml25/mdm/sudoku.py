"""Sudoku: parsing, checking, exact solving, a 7-technique logical grader, generation, augmentation.

Boards are NumPy ``int8`` arrays of 81 cells in row-major order, ``0`` for a blank and ``1``-``9``
for a digit. Cells are numbered ``0..80`` (row ``cell // 9``, column ``cell % 9``); messages shown
to people number rows, columns and boxes from 1.

The logical grader uses exactly the seven techniques with which Shah et al. (2024) filtered their
training puzzles (the technique set of the ``dokusan`` solver): lone (naked) single, hidden single,
naked pair, naked triple, locked candidates (pointing and claiming), XY-wing and unique rectangle
(type 1). "Easy" puzzles are those it solves completely; "hard" puzzles have a unique solution
that it cannot reach (they need another technique or search).

Everything here is pure NumPy + Python: search and grading use 9-bit candidate masks in Python
ints (bit ``d - 1`` set means digit ``d`` is still possible), batch checks and augmentation are
vectorised NumPy.

Example
-------
>>> import numpy as np
>>> p = parse_puzzle(
...     "530070000600195000098000060800060003400803001700020006060000280000419005000080079")
>>> grade(p).solved, count_solutions(p)
(True, 1)
>>> bool(is_solution_of(p, solve_backtrack(p)))
True
"""

from __future__ import annotations

import itertools
import multiprocessing
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "TECHNIQUES",
    "Grade",
    "SudokuError",
    "augment",
    "augment_maps",
    "candidates_from_grid",
    "count_solutions",
    "find_hidden_single",
    "find_locked_candidates",
    "find_lone_single",
    "find_naked_pair",
    "find_naked_triple",
    "find_unique_rectangle",
    "find_xy_wing",
    "format_grid",
    "format_pretty",
    "generate",
    "generate_dataset",
    "grade",
    "is_easy",
    "is_solution_of",
    "is_valid_solution",
    "load_dataset",
    "parse_puzzle",
    "parse_puzzles",
    "random_full_grid",
    "save_dataset",
    "solve_backtrack",
]

#: The seven logical techniques of Shah et al. (2024), in the order the grader tries them.
TECHNIQUES: tuple[str, ...] = (
    "lone_single",
    "hidden_single",
    "naked_pair",
    "naked_triple",
    "locked_candidates",
    "xy_wing",
    "unique_rectangle",
)

# ---------------------------------------------------------------------------------------------
# Geometry tables (computed once; plain Python lists because the solvers index them in loops)
# ---------------------------------------------------------------------------------------------
ALL = 0x1FF  # all nine digits possible
ROW_OF = [c // 9 for c in range(81)]
COL_OF = [c % 9 for c in range(81)]
BOX_OF = [(c // 27) * 3 + (c % 9) // 3 for c in range(81)]
ROWS = [[r * 9 + c for c in range(9)] for r in range(9)]
COLS = [[r * 9 + c for r in range(9)] for c in range(9)]
BOXES = [[(b // 3) * 27 + (b % 3) * 3 + (i // 3) * 9 + i % 3 for i in range(9)] for b in range(9)]
UNITS = ROWS + COLS + BOXES  # 27 units: rows 0-8, columns 9-17, boxes 18-26
PEERS = [sorted(set(ROWS[ROW_OF[c]] + COLS[COL_OF[c]] + BOXES[BOX_OF[c]]) - {c}) for c in range(81)]
PEER_SETS = [frozenset(p) for p in PEERS]
POPCOUNT = [bin(m).count("1") for m in range(512)]
DIGIT_OF_BIT = {1 << i: i + 1 for i in range(9)}
BITS_OF = [[1 << i for i in range(9) if m >> i & 1] for m in range(512)]
_UNIT_INDEX = np.array(UNITS, dtype=np.intp)  # (27, 9) for vectorised checks
_UNIT_NAMES = ["row"] * 9 + ["column"] * 9 + ["box"] * 9


class SudokuError(ValueError):
    """A malformed Sudoku puzzle (wrong length, bad character, contradictory clues, bad array)."""


# ---------------------------------------------------------------------------------------------
# Parsing and formatting
# ---------------------------------------------------------------------------------------------
def _where(cell: int) -> str:
    return f"row {cell // 9 + 1}, column {cell % 9 + 1}"


def _find_conflict(grid: Sequence[int]) -> str | None:
    """Describe the first repeated digit in a row, column or box, or None if there is none."""
    for u, unit in enumerate(UNITS):
        seen: dict[int, int] = {}
        for c in unit:
            d = int(grid[c])
            if d == 0:
                continue
            if d in seen:
                name = _UNIT_NAMES[u]
                return f"contradictory clues: digit {d} appears twice in {name} {u % 9 + 1}"
            seen[d] = c
    return None


def parse_puzzle(text: str) -> np.ndarray:
    """Parse an 81-character puzzle string into an ``int8`` array of shape (81,).

    Digits ``1``-``9`` are clues; ``0`` or ``.`` are blanks; surrounding whitespace is ignored.
    Raises :class:`SudokuError` naming the problem: the wrong length, the first bad character and
    its position, or the row/column/box in which a clue digit repeats.

    >>> parse_puzzle("." * 80 + "5")[-1]
    np.int8(5)
    """
    if not isinstance(text, str):
        raise SudokuError(f"expected a string of 81 characters, got {type(text).__name__}")
    s = text.strip()
    if len(s) != 81:
        raise SudokuError(f"wrong length: expected 81 characters, got {len(s)}")
    out = np.zeros(81, dtype=np.int8)
    for i, ch in enumerate(s):
        if ch in "123456789":
            out[i] = ord(ch) - 48
        elif ch not in "0.":
            raise SudokuError(
                f"bad character {ch!r} at position {i + 1} ({_where(i)}); "
                "allowed are 1-9 for clues and 0 or . for blanks"
            )
    conflict = _find_conflict(out)
    if conflict is not None:
        raise SudokuError(conflict)
    return out


def parse_puzzles(lines: Iterable[str]) -> tuple[np.ndarray, list[str | None]]:
    """Parse many puzzles, one per line, keeping going past bad lines.

    Returns ``(puzzles, errors)``: ``puzzles`` is an ``int8`` array ``(n_valid, 81)`` of the lines
    that parsed, in input order; ``errors`` has one entry per input line, ``None`` for a line that
    parsed and the error message otherwise. So ``puzzles[k]`` is the k-th line whose error is None.
    """
    good: list[np.ndarray] = []
    errors: list[str | None] = []
    for line in lines:
        try:
            good.append(parse_puzzle(line))
            errors.append(None)
        except SudokuError as exc:
            errors.append(str(exc))
    arr = np.stack(good) if good else np.zeros((0, 81), dtype=np.int8)
    return arr, errors


def _as_board(grid, *, name: str = "puzzle") -> np.ndarray:
    """Validate one board (string or array-like of 81 ints in 0..9) and return it as int8."""
    if isinstance(grid, str):
        return parse_puzzle(grid)
    arr = np.asarray(grid)
    if arr.shape != (81,) and arr.shape != (9, 9):
        raise SudokuError(f"{name} must have 81 cells (shape (81,) or (9, 9)), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise SudokuError(f"{name} must hold integers 0-9, got dtype {arr.dtype}")
    arr = arr.reshape(81)
    if arr.min() < 0 or arr.max() > 9:
        raise SudokuError(f"{name} values must lie in 0..9 (0 = blank)")
    return arr.astype(np.int8)


def format_grid(grid) -> str:
    """The 81-digit string of a board (``0`` for blanks)."""
    arr = _as_board(grid, name="grid")
    return "".join(chr(48 + int(v)) for v in arr)


def format_pretty(grid, blank: str = ".") -> str:
    """A 9x9 layout with box separators, for people.

    >>> print(format_pretty("1" + "0" * 80).splitlines()[0])
    1 . . | . . . | . . .
    """
    arr = _as_board(grid, name="grid")
    lines = []
    for r in range(9):
        if r and r % 3 == 0:
            lines.append("------+-------+------")
        cells = [str(int(v)) if v else blank for v in arr[r * 9 : r * 9 + 9]]
        lines.append(" | ".join(" ".join(cells[i : i + 3]) for i in (0, 3, 6)))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Vectorised checks
# ---------------------------------------------------------------------------------------------
# A digit d maps to bit d-1; a blank or out-of-range value maps to 1024 so a unit's sum can only
# be 511 when it holds each of 1..9 exactly once (9 powers of two sum to 511 only if distinct).
_BIT_LUT = np.array([1024] + [1 << i for i in range(9)], dtype=np.int32)


def _as_batch(grids) -> tuple[np.ndarray, bool]:
    arr = np.asarray(grids)
    single = arr.ndim == 1
    arr = arr.reshape(1, -1) if single else arr
    if arr.ndim != 2 or arr.shape[1] != 81:
        raise SudokuError(f"expected boards of shape (81,) or (B, 81), got {np.shape(grids)}")
    return arr, single


def is_valid_solution(grid):
    """True where a board is a complete valid Sudoku (every unit holds 1..9 once).

    Accepts one board ``(81,)`` (returns a Python bool) or a batch ``(B, 81)`` (returns a bool
    array of shape ``(B,)``).
    """
    arr, single = _as_batch(grid)
    in_range = ((arr >= 1) & (arr <= 9)).all(axis=1)
    bits = _BIT_LUT[np.clip(arr, 0, 9).astype(np.intp)]
    ok = in_range & (bits[:, _UNIT_INDEX].sum(axis=2) == ALL).all(axis=1)
    return bool(ok[0]) if single else ok


def is_solution_of(puzzle, grid):
    """True where ``grid`` is a valid complete board that keeps every clue of ``puzzle``.

    Both may be single boards or batches (broadcast against each other).
    """
    p, p_single = _as_batch(puzzle)
    g, g_single = _as_batch(grid)
    keeps = ((p == 0) | (p == g)).all(axis=1)
    ok = keeps & is_valid_solution(g)
    return bool(ok[0]) if (p_single and g_single) else ok


# ---------------------------------------------------------------------------------------------
# Exact search: bitmask backtracking with minimum-remaining-values
# ---------------------------------------------------------------------------------------------
def _search(grid: Sequence[int], limit: int, forbid: dict[int, int] | None = None):
    """Count solutions up to ``limit``; return ``(count, first_solution_or_None)``.

    ``forbid`` maps a cell to a bit mask of digits it may not take, which lets the generator ask
    "is there a solution other than the known one?" by forbidding the known digit of one cell.
    """
    rows, cols, boxes = [0] * 9, [0] * 9, [0] * 9
    for c in range(81):
        d = int(grid[c])
        if d:
            bit = 1 << (d - 1)
            r, k, b = ROW_OF[c], COL_OF[c], BOX_OF[c]
            if (rows[r] | cols[k] | boxes[b]) & bit:
                return 0, None  # contradictory clues
            rows[r] |= bit
            cols[k] |= bit
            boxes[b] |= bit
    forb = [0] * 81
    for c, m in (forbid or {}).items():
        forb[c] = m
    empties = [c for c in range(81) if not grid[c]]
    values = [int(v) for v in grid]
    state = {"count": 0, "first": None}

    def rec() -> bool:
        if not empties:
            state["count"] += 1
            if state["first"] is None:
                state["first"] = list(values)
            return state["count"] >= limit
        best, best_n, best_m = 0, 10, 0
        for i, c in enumerate(empties):  # minimum remaining values
            m = ALL & ~(rows[ROW_OF[c]] | cols[COL_OF[c]] | boxes[BOX_OF[c]] | forb[c])
            n = POPCOUNT[m]
            if n < best_n:
                best, best_n, best_m = i, n, m
                if n <= 1:
                    break
        if best_n == 0:
            return False
        c = empties[best]
        empties[best] = empties[-1]
        empties.pop()
        r, k, b = ROW_OF[c], COL_OF[c], BOX_OF[c]
        done = False
        for bit in BITS_OF[best_m]:
            rows[r] |= bit
            cols[k] |= bit
            boxes[b] |= bit
            values[c] = DIGIT_OF_BIT[bit]
            done = rec()
            rows[r] ^= bit
            cols[k] ^= bit
            boxes[b] ^= bit
            if done:
                break
        values[c] = 0
        empties.append(c)
        return done

    rec()
    return state["count"], state["first"]


def count_solutions(puzzle, limit: int = 2) -> int:
    """Number of solutions of ``puzzle``, counting stops at ``limit`` (so 2 means "2 or more").

    Contradictory clues give 0 (parse a string with :func:`parse_puzzle` to get the reason).
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return _search(_as_board_lenient(puzzle).tolist(), limit)[0]


def _as_board_lenient(puzzle) -> np.ndarray:
    """Like _as_board, but a string with contradictory clues is returned instead of raising."""
    if isinstance(puzzle, str):
        try:
            return parse_puzzle(puzzle)
        except SudokuError as exc:
            if not str(exc).startswith("contradictory"):
                raise
            s = puzzle.strip().replace(".", "0")
            return np.array([int(ch) for ch in s], dtype=np.int8)
    return _as_board(puzzle)


def solve_backtrack(puzzle) -> np.ndarray | None:
    """One solution (``int8``, shape (81,)) found by backtracking, or None if there is none."""
    arr = _as_board_lenient(puzzle)
    _, first = _search(arr.tolist(), 1)
    return None if first is None else np.array(first, dtype=np.int8)


# ---------------------------------------------------------------------------------------------
# The logical grader: candidate states and the seven techniques
# ---------------------------------------------------------------------------------------------
# A candidate state is a list of 81 masks, 0 for a filled cell. Technique functions are pure:
# they look at the state and return what they found (a placement, or a list of eliminations
# ``(cell, mask_to_remove)``), or None; the grader applies it.


def candidates_from_grid(grid: Sequence[int]) -> list[int]:
    """Candidate masks of every blank cell given the filled cells (0 for filled cells)."""
    rows, cols, boxes = [0] * 9, [0] * 9, [0] * 9
    for c in range(81):
        d = grid[c]
        if d:
            bit = 1 << (d - 1)
            rows[ROW_OF[c]] |= bit
            cols[COL_OF[c]] |= bit
            boxes[BOX_OF[c]] |= bit
    return [
        0 if grid[c] else ALL & ~(rows[ROW_OF[c]] | cols[COL_OF[c]] | boxes[BOX_OF[c]])
        for c in range(81)
    ]


def find_lone_single(cand: Sequence[int]) -> tuple[int, int] | None:
    """A blank cell with exactly one candidate: ``(cell, digit)``."""
    for c in range(81):
        m = cand[c]
        if m and not m & (m - 1):
            return c, DIGIT_OF_BIT[m]
    return None


def find_hidden_single(cand: Sequence[int]) -> tuple[int, int] | None:
    """A digit that has exactly one possible cell in some unit: ``(cell, digit)``."""
    for unit in UNITS:
        once = twice = 0
        for c in unit:  # bits seen once vs at least twice, in one pass
            m = cand[c]
            twice |= once & m
            once |= m
        only = once & ~twice
        if only:
            bit = only & -only
            for c in unit:
                if cand[c] & bit:
                    return c, DIGIT_OF_BIT[bit]
    return None


def _eliminations(cells: Iterable[int], mask: int, cand: Sequence[int]):
    return [(c, cand[c] & mask) for c in cells if cand[c] & mask]


def find_naked_pair(cand: Sequence[int]) -> list[tuple[int, int]] | None:
    """Two cells of a unit with the same two candidates remove them from the unit's other cells."""
    for unit in UNITS:
        seen: dict[int, int] = {}
        for c in unit:
            m = cand[c]
            if POPCOUNT[m] != 2:
                continue
            if m in seen:
                pair = (seen[m], c)
                elims = _eliminations((x for x in unit if x not in pair), m, cand)
                if elims:
                    return elims
            else:
                seen[m] = c
    return None


def find_naked_triple(cand: Sequence[int]) -> list[tuple[int, int]] | None:
    """Three cells of a unit whose candidates together are three digits remove those digits
    from the unit's other cells."""
    for unit in UNITS:
        small = [c for c in unit if 2 <= POPCOUNT[cand[c]] <= 3]
        for trio in itertools.combinations(small, 3):
            m = cand[trio[0]] | cand[trio[1]] | cand[trio[2]]
            if POPCOUNT[m] != 3:
                continue
            elims = _eliminations((x for x in unit if x not in trio), m, cand)
            if elims:
                return elims
    return None


def find_locked_candidates(cand: Sequence[int]) -> list[tuple[int, int]] | None:
    """Pointing: a digit confined to one row/column inside a box leaves the rest of that line.
    Claiming: a digit confined to one box inside a row/column leaves the rest of that box."""
    for b, box in enumerate(BOXES):  # pointing
        for bit in BITS_OF[ALL]:
            cells = [c for c in box if cand[c] & bit]
            if len(cells) < 2:
                continue
            for line_of, lines in ((ROW_OF, ROWS), (COL_OF, COLS)):
                first = line_of[cells[0]]
                if all(line_of[c] == first for c in cells):
                    outside = (c for c in lines[first] if BOX_OF[c] != b)
                    elims = _eliminations(outside, bit, cand)
                    if elims:
                        return elims
    for line_of, lines in ((ROW_OF, ROWS), (COL_OF, COLS)):  # claiming
        for li, line in enumerate(lines):
            for bit in BITS_OF[ALL]:
                cells = [c for c in line if cand[c] & bit]
                if len(cells) < 2:
                    continue
                b = BOX_OF[cells[0]]
                if all(BOX_OF[c] == b for c in cells):
                    outside = (c for c in BOXES[b] if line_of[c] != li)
                    elims = _eliminations(outside, bit, cand)
                    if elims:
                        return elims
    return None


def find_xy_wing(cand: Sequence[int]) -> list[tuple[int, int]] | None:
    """Pivot {x,y} sees pincers {x,z} and {y,z}: z leaves every cell that sees both pincers."""
    bival = [c for c in range(81) if POPCOUNT[cand[c]] == 2]
    for p in bival:
        pm = cand[p]
        wings = [c for c in bival if c in PEER_SETS[p] and POPCOUNT[cand[c] & pm] == 1]
        for a, b in itertools.combinations(wings, 2):
            am, bm = cand[a], cand[b]
            if am & pm == bm & pm:  # pincers must hold different pivot digits
                continue
            z = am & ~pm
            if bm & ~pm != z:
                continue
            seen_by_both = PEER_SETS[a] & PEER_SETS[b]
            elims = _eliminations(sorted(seen_by_both - {p}), z, cand)
            if elims:
                return elims
    return None


def find_unique_rectangle(cand: Sequence[int]) -> list[tuple[int, int]] | None:
    """Unique rectangle, type 1 (assumes the puzzle has a unique solution).

    Four unfilled cells at the corners of a rectangle spanning exactly two rows, two columns and
    two boxes, three of them with exactly the candidates {a, b} and the fourth with {a, b} plus
    others: if the fourth also became a or b the two digits could be swapped round the rectangle
    (a "deadly pattern", two solutions), so a and b are removed from the fourth corner.
    """
    for r1 in range(9):
        by_mask: dict[int, list[int]] = {}
        for c in ROWS[r1]:
            if POPCOUNT[cand[c]] == 2:
                by_mask.setdefault(cand[c], []).append(c)
        for m, cells in by_mask.items():
            for x, y in itertools.combinations(cells, 2):
                c1, c2 = COL_OF[x], COL_OF[y]
                same_stack = c1 // 3 == c2 // 3
                for r2 in range(9):
                    if r2 == r1 or ((r1 // 3 == r2 // 3) == same_stack):
                        continue  # the rectangle must cover exactly two boxes
                    u, v = r2 * 9 + c1, r2 * 9 + c2
                    for three, four in ((u, v), (v, u)):
                        if cand[three] == m and cand[four] & m == m and cand[four] != m:
                            return [(four, m)]
    return None


_ELIMINATORS = (
    ("naked_pair", find_naked_pair),
    ("naked_triple", find_naked_triple),
    ("locked_candidates", find_locked_candidates),
    ("xy_wing", find_xy_wing),
    ("unique_rectangle", find_unique_rectangle),
)


@dataclass
class Grade:
    """What the 7-technique logical solver achieved on a puzzle.

    Attributes
    ----------
    solved : every blank was filled by the seven techniques (no search, no contradiction).
    techniques : how often each technique was applied, for all seven names in
        :data:`TECHNIQUES` (placements for the singles, elimination steps for the others).
    order : the fill order, ``(cell, digit, technique)`` per placement, technique being
        ``"lone_single"`` or ``"hidden_single"`` (the only two that place digits).
    grid : the board as far as it got (``int8``, shape (81,); equals the solution if solved).
    contradiction : the solver met an impossible state (only possible for puzzles without a
        solution, or with several solutions when the unique-rectangle rule fires).
    """

    solved: bool
    techniques: dict[str, int] = field(default_factory=dict)
    order: list[tuple[int, int, str]] = field(default_factory=list)
    grid: np.ndarray | None = None
    contradiction: bool = False


def _place(cand: list[int], vals: list[int], c: int, d: int) -> bool:
    """Fill cell c with d and remove d from its peers; False if a peer is left with nothing."""
    vals[c] = d
    cand[c] = 0
    bit = 1 << (d - 1)
    ok = True
    for p in PEERS[c]:
        if cand[p] & bit:
            cand[p] ^= bit
            if not cand[p]:
                ok = False
    return ok


def _consistent(cand: Sequence[int], vals: Sequence[int]) -> bool:
    """Every blank keeps a candidate and every unit can still place each digit."""
    for unit in UNITS:
        have = 0
        for c in unit:
            v = vals[c]
            if v:
                have |= 1 << (v - 1)
            elif not cand[c]:
                return False
            else:
                have |= cand[c]
        if have != ALL:
            return False
    return True


def _logic_solve(grid: Sequence[int], allowed: Iterable[str] = TECHNIQUES) -> Grade:
    """Apply the ``allowed`` techniques, simplest first, until solved or stuck."""
    allowed = frozenset(allowed)
    eliminators = [(n, f) for n, f in _ELIMINATORS if n in allowed]
    vals = [int(v) for v in grid]
    cand = candidates_from_grid(vals)
    counts = dict.fromkeys(TECHNIQUES, 0)
    order: list[tuple[int, int, str]] = []
    ok = _find_conflict(vals) is None and _consistent(cand, vals)
    while ok:
        hit, name = None, ""
        if "lone_single" in allowed:
            hit, name = find_lone_single(cand), "lone_single"
        if hit is None and "hidden_single" in allowed:
            hit, name = find_hidden_single(cand), "hidden_single"
        if hit is not None:
            c, d = hit
            counts[name] += 1
            order.append((c, d, name))
            ok = _place(cand, vals, c, d)  # an emptied peer is the only way a placement fails
            continue
        if 0 not in vals:
            break
        for name, finder in eliminators:
            elims = finder(cand)
            if elims:
                counts[name] += 1
                for c, m in elims:
                    cand[c] &= ~m
                    ok = ok and cand[c] != 0
                break
        else:
            break  # stuck: no technique applies
    solved = ok and 0 not in vals
    return Grade(
        solved=solved,
        techniques=counts,
        order=order,
        grid=np.array(vals, dtype=np.int8),
        contradiction=not ok,
    )


def grade(puzzle, techniques: Iterable[str] = TECHNIQUES) -> Grade:
    """Solve ``puzzle`` with the seven techniques only and report what it took.

    ``techniques`` restricts the solver to a subset of :data:`TECHNIQUES` (e.g. to show that a
    puzzle needs a given technique: solved with all seven, not without that one).

    The unique-rectangle rule assumes a unique solution; on a puzzle with several solutions the
    grader may "solve" it or hit a contradiction, so :func:`is_easy` also checks uniqueness when
    that rule was used.
    """
    unknown = set(techniques) - set(TECHNIQUES)
    if unknown:
        raise ValueError(f"unknown techniques {sorted(unknown)}; choose from {TECHNIQUES}")
    return _logic_solve(_as_board_lenient(puzzle).tolist(), techniques)


def is_easy(puzzle) -> bool:
    """Solvable by the seven techniques alone, with a unique solution ("easy" in Shah et al.)."""
    arr = _as_board_lenient(puzzle).tolist()
    return _is_easy_list(arr)


def _singles_solve(vals: list[int]) -> bool:
    """Fast check: do lone and hidden singles alone fill the board? (implies uniqueness)."""
    vals = list(vals)
    cand = candidates_from_grid(vals)
    blanks = vals.count(0)
    while blanks:
        placed = False
        for c in range(81):  # all lone singles in one sweep
            m = cand[c]
            if m and not m & (m - 1):
                if not _place(cand, vals, c, DIGIT_OF_BIT[m]):
                    return False
                blanks -= 1
                placed = True
        if placed:
            continue
        hit = find_hidden_single(cand)
        if hit is None:
            return False
        if not _place(cand, vals, *hit):
            return False
        blanks -= 1
    return True


def _is_easy_list(vals: list[int]) -> bool:
    if _singles_solve(vals):
        return True
    g = _logic_solve(vals)
    if not g.solved:
        return False
    # Every rule except the unique rectangle is sound, so only UR can hide a second solution.
    return g.techniques["unique_rectangle"] == 0 or _search(vals, 2)[0] == 1


# ---------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------
def random_full_grid(rng: np.random.Generator) -> np.ndarray:
    """A random complete valid grid (randomised backtracking fill, then a random symmetry).

    The three diagonal boxes are independent, so they are filled with random permutations first;
    the rest is completed by search with a random digit order per cell.
    """
    vals = [0] * 81
    for b in (0, 4, 8):
        for c, d in zip(BOXES[b], rng.permutation(9) + 1, strict=True):
            vals[c] = int(d)
    rows, cols, boxes = [0] * 9, [0] * 9, [0] * 9
    for c in range(81):
        if vals[c]:
            bit = 1 << (vals[c] - 1)
            rows[ROW_OF[c]] |= bit
            cols[COL_OF[c]] |= bit
            boxes[BOX_OF[c]] |= bit
    empties = [c for c in range(81) if not vals[c]]
    digit_order = [list(rng.permutation(9)) for _ in range(81)]

    def rec(i: int) -> bool:
        if i == len(empties):
            return True
        c = empties[i]
        r, k, b = ROW_OF[c], COL_OF[c], BOX_OF[c]
        used = rows[r] | cols[k] | boxes[b]
        for j in digit_order[c]:
            bit = 1 << int(j)
            if used & bit:
                continue
            rows[r] |= bit
            cols[k] |= bit
            boxes[b] |= bit
            vals[c] = int(j) + 1
            if rec(i + 1):
                return True
            rows[r] ^= bit
            cols[k] ^= bit
            boxes[b] ^= bit
        vals[c] = 0
        return False

    rec(0)
    grid = np.array(vals, dtype=np.int8)[None]
    return augment(grid, grid, rng)[1][0]


def _has_other_solution(vals: list[int], cell: int, digit: int) -> bool:
    """With ``cell`` blanked, is there a solution whose ``cell`` is not ``digit``?"""
    return _search(vals, 1, {cell: 1 << (digit - 1)})[0] > 0


def _carve(solution: np.ndarray, rng: np.random.Generator, keep) -> list[int]:
    """Blank cells of ``solution`` in random order whenever ``keep(puzzle, cell, digit)`` allows."""
    vals = [int(v) for v in solution]
    for c in rng.permutation(81).tolist():
        d = vals[c]
        vals[c] = 0
        if not keep(vals, c, d):
            vals[c] = d
    return vals


def _keep_easy(vals: list[int], cell: int, digit: int) -> bool:
    return _is_easy_list(vals)


def _keep_unique(vals: list[int], cell: int, digit: int) -> bool:
    # The puzzle before blanking had one solution (the known grid), so it stays unique unless
    # some solution puts a different digit in the blanked cell.
    return not _has_other_solution(vals, cell, digit)


def generate(
    rng: np.random.Generator | int | None = None,
    difficulty: str = "easy",
    max_tries: int = 200,
) -> tuple[np.ndarray, np.ndarray]:
    """One random puzzle with a unique solution: ``(puzzle, solution)``, both int8 (81,).

    ``"easy"``: from a random full grid, cells are blanked in random order as long as the puzzle
    stays solvable by the seven techniques (so it is unique and easy, and locally minimal for
    that property). ``"hard"``: cells are blanked in random order while the solution stays unique
    (a minimal puzzle); the result is kept only if the seven techniques cannot solve it,
    otherwise a new grid is tried (up to ``max_tries`` times).
    """
    rng = np.random.default_rng(rng) if not isinstance(rng, np.random.Generator) else rng
    if difficulty not in ("easy", "hard"):
        raise ValueError(f"difficulty must be 'easy' or 'hard', got {difficulty!r}")
    for _ in range(max_tries):
        solution = random_full_grid(rng)
        if difficulty == "easy":
            return np.array(_carve(solution, rng, _keep_easy), dtype=np.int8), solution
        puzzle = _carve(solution, rng, _keep_unique)
        if not _singles_solve(puzzle) and not _logic_solve(puzzle).solved:
            return np.array(puzzle, dtype=np.int8), solution
    raise RuntimeError(f"no hard puzzle found in {max_tries} tries")


def _generate_one(args: tuple[np.random.SeedSequence, str]) -> tuple[np.ndarray, np.ndarray]:
    seq, difficulty = args
    return generate(np.random.default_rng(seq), difficulty)


def _pool_context():
    """Fork on Linux (workers start at once, without re-importing the package and its extras);
    spawn elsewhere. Results do not depend on it: every item has its own seed."""
    method = "fork" if sys.platform == "linux" else "spawn"
    return multiprocessing.get_context(method)


def generate_dataset(
    n: int,
    seed: int = 0,
    difficulty: str = "easy",
    processes: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` puzzles and their solutions as int8 arrays ``(n, 81)``.

    Item ``i`` is generated from the i-th child of ``np.random.SeedSequence(seed)``, so the result
    depends only on ``(n, seed, difficulty)``, not on ``processes``; and the first ``m`` items of
    a larger data set equal the data set of size ``m`` for the same seed.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if difficulty not in ("easy", "hard"):
        raise ValueError(f"difficulty must be 'easy' or 'hard', got {difficulty!r}")
    jobs = [(s, difficulty) for s in np.random.SeedSequence(seed).spawn(n)]
    if processes > 1 and n > 1:
        with _pool_context().Pool(processes) as pool:
            pairs = pool.map(_generate_one, jobs, chunksize=max(1, n // (4 * processes)))
    else:
        pairs = [_generate_one(j) for j in jobs]
    if not pairs:
        return np.zeros((0, 81), np.int8), np.zeros((0, 81), np.int8)
    return np.stack([p for p, _ in pairs]), np.stack([s for _, s in pairs])


def save_dataset(path: str | Path, puzzles: np.ndarray, solutions: np.ndarray, **meta) -> Path:
    """Write puzzles and solutions (and scalar metadata, e.g. seed, difficulty) to ``.npz``."""
    puzzles = np.asarray(puzzles, dtype=np.int8)
    solutions = np.asarray(solutions, dtype=np.int8)
    if puzzles.shape != solutions.shape or puzzles.ndim != 2 or puzzles.shape[1] != 81:
        raise SudokuError(
            f"puzzles and solutions must both be (n, 81); got {puzzles.shape}, {solutions.shape}"
        )
    path = Path(path)
    extra = {f"meta_{k}": np.asarray(v) for k, v in meta.items()}
    np.savez_compressed(path, puzzles=puzzles, solutions=solutions, **extra)
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def load_dataset(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read ``(puzzles, solutions)`` written by :func:`save_dataset`."""
    with np.load(Path(path)) as data:
        return data["puzzles"].astype(np.int8), data["solutions"].astype(np.int8)


# ---------------------------------------------------------------------------------------------
# Augmentation (vectorised)
# ---------------------------------------------------------------------------------------------
_PERM3 = np.array(list(itertools.permutations(range(3))), dtype=np.intp)  # (6, 3)


def _line_maps(rng: np.random.Generator, b: int) -> np.ndarray:
    """Per board, a map new line -> old line: permute the 3 bands and the lines inside each."""
    band = _PERM3[rng.integers(0, 6, b)]  # (B, 3)
    inner = _PERM3[rng.integers(0, 6, (b, 3))]  # (B, 3, 3)
    return (band[:, :, None] * 3 + inner).reshape(b, 9)


def augment_maps(rng: np.random.Generator, b: int) -> tuple[np.ndarray, np.ndarray]:
    """The random symmetries :func:`augment` applies to ``b`` boards: ``src`` ``(b, 81)``, the
    old cell each new cell takes, and ``relabel`` ``(b, 10)`` int8, the new digit of each old
    one (0, a blank, stays 0). Apply them with numpy (:func:`augment`) or on any torch device.

    Parameters
    ----------
    rng : np.random.Generator
        The symmetries' randomness.
    b : int
        Boards.

    Returns
    -------
    src, relabel : np.ndarray
        The cell map and the digit map.

    Examples
    --------
    >>> src, relabel = augment_maps(np.random.default_rng(0), 2)
    >>> src.shape, relabel.shape, sorted(src[0]) == list(range(81)), int(relabel[0, 0])
    ((2, 81), (2, 10), True, 0)
    """
    rows = _line_maps(rng, b)
    cols = _line_maps(rng, b)
    src = rows[:, :, None] * 9 + cols[:, None, :]  # (B, 9, 9): new cell -> old cell
    flip = rng.random(b) < 0.5
    src[flip] = src[flip].transpose(0, 2, 1)
    # Digit relabelling through a per-board lookup table; row 0 keeps blanks at 0.
    relabel = np.zeros((b, 10), dtype=np.int8)
    relabel[:, 1:] = np.argsort(rng.random((b, 9)), axis=1) + 1
    return src.reshape(b, 81), relabel


def augment(
    puzzles: np.ndarray, solutions: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Apply one random validity-preserving symmetry per board to puzzles and solutions alike.

    Per board, independently: digit relabelling (blanks stay 0), band permutation, row
    permutation within each band, stack permutation, column permutation within each stack, and
    a transpose with probability 1/2 (:func:`augment_maps`). Both arrays are ``(B, 81)``;
    returns new arrays.
    """
    p = np.asarray(puzzles)
    s = np.asarray(solutions)
    if p.shape != s.shape or p.ndim != 2 or p.shape[1] != 81:
        raise SudokuError(f"puzzles and solutions must both be (B, 81); got {p.shape}, {s.shape}")
    b = p.shape[0]
    src, relabel = augment_maps(rng, b)
    rows_idx = np.arange(b)[:, None]
    p_new = relabel[rows_idx, p[rows_idx, src]].astype(p.dtype, copy=False)
    s_new = relabel[rows_idx, s[rows_idx, src]].astype(s.dtype, copy=False)
    return p_new, s_new
