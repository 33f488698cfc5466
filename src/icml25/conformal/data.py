"""Data for the reproductions: generated pools (no downloads) and a loader for a user's scores."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

__all__ = [
    "DroppedRowsWarning",
    "binomial_pool",
    "heteroskedastic_pool",
    "load_multilabel_scores",
    "make_multilabel_scores",
    "random_subsets",
]


def binomial_pool(n_rows: int = 10_010, n_draws: int = 4, rng=None) -> np.ndarray:
    """Section 5.1 pool: ``n_rows`` x K Uniform(0,1) values; loss(lambda) = share > lambda."""
    rng = np.random.default_rng(rng)
    return rng.uniform(size=(n_rows, n_draws))


def heteroskedastic_pool(n_rows: int = 5_200, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """Section 5.2 pool: X ~ U(0, 4), Y | X ~ N(0, X^2). Returns (X, Y)."""
    rng = np.random.default_rng(rng)
    x = rng.uniform(0.0, 4.0, size=n_rows)
    return x, rng.normal(0.0, 1.0, size=n_rows) * x


def make_multilabel_scores(n_samples: int = 4_952, n_classes: int = 80, *,
                           mean_labels: float = 2.9, separation: float = 4.5, noise: float = 1.0,
                           rng=None) -> tuple[np.ndarray, np.ndarray]:
    """A generated stand-in for the MS-COCO score file: (scores, labels), both (n, K).

    Class prevalences fall off like a power law (a few common classes, many rare ones, about
    ``mean_labels`` labels per example, at least one each). A score is the sigmoid of the class's
    prior log-odds, plus ``separation`` for a present label, plus Gaussian ``noise``: a calibrated-
    looking but imperfect multilabel classifier. Shapes match the COCO file (4,952 x 80).
    """
    rng = np.random.default_rng(rng)
    if n_samples < 2 or n_classes < 2:
        raise ValueError("need at least 2 samples and 2 classes")
    weight = 1.0 / np.arange(1, n_classes + 1) ** 0.8
    prevalence = np.clip(weight * mean_labels / weight.sum(), 1e-4, 0.6)
    labels = rng.random((n_samples, n_classes)) < prevalence
    empty = np.flatnonzero(~labels.any(axis=1))
    labels[empty, rng.choice(n_classes, size=empty.size, p=prevalence / prevalence.sum())] = True
    prior = np.log(prevalence / (1 - prevalence))
    logit = prior + separation * labels + noise * rng.standard_normal(labels.shape)
    return 1.0 / (1.0 + np.exp(-logit)), labels.astype(np.int8)


class DroppedRowsWarning(UserWarning):
    """Rows with a missing cell were left out of a user's table (``on_missing="drop"``); the
    message says how many, which lines and which columns."""


def load_multilabel_scores(path: str | Path, on_missing: str = "error"
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Read a user's (scores, labels) file: ``.npz`` with arrays ``scores`` (or ``sgmd``) and
    ``labels``, or a table with K score columns followed by K 0/1 label columns, read by
    :func:`icml25.core.read_table` (comma, semicolon or tab; decimal point or comma; an
    optional header). A missing cell (empty, NA, NaN, ...) raises, naming its line and column,
    under ``on_missing="error"``; ``"drop"`` leaves its row out with a
    :class:`DroppedRowsWarning`. Scores and labels must be complete, so ``"keep"`` fails on
    the first missing one."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no score file at {path}")
    if path.suffix == ".npz":
        with np.load(path) as f:
            keys = set(f.files)
            skey = "scores" if "scores" in keys else "sgmd" if "sgmd" in keys else None
            if skey is None or "labels" not in keys:
                raise ValueError(f"{path}: expected arrays 'scores' (or 'sgmd') and 'labels', "
                                 f"found {sorted(keys)}")
            scores, labels = np.asarray(f[skey], float), np.asarray(f["labels"])
    else:
        from icml25.core.table import read_table

        sel = read_table(path).numeric(None, on_missing=on_missing)
        if sel.dropped_lines:
            warnings.warn(sel.dropped_report(), DroppedRowsWarning, stacklevel=2)
        table = sel.X
        if table.shape[1] % 2:
            raise ValueError(f"{path}: a CSV needs K score columns then K label columns")
        k = table.shape[1] // 2
        scores, labels = table[:, :k], table[:, k:]
    if scores.shape != labels.shape or scores.ndim != 2:
        raise ValueError(f"scores {scores.shape} and labels {labels.shape} must be the same 2-D "
                         "shape (examples x classes)")
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError("labels must be 0/1")
    return scores, labels.astype(np.int8)


def random_subsets(n_pool: int, size: int, n_trials: int, rng) -> np.ndarray:
    """``n_trials`` random calibration index sets (without replacement), shape (n_trials, size).

    Each row is the first ``size`` distinct values of an i.i.d. uniform stream of pool indices,
    which is a uniformly random ``size``-subset (by symmetry); rows whose stream is too short are
    drawn again. For size << n_pool this touches O(size) numbers per trial, not O(n_pool).
    """
    rng = np.random.default_rng(rng)
    if size >= n_pool:
        raise ValueError(f"calibration size {size} must be smaller than the pool ({n_pool})")
    if size * 4 > n_pool:  # dense subsets: random keys + argpartition
        out = np.empty((n_trials, size), dtype=np.intp)
        block = max(1, 4_000_000 // n_pool)
        for start in range(0, n_trials, block):
            stop = min(n_trials, start + block)
            keys = rng.random((stop - start, n_pool))
            out[start:stop] = np.argpartition(keys, size - 1, axis=1)[:, :size]
        return out
    # Expected distinct values among m draws: N (1 - exp(-m/N)); take m with room to spare.
    m = size
    while n_pool * -np.expm1(-m / n_pool) < size + 4 * math.sqrt(size) + 2:
        m += max(1, size // 20)
    out = np.empty((n_trials, size), dtype=np.intp)
    todo = np.arange(n_trials)
    while todo.size:
        draws = rng.integers(0, n_pool, (todo.size, m))
        order = np.argsort(draws, axis=1, kind="stable")
        srt = np.take_along_axis(draws, order, axis=1)
        first = np.ones(srt.shape, dtype=bool)
        first[:, 1:] = srt[:, 1:] != srt[:, :-1]
        keep = np.zeros(draws.shape, dtype=bool)  # first occurrences, in stream order
        np.put_along_axis(keep, order, first, axis=1)
        enough = keep.sum(axis=1) >= size
        rank = np.cumsum(keep, axis=1)
        take = keep & (rank <= size)
        good = np.flatnonzero(enough)
        out[todo[good]] = draws[good][take[good]].reshape(-1, size)
        todo = todo[~enough]
    return out
