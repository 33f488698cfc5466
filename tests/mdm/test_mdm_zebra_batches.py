"""Zebra training batches built with numpy over the whole batch (``augmented_batch``): the same
layout as ``encode_batch``, every row a valid puzzle under a symmetry, the distribution of
``zebra.augment``'s symmetries."""

import numpy as np
import pytest

from icml25.mdm import zebra
from icml25.mdm.zebra_mdm import ZebraTable, augmented_batch, encode_batch


@pytest.fixture(scope="module")
def puzzles():
    return zebra.generate_dataset(24, seed=5, n_houses=5, n_attrs=4)


def _decode_row(tokens: np.ndarray) -> zebra.ZebraPuzzle:
    """The puzzle a row of a batch spells: its clues from the prompt, its solution from the
    answer cells."""
    prompt = [int(t) for t in tokens[zebra.ANSWER_LEN:] if t != zebra.PAD]
    n, m = prompt[0] - zebra._HOUSES0, prompt[1] - zebra._ATTRS0
    assert prompt[2] == zebra.SEP
    clues, i = [], 3
    while i < len(prompt):
        kind = zebra.CLUE_KINDS[prompt[i] - zebra._KIND0]
        x = (prompt[i + 1] - zebra._ATTR0, prompt[i + 2] - zebra._VALUE0)
        if kind in ("at", "not_at"):
            clues.append(zebra.Clue(kind, x, house=prompt[i + 3] - zebra._POS0))
            assert prompt[i + 4] == zebra.SEP
            i += 5
        else:
            y = (prompt[i + 3] - zebra._ATTR0, prompt[i + 4] - zebra._VALUE0)
            clues.append(zebra.Clue(kind, x, y))
            assert prompt[i + 5] == zebra.SEP
            i += 6
    grid = zebra.decode_answer(tokens[:zebra.ANSWER_LEN], n, m)
    return zebra.ZebraPuzzle(n, m, clues, grid)


def test_without_augmentation_a_batch_is_encode_batch(puzzles):
    table = ZebraTable.from_puzzles(puzzles)
    idx = np.array([3, 0, 7, 7, 11])
    tokens, maskable = augmented_batch(table, idx, np.random.default_rng(0), augment=False)
    want_tokens, want_mask = encode_batch([puzzles[i] for i in idx])
    assert (tokens == want_tokens).all() and (maskable == want_mask).all()


def test_every_augmented_row_is_a_puzzle_whose_answer_is_its_unique_solution(puzzles):
    table = ZebraTable.from_puzzles(puzzles)
    rng = np.random.default_rng(1)
    idx = rng.choice(len(puzzles), 64)
    tokens, maskable = augmented_batch(table, idx, rng)
    assert tokens.shape[0] == 64 and (maskable[:, :zebra.ANSWER_LEN].sum(1) == 20).all()
    mirrored = changed = 0
    for row, i in zip(tokens.numpy(), idx, strict=True):
        pz = _decode_row(row)
        original = puzzles[i]
        assert (pz.n_houses, pz.n_attrs) == (5, 4) and len(pz.clues) == len(original.clues)
        assert zebra.check(pz, pz.solution)  # the answer satisfies every clue ...
        assert zebra.count_solutions(5, 4, pz.clues) == 1  # ... and is the only solution
        kinds = sorted(c.kind for c in pz.clues)
        plain = sorted(c.kind for c in original.clues)
        swap = {"left_of": "right_of", "right_of": "left_of"}
        assert kinds in (plain, sorted(swap.get(k, k) for k in plain))
        mirrored += kinds != plain
        changed += not (pz.solution == original.solution).all()
    assert mirrored > 5 and changed > 50  # symmetries are applied (mirror about half the time)


def test_the_symmetries_are_drawn_as_zebra_augment_draws_them(puzzles):
    # Which house holds attribute 0's value 0, over many draws of one puzzle: uniform over the
    # 5 houses under both augmentations (values relabelled, houses mirrored).
    table = ZebraTable.from_puzzles(puzzles)
    rng = np.random.default_rng(2)
    tokens, _ = augmented_batch(table, np.zeros(2000, dtype=int), rng)
    houses = tokens[:, 0].numpy() - zebra._POS0
    counts = np.bincount(houses, minlength=5)
    assert counts.min() > 2000 / 5 - 4 * np.sqrt(2000 * 0.2 * 0.8)
    ref = [zebra.encode(zebra.augment(puzzles[0], rng))[1][0] - zebra._POS0 for _ in range(500)]
    assert set(ref) == set(range(5)) == set(houses.tolist())


def test_a_batch_of_several_sizes_or_too_long_is_refused():
    mixed = (zebra.generate_dataset(2, seed=0, n_houses=3, n_attrs=3)
             + zebra.generate_dataset(2, seed=0, n_houses=4, n_attrs=3))
    table = ZebraTable.from_puzzles(mixed)
    with pytest.raises(ValueError, match="one size class"):
        augmented_batch(table, np.arange(4), np.random.default_rng(0))
    with pytest.raises(zebra.ZebraError, match="room for"):
        augmented_batch(table, np.arange(2), np.random.default_rng(0), max_prompt=5)
    with pytest.raises(ValueError, match="no puzzles"):
        ZebraTable.from_puzzles([])
