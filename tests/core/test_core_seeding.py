import random

import numpy as np
import pytest

from icml25.core import make_rng, seed_everything


def _draws(seed):
    rng = seed_everything(seed)
    return random.random(), np.random.rand(), rng.normal(size=3).tolist()  # noqa: NPY002


def test_same_seed_same_numbers_different_seed_different_numbers():
    assert _draws(7) == _draws(7)
    assert _draws(7) != _draws(8)


def test_torch_is_seeded_when_requested():
    torch = pytest.importorskip("torch")
    seed_everything(5, torch=True)
    a = torch.rand(4)
    seed_everything(5)  # torch already imported: seeded too
    assert torch.equal(a, torch.rand(4))


def test_make_rng_passes_generators_through():
    g = np.random.default_rng(1)
    assert make_rng(g) is g
    assert make_rng(3).integers(1000) == np.random.default_rng(3).integers(1000)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_bad_seeds_are_rejected(bad):
    with pytest.raises(ValueError, match="seed"):
        seed_everything(bad)
