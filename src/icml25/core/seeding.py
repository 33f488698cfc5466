"""Seeding: one call makes ``random``, NumPy and (when loaded) PyTorch deterministic."""

from __future__ import annotations

import random
import sys

import numpy as np


def seed_everything(seed: int, *, torch: bool | None = None) -> np.random.Generator:
    """Seed ``random``, NumPy's legacy global state and PyTorch; return a fresh Generator.

    ``torch=None`` seeds PyTorch only if it is already imported (so seeding never pays
    torch's import time); ``torch=True`` imports and seeds it; ``torch=False`` leaves it alone.

    Parameters
    ----------
    seed : int
        A non-negative seed (NumPy's legacy state gets ``seed % 2**32``).
    torch : bool or None, default=None
        Whether to seed PyTorch (None: only if already imported).

    Returns
    -------
    numpy.random.Generator
        A fresh Generator seeded with ``seed``.

    Raises
    ------
    ValueError
        If ``seed`` is not a non-negative integer.

    Examples
    --------
    >>> import random
    >>> rng = seed_everything(3, torch=False)
    >>> a = (random.random(), int(rng.integers(100)))
    >>> rng = seed_everything(3, torch=False)
    >>> a == (random.random(), int(rng.integers(100)))
    True
    """
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 (third-party code still uses the global state)
    if torch or (torch is None and "torch" in sys.modules):
        import torch as _torch

        _torch.manual_seed(seed)
    return make_rng(seed)


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A NumPy Generator from a seed, or the Generator itself (like check_random_state).

    Parameters
    ----------
    seed : int, Generator or None
        A seed (None: fresh entropy) or a Generator, returned as it is.

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> int(make_rng(0).integers(100)) == int(make_rng(0).integers(100))
    True
    >>> g = make_rng(1); make_rng(g) is g
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)
