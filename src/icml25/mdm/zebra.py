"""Zebra (Einstein) puzzles: generation with a unique solution, a solver, a checker, an encoding.

A puzzle has ``n_houses`` houses in a row (3-6) and ``n_attrs`` attributes (3-6), e.g. colour,
pet, drink. Every attribute has ``n_houses`` values and each value sits in exactly one house,
so an attribute is a permutation of its values over the houses. The solution is an int array
``solution[house, attr] = value`` (values ``0..n_houses-1``).

A clue speaks about *items* ``(attr, value)`` and the house ``H(item)`` that holds them:

========== ======================================== =================================
kind       meaning                                  operands
========== ======================================== =================================
same       H(x) == H(y)                             x, y (different attributes)
not_same   H(x) != H(y)                             x, y (different attributes)
left_of    H(x) <  H(y)  (somewhere to the left)    x, y
right_of   H(x) >  H(y)  (somewhere to the right)   x, y
next_to    abs(H(x) - H(y)) == 1                    x, y
at         H(x) == house                            x, house
not_at     H(x) != house                            x, house
========== ======================================== =================================

The generator draws a random solution, adds random *true* clues until the solution is unique
(checked by a small constraint solver: house-domain bit masks per item, propagation of every
clue and of each attribute's all-different rule, then branching on the smallest domain), and
finally drops every clue that is not needed for uniqueness, in random order.

Token encoding for a masked-diffusion model (fixed vocabulary, :data:`VOCAB`)::

    0 PAD   1 MASK   2 SEP
    3..6    H3..H6     number of houses        7..10   N3..N6   number of attributes
    11..17  the 7 clue kinds, in the order of :data:`CLUE_KINDS`
    18..23  A0..A5     attribute index          24..29  V0..V5   value index
    30..35  P0..P5     house index (0 = leftmost)

    prompt = H<n> N<m> SEP, then per clue: KIND A V A V SEP   (binary clues, 6 tokens)
                                         or KIND A V P SEP     (at / not_at, 5 tokens)
    answer = 36 tokens, one per item in item-major order: answer[a * 6 + v] = P<house of item
             (a, v)>, PAD where a >= n_attrs or v >= n_houses (see :func:`answer_mask`).

The answer names each item's house rather than each house's values, so a clue names the answer
cells it is about (``same A0 V2 A3 V1``: cells (0, 2) and (3, 1) hold the same house) instead of
values a model would first have to search the grid for; models read clues far sooner this way
(``benchmarks/mdm_zebra_lookup.py``, docs/mdm.md).

Example
-------
>>> import numpy as np
>>> pz = generate_puzzle(np.random.default_rng(0), 4, 3)
>>> count_solutions(pz.n_houses, pz.n_attrs, pz.clues), check(pz, pz.solution)
(1, True)
>>> prompt, answer = encode(pz)
>>> bool((decode_answer(answer, 4, 3) == pz.solution).all())
True
"""

from __future__ import annotations

import json
import multiprocessing
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

__all__ = [
    "ANSWER_LEN",
    "CLUE_KINDS",
    "MAX_SIZE",
    "MIN_SIZE",
    "VOCAB",
    "VOCAB_SIZE",
    "Clue",
    "ZebraError",
    "ZebraPuzzle",
    "answer_mask",
    "augment",
    "check",
    "count_solutions",
    "decode_answer",
    "describe",
    "encode",
    "encode_dataset",
    "generate_dataset",
    "generate_lookup_puzzle",
    "generate_puzzle",
    "load_puzzles",
    "save_puzzles",
    "solve",
]

MIN_SIZE, MAX_SIZE = 3, 6
CLUE_KINDS: tuple[str, ...] = (
    "same",
    "not_same",
    "left_of",
    "right_of",
    "next_to",
    "at",
    "not_at",
)
_BINARY = frozenset(CLUE_KINDS[:5])
# How often the generator proposes each kind; "at" is rare because it pins an item at once.
_KIND_WEIGHTS = np.array([0.25, 0.15, 0.1, 0.1, 0.15, 0.07, 0.18])

# ----- vocabulary -----------------------------------------------------------------------------
PAD, MASK, SEP = 0, 1, 2
_HOUSES0 = 3 - MIN_SIZE  # token of "H<n>" is _HOUSES0 + n
_ATTRS0 = 7 - MIN_SIZE
_KIND0, _ATTR0, _VALUE0, _POS0 = 11, 18, 24, 30
VOCAB_SIZE = 36
ANSWER_LEN = MAX_SIZE * MAX_SIZE


def _vocab() -> list[str]:
    names = ["PAD", "MASK", "SEP"]
    names += [f"H{n}" for n in range(MIN_SIZE, MAX_SIZE + 1)]
    names += [f"N{n}" for n in range(MIN_SIZE, MAX_SIZE + 1)]
    names += [k.upper() for k in CLUE_KINDS]
    for prefix in "AVP":
        names += [f"{prefix}{i}" for i in range(MAX_SIZE)]
    return names


#: Token id -> readable name (``VOCAB[i]``); ``len(VOCAB) == VOCAB_SIZE``.
VOCAB: tuple[str, ...] = tuple(_vocab())
assert len(VOCAB) == VOCAB_SIZE

# Human names for describe(); purely cosmetic.
_ATTR_NAMES = ["colour", "nationality", "drink", "pet", "sport", "job"]
_VALUE_NAMES = [
    ["red", "green", "blue", "yellow", "white", "black"],
    ["Brit", "Swede", "Dane", "German", "Norwegian", "Italian"],
    ["tea", "coffee", "milk", "beer", "water", "juice"],
    ["dog", "bird", "cat", "horse", "fish", "rabbit"],
    ["tennis", "golf", "chess", "rowing", "judo", "polo"],
    ["baker", "doctor", "pilot", "teacher", "painter", "farmer"],
]


class ZebraError(ValueError):
    """A malformed Zebra puzzle, clue or grid size."""


@dataclass(frozen=True)
class Clue:
    """One clue. ``x``/``y`` are items ``(attr, value)``; ``house`` is for ``at``/``not_at``."""

    kind: str
    x: tuple[int, int]
    y: tuple[int, int] | None = None
    house: int | None = None

    def holds(self, where: np.ndarray) -> bool:
        """True if the clue is satisfied, ``where[attr, value]`` being the item's house."""
        hx = int(where[self.x])
        if self.kind in ("at", "not_at"):
            return (hx == self.house) == (self.kind == "at")
        hy = int(where[self.y])
        return {
            "same": hx == hy,
            "not_same": hx != hy,
            "left_of": hx < hy,
            "right_of": hx > hy,
            "next_to": abs(hx - hy) == 1,
        }[self.kind]


@dataclass
class ZebraPuzzle:
    """A Zebra puzzle: sizes, clues and the (unique) solution ``(n_houses, n_attrs)``."""

    n_houses: int
    n_attrs: int
    clues: list[Clue]
    solution: np.ndarray


def _check_sizes(n_houses: int, n_attrs: int) -> None:
    for name, v in (("n_houses", n_houses), ("n_attrs", n_attrs)):
        if not MIN_SIZE <= int(v) <= MAX_SIZE:
            raise ZebraError(f"{name} must lie in {MIN_SIZE}..{MAX_SIZE}, got {v}")


def _where(grid: np.ndarray) -> np.ndarray:
    """Invert a solution grid: ``where[attr, value] = house``."""
    n, m = grid.shape
    where = np.empty((m, n), dtype=np.int64)
    where[np.arange(m)[None, :], grid] = np.arange(n)[:, None]
    return where


# ----- the constraint solver ------------------------------------------------------------------
# Item (a, v) is variable a * n + v; its domain is a bit mask over the n houses.


def _lowest(m: int) -> int:
    return (m & -m).bit_length() - 1


def _propagate(dom: list[int], clues: Sequence[Clue], n: int, m: int) -> bool:
    """Shrink the domains to a fixed point; False if some domain becomes empty."""
    full = (1 << n) - 1
    changed = True
    while changed:
        changed = False
        for cl in clues:
            i = cl.x[0] * n + cl.x[1]
            dx = dom[i]
            if cl.kind == "at":
                nx = dx & (1 << cl.house)
                j, ny = i, nx
            elif cl.kind == "not_at":
                nx = dx & ~(1 << cl.house)
                j, ny = i, nx
            else:
                j = cl.y[0] * n + cl.y[1]
                dy = dom[j]
                k = cl.kind
                if k == "same":
                    nx = ny = dx & dy
                elif k == "not_same":
                    nx = dx & ~dy if not dy & (dy - 1) else dx
                    ny = dy & ~dx if not dx & (dx - 1) else dy
                elif k in ("left_of", "right_of"):
                    a, b = (dx, dy) if k == "left_of" else (dy, dx)
                    if not a or not b:
                        return False
                    # a must be left of b: a below b's rightmost house, b above a's leftmost.
                    na = a & ((1 << (b.bit_length() - 1)) - 1)
                    nb = b & ~((1 << (_lowest(a) + 1)) - 1)
                    nx, ny = (na, nb) if k == "left_of" else (nb, na)
                else:  # next_to
                    nx = dx & ((dy << 1) | (dy >> 1)) & full
                    ny = dy & ((dx << 1) | (dx >> 1)) & full
            if nx != dx or ny != dom[j]:
                if not nx or not ny:
                    return False
                dom[i] = nx
                dom[j] = ny
                changed = True
        for a in range(m):  # each attribute is a permutation of its values over the houses
            vs = range(a * n, a * n + n)
            fixed = 0
            for i in vs:
                d = dom[i]
                if not d & (d - 1):
                    if fixed & d:
                        return False
                    fixed |= d
            once = twice = 0
            for i in vs:
                d = dom[i]
                if d & (d - 1):
                    nd = d & ~fixed
                    if nd != d:
                        if not nd:
                            return False
                        dom[i] = d = nd
                        changed = True
                twice |= once & d
                once |= d
            if once != full:
                return False
            hidden = once & ~twice & ~fixed  # a house that only one value can still take
            while hidden:
                bit = hidden & -hidden
                hidden ^= bit
                for i in vs:
                    if dom[i] & bit and dom[i] != bit:
                        dom[i] = bit
                        changed = True
    return True


def _search(dom: list[int], clues, n: int, m: int, limit: int, found: list) -> int:
    if not _propagate(dom, clues, n, m):
        return 0
    best, best_n = -1, n + 1
    for i, d in enumerate(dom):
        c = d.bit_count()
        if 1 < c < best_n:
            best, best_n = i, c
    if best < 0:
        where = np.array([_lowest(d) for d in dom]).reshape(m, n)
        if all(cl.holds(where) for cl in clues):
            found.append(where)
            return 1
        return 0
    total = 0
    d = dom[best]
    while d and total < limit:
        bit = d & -d
        d ^= bit
        child = list(dom)
        child[best] = bit
        total += _search(child, clues, n, m, limit - total, found)
    return total


def _grid_from_where(where: np.ndarray) -> np.ndarray:
    m, n = where.shape
    grid = np.empty((n, m), dtype=np.int64)
    grid[where, np.arange(m)[:, None]] = np.arange(n)[None, :]
    return grid


def count_solutions(n_houses: int, n_attrs: int, clues: Sequence[Clue], limit: int = 2) -> int:
    """Number of solution grids satisfying all ``clues`` (counting stops at ``limit``)."""
    _check_sizes(n_houses, n_attrs)
    dom = [(1 << n_houses) - 1] * (n_houses * n_attrs)
    return _search(dom, list(clues), n_houses, n_attrs, limit, [])


def solve(n_houses: int, n_attrs: int, clues: Sequence[Clue]) -> np.ndarray | None:
    """One solution grid ``(n_houses, n_attrs)`` satisfying the clues, or None."""
    _check_sizes(n_houses, n_attrs)
    found: list[np.ndarray] = []
    dom = [(1 << n_houses) - 1] * (n_houses * n_attrs)
    _search(dom, list(clues), n_houses, n_attrs, 1, found)
    return _grid_from_where(found[0]) if found else None


# ----- generation ------------------------------------------------------------------------------
def _random_clue(rng: np.random.Generator, grid: np.ndarray, where: np.ndarray) -> Clue | None:
    """A random clue that is true of ``grid`` (None if the drawn shape is impossible here)."""
    n, m = grid.shape
    kind = CLUE_KINDS[int(rng.choice(len(CLUE_KINDS), p=_KIND_WEIGHTS))]
    a, v = int(rng.integers(m)), int(rng.integers(n))
    h = int(where[a, v])
    if kind == "at":
        return Clue(kind, (a, v), house=h)
    if kind == "not_at":
        others = [x for x in range(n) if x != h]
        return Clue(kind, (a, v), house=int(rng.choice(others)))
    if kind in ("same", "not_same"):
        b = int(rng.choice([x for x in range(m) if x != a]))
        if kind == "same":
            return Clue(kind, (a, v), (b, int(grid[h, b])))
        w = int(rng.choice([x for x in range(n) if x != int(grid[h, b])]))
        return Clue(kind, (a, v), (b, w))
    b = int(rng.integers(m))
    houses = {
        "left_of": range(h + 1, n),
        "right_of": range(0, h),
        "next_to": [x for x in (h - 1, h + 1) if 0 <= x < n],
    }[kind]
    houses = list(houses)
    if not houses:
        return None
    hy = int(rng.choice(houses))
    return Clue(kind, (a, v), (b, int(grid[hy, b])))


def _random_grid(rng: np.random.Generator | int | None, n_houses: int,
                 n_attrs: int) -> tuple[np.random.Generator, np.ndarray]:
    """The generator and a random solution grid (house, attribute) -> value."""
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    _check_sizes(n_houses, n_attrs)
    return rng, np.stack([rng.permutation(n_houses) for _ in range(n_attrs)], axis=1)


def generate_puzzle(
    rng: np.random.Generator | int | None, n_houses: int, n_attrs: int
) -> ZebraPuzzle:
    """A random puzzle of the given size whose clues have exactly one solution.

    Random true clues are added until the solution is unique, then each clue is dropped (in
    random order) if the rest still pin the solution, so no clue is redundant; the kept clues
    are returned in random order.
    """
    rng, grid = _random_grid(rng, n_houses, n_attrs)
    where = _where(grid)
    clues: list[Clue] = []
    seen: set[Clue] = set()
    while True:
        clue = _random_clue(rng, grid, where)
        if clue is None or clue in seen:
            continue
        seen.add(clue)
        clues.append(clue)
        if count_solutions(n_houses, n_attrs, clues) == 1:
            break
    keep = [True] * len(clues)
    for k in rng.permutation(len(clues)).tolist():  # drop clues the others make redundant
        keep[k] = False
        trial = [c for c, kp in zip(clues, keep, strict=True) if kp]
        if count_solutions(n_houses, n_attrs, trial) != 1:
            keep[k] = True
    kept = [c for c, kp in zip(clues, keep, strict=True) if kp]
    kept = [kept[i] for i in rng.permutation(len(kept)).tolist()]
    return ZebraPuzzle(n_houses, n_attrs, kept, grid)


def generate_lookup_puzzle(
    rng: np.random.Generator | int | None, n_houses: int, n_attrs: int
) -> ZebraPuzzle:
    """A puzzle whose clues are all ``at``: ``n_houses - 1`` items of every attribute pinned to
    their house, the last one left to all-different.

    Not a puzzle anyone would pose: a curriculum's first stage, where every answer cell is one
    attention hop from the clue that names it (docs/mdm.md, "Zebra").
    """
    rng, grid = _random_grid(rng, n_houses, n_attrs)
    clues = [Clue("at", (a, int(grid[h, a])), house=int(h))
             for a in range(n_attrs) for h in rng.choice(n_houses, n_houses - 1, replace=False)]
    clues = [clues[i] for i in rng.permutation(len(clues)).tolist()]
    return ZebraPuzzle(n_houses, n_attrs, clues, grid)


def _generate_one(args) -> ZebraPuzzle:
    seq, n_houses, n_attrs, lookup = args
    rng = np.random.default_rng(seq)
    n = n_houses if n_houses is not None else int(rng.integers(MIN_SIZE, MAX_SIZE + 1))
    m = n_attrs if n_attrs is not None else int(rng.integers(MIN_SIZE, MAX_SIZE + 1))
    return (generate_lookup_puzzle if lookup else generate_puzzle)(rng, n, m)


def _pool_context():
    # Fork on Linux so workers skip re-importing the package (and torch); spawn elsewhere.
    return multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")


def generate_dataset(
    n: int,
    seed: int = 0,
    n_houses: int | None = None,
    n_attrs: int | None = None,
    processes: int = 1,
    lookup: bool = False,
) -> list[ZebraPuzzle]:
    """``n`` puzzles; sizes fixed or, when None, drawn uniformly from 3..6 per puzzle;
    ``lookup`` makes them :func:`generate_lookup_puzzle` ones.

    Item ``i`` uses the i-th child of ``np.random.SeedSequence(seed)``, so the result depends only
    on the arguments, not on ``processes``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    for v in (n_houses, n_attrs):
        if v is not None:
            _check_sizes(v, MIN_SIZE)
    jobs = [(s, n_houses, n_attrs, lookup) for s in np.random.SeedSequence(seed).spawn(n)]
    if processes > 1 and n > 1:
        with _pool_context().Pool(processes) as pool:
            return pool.map(_generate_one, jobs, chunksize=max(1, n // (4 * processes)))
    return [_generate_one(j) for j in jobs]


# ----- storage and augmentation ---------------------------------------------------------------
def save_puzzles(path: str | Path, puzzles: Sequence[ZebraPuzzle]) -> Path:
    """Write puzzles as JSON lines: sizes, clues ``[kind, x, y, house]`` and the solution."""
    path = Path(path)
    with path.open("w") as f:
        for pz in puzzles:
            clues = [[c.kind, list(c.x), list(c.y) if c.y else None, c.house] for c in pz.clues]
            f.write(json.dumps({"n_houses": pz.n_houses, "n_attrs": pz.n_attrs, "clues": clues,
                                "solution": np.asarray(pz.solution).tolist()}) + "\n")
    return path


def load_puzzles(path: str | Path) -> list[ZebraPuzzle]:
    """Read puzzles written by :func:`save_puzzles` (ZebraError names a malformed line)."""
    out = []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            clues = [Clue(k, tuple(x), tuple(y) if y else None, h) for k, x, y, h in d["clues"]]
            pz = ZebraPuzzle(d["n_houses"], d["n_attrs"], clues, np.array(d["solution"]))
            _check_sizes(pz.n_houses, pz.n_attrs)
        except (ValueError, KeyError, TypeError) as exc:
            raise ZebraError(f"{path}:{i}: not a Zebra puzzle ({exc})") from None
        out.append(pz)
    return out


_MIRRORED = {"left_of": "right_of", "right_of": "left_of"}


def augment(puzzle: ZebraPuzzle, rng: np.random.Generator) -> ZebraPuzzle:
    """The same puzzle under a random symmetry: attributes reordered, values relabelled within
    each attribute, houses mirrored (left/right swapped) half the time, clues shuffled.
    Every symmetry maps the unique solution to the unique solution of the new puzzle."""
    n, m = puzzle.n_houses, puzzle.n_attrs
    attr = rng.permutation(m)  # attribute a becomes attr[a]
    value = [rng.permutation(n) for _ in range(m)]  # value v of attribute a becomes value[a][v]
    mirror = bool(rng.random() < 0.5)

    def item(x: tuple[int, int]) -> tuple[int, int]:
        return int(attr[x[0]]), int(value[x[0]][x[1]])

    clues = []
    for c in puzzle.clues:
        kind = _MIRRORED.get(c.kind, c.kind) if mirror else c.kind
        house = n - 1 - c.house if mirror and c.house is not None else c.house
        clues.append(replace(c, kind=kind, x=item(c.x), y=item(c.y) if c.y else None,
                             house=house))
    clues = [clues[i] for i in rng.permutation(len(clues))]
    sol = np.asarray(puzzle.solution)
    new = np.empty_like(sol)
    for a in range(m):
        new[:, attr[a]] = value[a][sol[:, a]]
    if mirror:
        new = new[::-1].copy()
    return ZebraPuzzle(n, m, clues, new)


# ----- checking --------------------------------------------------------------------------------
def check(puzzle: ZebraPuzzle, grid) -> bool:
    """True if ``grid`` ``(n_houses, n_attrs)`` is a valid assignment satisfying every clue.

    Each attribute column must be a permutation of ``0..n_houses-1``; anything else (wrong
    shape, a -1 from :func:`decode_answer`, a repeated value) gives False.
    """
    g = np.asarray(grid)
    n, m = puzzle.n_houses, puzzle.n_attrs
    if g.shape != (n, m) or not np.issubdtype(g.dtype, np.integer):
        return False
    if not (np.sort(g, axis=0) == np.arange(n)[:, None]).all():
        return False
    where = _where(g.astype(np.int64))
    return all(c.holds(where) for c in puzzle.clues)


# ----- encoding --------------------------------------------------------------------------------
def _clue_tokens(c: Clue) -> list[int]:
    toks = [_KIND0 + CLUE_KINDS.index(c.kind), _ATTR0 + c.x[0], _VALUE0 + c.x[1]]
    if c.kind in _BINARY:
        toks += [_ATTR0 + c.y[0], _VALUE0 + c.y[1]]
    else:
        toks += [_POS0 + c.house]
    return toks + [SEP]


def answer_mask(n_houses: int, n_attrs: int) -> np.ndarray:
    """Bool ``(36,)``: True at the answer positions of the puzzle's items (the rest are PAD)."""
    _check_sizes(n_houses, n_attrs)
    mask = np.zeros((MAX_SIZE, MAX_SIZE), dtype=bool)
    mask[:n_attrs, :n_houses] = True
    return mask.reshape(-1)


def encode(puzzle: ZebraPuzzle) -> tuple[np.ndarray, np.ndarray]:
    """Token ids ``(prompt, answer)``: prompt of variable length, answer of length 36."""
    n, m = puzzle.n_houses, puzzle.n_attrs
    _check_sizes(n, m)
    prompt = [_HOUSES0 + n, _ATTRS0 + m, SEP]
    for c in puzzle.clues:
        prompt += _clue_tokens(c)
    answer = np.full((MAX_SIZE, MAX_SIZE), PAD, dtype=np.int64)
    answer[:m, :n] = _POS0 + _where(np.asarray(puzzle.solution))
    return np.array(prompt, dtype=np.int64), answer.reshape(-1)


def encode_dataset(
    puzzles: Sequence[ZebraPuzzle], prompt_len: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Stack encodings: prompts ``(N, prompt_len)`` right-padded with PAD, answers ``(N, 36)``.

    ``prompt_len`` defaults to the longest prompt; a shorter explicit value raises ZebraError.
    """
    enc = [encode(p) for p in puzzles]
    longest = max((len(p) for p, _ in enc), default=0)
    length = longest if prompt_len is None else prompt_len
    if longest > length:
        raise ZebraError(f"a prompt has {longest} tokens, more than prompt_len={length}")
    prompts = np.full((len(enc), length), PAD, dtype=np.int64)
    for i, (p, _) in enumerate(enc):
        prompts[i, : len(p)] = p
    answers = np.stack([a for _, a in enc]) if enc else np.zeros((0, ANSWER_LEN), np.int64)
    return prompts, answers


def decode_answer(tokens, n_houses: int, n_attrs: int) -> np.ndarray:
    """Grid ``(n_houses, n_attrs)`` of value indices from 36 answer tokens (batch: ``(B, 36)``
    gives ``(B, n_houses, n_attrs)``). An attribute whose items do not take distinct houses (a
    non-house token, two of its items in one house) gets -1 in its whole column, so such a grid
    never passes :func:`check`."""
    _check_sizes(n_houses, n_attrs)
    t = np.asarray(tokens)
    if t.shape[-1] != ANSWER_LEN:
        raise ZebraError(f"expected {ANSWER_LEN} answer tokens, got shape {t.shape}")
    items = t.reshape(-1, MAX_SIZE, MAX_SIZE)[:, :n_attrs, :n_houses].astype(np.int64) - _POS0
    grids = np.full((len(items), n_houses, n_attrs), -1, dtype=np.int64)
    ids = np.arange(n_houses)  # the house indices, and an attribute's value indices
    for b, where in enumerate(items):
        for a in range(n_attrs):
            if (np.sort(where[a]) == ids).all():  # the attribute's items take distinct houses
                grids[b, where[a], a] = ids  # value v sits in house where[a, v]
    return grids.reshape(*t.shape[:-1], n_houses, n_attrs)


def describe(puzzle: ZebraPuzzle) -> str:
    """The clues in English, one per line (houses numbered 1.. from the left)."""

    def item(x: tuple[int, int]) -> str:
        a, v = x
        return f"the {_ATTR_NAMES[a]} {_VALUE_NAMES[a][v]}"

    phrase = {
        "same": "is in the same house as",
        "not_same": "is not in the same house as",
        "left_of": "is somewhere left of",
        "right_of": "is somewhere right of",
        "next_to": "is next to",
    }
    lines = [f"{puzzle.n_houses} houses, {puzzle.n_attrs} attributes."]
    for i, c in enumerate(puzzle.clues, 1):
        if c.kind in _BINARY:
            text = f"{item(c.x)} {phrase[c.kind]} {item(c.y)}"
        else:
            verb = "is" if c.kind == "at" else "is not"
            text = f"{item(c.x)} {verb} in house {c.house + 1}"
        lines.append(f"{i}. {text[0].upper()}{text[1:]}.")
    return "\n".join(lines)
