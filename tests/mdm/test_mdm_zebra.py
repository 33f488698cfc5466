"""Zebra puzzles: unique generation, solver, checker, token encoding, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.mdm import zebra as Z


@pytest.fixture(scope="module")
def puzzles() -> list[Z.ZebraPuzzle]:
    return Z.generate_dataset(12, seed=0)


def test_generated_puzzles_have_exactly_one_solution(puzzles):
    sizes = set()
    for pz in puzzles:
        n, m = pz.n_houses, pz.n_attrs
        sizes.add((n, m))
        assert Z.MIN_SIZE <= n <= Z.MAX_SIZE and Z.MIN_SIZE <= m <= Z.MAX_SIZE
        assert pz.solution.shape == (n, m)
        # every attribute is a permutation of its values over the houses
        assert (np.sort(pz.solution, axis=0) == np.arange(n)[:, None]).all()
        assert Z.count_solutions(n, m, pz.clues, limit=3) == 1
        assert (Z.solve(n, m, pz.clues) == pz.solution).all()
    assert len(sizes) >= 6  # sizes are drawn from 3..6 x 3..6


def test_no_clue_is_redundant(puzzles):
    for pz in puzzles[:6]:
        for k in range(len(pz.clues)):
            rest = pz.clues[:k] + pz.clues[k + 1 :]
            assert Z.count_solutions(pz.n_houses, pz.n_attrs, rest) == 2


def test_checker_accepts_solution_and_rejects_perturbations(puzzles):
    rng = np.random.default_rng(0)
    for pz in puzzles:
        assert Z.check(pz, pz.solution)
        # swap two houses' values of one attribute: still a permutation, but the unique
        # solution is the only grid satisfying all clues, so some clue must break
        g = pz.solution.copy()
        a = int(rng.integers(pz.n_attrs))
        h1, h2 = rng.choice(pz.n_houses, 2, replace=False)
        g[[h1, h2], a] = g[[h2, h1], a]
        assert not Z.check(pz, g)
        dup = pz.solution.copy()
        dup[0, 0] = dup[1, 0]  # not a permutation
        assert not Z.check(pz, dup)
        assert not Z.check(pz, pz.solution[:, :-1])  # wrong shape


def test_clue_semantics_by_hand():
    where = np.array([[0, 1, 2], [2, 0, 1]])  # attr 0: value v in house v; attr 1 shifted
    assert Z.Clue("same", (0, 2), (1, 0)).holds(where)
    assert Z.Clue("not_same", (0, 0), (1, 0)).holds(where)
    assert Z.Clue("left_of", (0, 0), (0, 2)).holds(where)
    assert not Z.Clue("left_of", (0, 2), (0, 0)).holds(where)
    assert Z.Clue("right_of", (1, 0), (1, 1)).holds(where)
    assert Z.Clue("next_to", (0, 1), (1, 1)).holds(where)
    assert not Z.Clue("next_to", (0, 0), (0, 2)).holds(where)
    assert Z.Clue("at", (1, 1), house=0).holds(where)
    assert Z.Clue("not_at", (1, 1), house=2).holds(where)


def test_solver_on_a_hand_made_puzzle():
    # 3 houses, 3 attributes; pin attr 0 and 1 by "at", attr 2 by relations.
    clues = [
        Z.Clue("at", (0, 0), house=0),
        Z.Clue("at", (0, 1), house=1),
        Z.Clue("same", (1, 2), (0, 0)),
        Z.Clue("right_of", (1, 0), (1, 1)),
        Z.Clue("same", (2, 1), (0, 2)),
        Z.Clue("next_to", (2, 0), (0, 0)),
    ]
    grid = Z.solve(3, 3, clues)
    expected = np.array([[0, 2, 2], [1, 1, 0], [2, 0, 1]])
    assert (grid == expected).all()
    assert Z.count_solutions(3, 3, clues) == 1
    assert Z.count_solutions(3, 3, clues[:-1]) == 2
    assert Z.solve(3, 3, clues + [Z.Clue("at", (2, 0), house=0)]) is None


def test_encoding_round_trip_and_vocabulary(puzzles):
    assert len(Z.VOCAB) == Z.VOCAB_SIZE
    prompts, answers = Z.encode_dataset(puzzles)
    assert answers.shape == (len(puzzles), Z.ANSWER_LEN)
    assert prompts.max() < Z.VOCAB_SIZE and answers.max() < Z.VOCAB_SIZE
    for pz, prompt, answer in zip(puzzles, prompts, answers, strict=True):
        n, m = pz.n_houses, pz.n_attrs
        assert Z.VOCAB[prompt[0]] == f"H{n}" and Z.VOCAB[prompt[1]] == f"N{m}"
        body = prompt[prompt != Z.PAD]
        assert (body == Z.SEP).sum() == len(pz.clues) + 1
        assert (Z.decode_answer(answer, n, m) == pz.solution).all()
        mask = Z.answer_mask(n, m)
        assert mask.sum() == n * m and (answer[~mask] == Z.PAD).all()
        assert all(Z.VOCAB[t].startswith("P") for t in answer[mask])
        # item-major: cell a * 6 + v names the house of value v of attribute a
        a, v = pz.clues[0].x
        assert Z.VOCAB[answer[a * Z.MAX_SIZE + v]] == f"P{list(pz.solution[:, a]).index(v)}"
    p0 = puzzles[0]
    masked = answers[0].copy()
    masked[0] = Z.MASK  # item (0, 0): attribute 0 no longer a placement
    grid = Z.decode_answer(masked, p0.n_houses, p0.n_attrs)
    assert (grid[:, 0] == -1).all() and (grid[:, 1:] == p0.solution[:, 1:]).all()
    assert not Z.check(p0, grid)
    clash = answers[0].copy()
    clash[1] = clash[0]  # items (0, 0) and (0, 1) in one house
    assert not Z.check(p0, Z.decode_answer(clash, p0.n_houses, p0.n_attrs))
    batch = Z.decode_answer(answers[:2], 3, 3)
    assert batch.shape == (2, 3, 3)
    with pytest.raises(Z.ZebraError):
        Z.encode_dataset(puzzles, prompt_len=5)


def test_generation_is_deterministic_and_size_checked():
    a = Z.generate_dataset(3, seed=5, n_houses=5, n_attrs=4)
    b = Z.generate_dataset(3, seed=5, n_houses=5, n_attrs=4)
    assert [p.clues for p in a] == [p.clues for p in b]
    assert all((p.solution == q.solution).all() for p, q in zip(a, b, strict=True))
    assert all(p.solution.shape == (5, 4) for p in a)
    c = Z.generate_dataset(3, seed=6, n_houses=5, n_attrs=4)
    assert [p.clues for p in a] != [p.clues for p in c]
    with pytest.raises(Z.ZebraError):
        Z.generate_puzzle(0, 7, 3)
    with pytest.raises(Z.ZebraError):
        Z.generate_dataset(1, n_houses=2)


def test_describe_lists_every_clue(puzzles):
    text = Z.describe(puzzles[0])
    assert len(text.splitlines()) == len(puzzles[0].clues) + 1


def test_two_processes_give_the_same_puzzles():
    one = Z.generate_dataset(4, seed=9, n_houses=4, n_attrs=3)
    two = Z.generate_dataset(4, seed=9, n_houses=4, n_attrs=3, processes=2)
    assert [p.clues for p in one] == [p.clues for p in two]


def test_lookup_puzzles_are_at_clues_with_one_solution():
    lookups = Z.generate_dataset(20, seed=3, lookup=True)
    assert {(p.n_houses, p.n_attrs) for p in lookups} != {(lookups[0].n_houses, lookups[0].n_attrs)}
    for p in lookups:
        assert {c.kind for c in p.clues} == {"at"}
        assert len(p.clues) == (p.n_houses - 1) * p.n_attrs
        assert Z.check(p, p.solution)
        assert Z.count_solutions(p.n_houses, p.n_attrs, p.clues) == 1
    with pytest.raises(Z.ZebraError):
        Z.generate_lookup_puzzle(0, 3, 7)
