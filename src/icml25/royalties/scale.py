"""Royalty shares for thousands of holders: permutation sampling in batches that are cells.

The utility is a weighted coverage of the artifact: each holder's data covers a set of the
artifact's n-grams (features), and a coalition's value is the total weight of the features
that at least one of its members covers. Its Shapley values are exact in closed form (each
feature's weight split evenly among the holders that cover it), so the sampled shares'
errors can be measured, not only estimated.

:func:`sampled_shares` draws permutations in batches; each batch is a cell (seeded from the
run's seed and the batch number, run on the executor, cached), returning per-holder sums of
marginal contributions and of their squares. Rounds of batches go on until every holder's
standard error is under ``tol`` times the grand total (or ``max_permutations``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from icml25.core.cells import Cell, CellRunner
from icml25.core.records import JsonRecord
from icml25.royalties.errors import RoyaltyInputError


class CoverageUtility:
    """v(S) = total weight of the features covered by at least one holder of S.

    Parameters
    ----------
    features : sequence of int arrays
        ``features[i]``: the feature ids holder ``i`` covers.
    weights : array of shape (n_features,)
        Each feature's non-negative weight.

    Raises
    ------
    RoyaltyInputError
        For negative or non-finite weights, or feature ids out of range.

    Examples
    --------
    >>> u = CoverageUtility([[0, 1], [1], [2]], [1.0, 2.0, 4.0])
    >>> u.value([True, True, False])
    3.0
    >>> u.exact_shapley().tolist()
    [2.0, 1.0, 4.0]
    """

    def __init__(self, features: Sequence[Sequence[int]], weights):
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise RoyaltyInputError("weights must be a 1-D array of finite values >= 0")
        lengths = [len(f) for f in features]
        if not lengths:
            raise RoyaltyInputError("at least one holder is needed")
        width = max(1, max(lengths))
        pad = np.full((len(features), width), len(w), dtype=np.int64)  # len(w): no feature
        for i, f in enumerate(features):
            f = np.unique(np.asarray(f, dtype=np.int64))
            if f.size and (f.min() < 0 or f.max() >= len(w)):
                raise RoyaltyInputError(f"holder {i}: feature ids must be in [0, {len(w)})")
            pad[i, :f.size] = f
        self.table = pad
        self.weights = w
        self.n_holders = len(features)

    @property
    def grand_total(self) -> float:
        """v(all holders) - v(nobody): what the shares divide."""
        covered = np.unique(self.table[self.table < len(self.weights)])
        return float(self.weights[covered].sum())

    def value(self, members) -> float:
        """v of the coalition given as a boolean mask over holders."""
        rows = self.table[np.asarray(members, dtype=bool)]
        return float(self.weights[np.unique(rows[rows < len(self.weights)])].sum())

    def exact_shapley(self) -> np.ndarray:
        """Each feature's weight split evenly among the holders that cover it."""
        valid = self.table < len(self.weights)
        owners = np.bincount(self.table[valid], minlength=len(self.weights))
        share = np.divide(self.weights, owners, out=np.zeros_like(self.weights),
                          where=owners > 0)
        share = np.append(share, 0.0)  # the padding id
        return share[self.table].sum(axis=1)

    def marginals(self, perms: np.ndarray) -> np.ndarray:
        """Marginal contribution of each holder along each permutation, shape (B, n),
        indexed by holder (not by position); all B permutations advance together."""
        perms = np.asarray(perms, dtype=np.int64)
        b, n = perms.shape
        w = np.append(self.weights, 0.0)
        covered = np.zeros((b, len(w)), dtype=bool)
        out = np.empty((b, n))
        rows = np.arange(b)[:, None]
        for t in range(n):
            holders = perms[:, t]
            feats = self.table[holders]                         # (B, width)
            new = ~covered[rows, feats]
            out[np.arange(b), holders] = (w[feats] * new).sum(axis=1)
            covered[rows, feats] = True
        return out


def permutation_batch(utility: CoverageUtility, size: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """One cell: ``size`` random orderings; per holder the sum of marginal contributions and
    the sum of their squares, and the number of orderings."""
    perms = np.stack([rng.permutation(utility.n_holders) for _ in range(size)])
    m = utility.marginals(perms)
    return m.sum(axis=0), np.square(m).sum(axis=0), size


@dataclasses.dataclass
class ShareEstimate(JsonRecord):
    """Sampled Shapley values, their standard errors and how they were obtained."""

    phi: list[float]
    std_errors: list[float]
    grand_total: float
    n_permutations: int
    converged: bool
    max_rel_se: float  # max standard error / grand total
    wall_s: float


def sampled_shares(utility: CoverageUtility, *, tol: float = 1e-3, seed: int = 0,
                   batch_size: int = 32, round_batches: int = 4, min_permutations: int = 64,
                   max_permutations: int = 100_000, runner: CellRunner | None = None,
                   name: str = "royalties-shares") -> ShareEstimate:
    """Permutation-sampling Shapley values with every holder's standard error under
    ``tol * grand_total``; batches of orderings run as cells on ``runner``'s executor.

    The numbers depend only on the arguments (not on the executor): each batch is seeded
    from ``(seed, batch number)``, rounds have ``round_batches`` batches whatever the number
    of workers, and batch sums are added in batch order.

    Parameters
    ----------
    utility : CoverageUtility
    tol : float, default=1e-3
        Target: max standard error / grand total.
    seed : int, default=0
    batch_size : int, default=32
        Orderings per cell.
    round_batches : int, default=4
        Cells submitted together between two checks of the stopping rule.
    min_permutations, max_permutations : int, default=64, 100000
    runner : CellRunner, optional
        Where the cells run (default: this process, no cache).
    name : str, default="royalties-shares"
        The experiment name cells are cached under.

    Returns
    -------
    ShareEstimate

    Examples
    --------
    >>> u = CoverageUtility([[0, 1], [1], [2], [2, 3]], [1.0, 2.0, 4.0, 1.0])
    >>> est = sampled_shares(u, tol=0.05, batch_size=8, round_batches=2)
    >>> est.converged and est.max_rel_se < 0.05
    True
    """
    for label, val in (("batch_size", batch_size), ("round_batches", round_batches),
                       ("min_permutations", min_permutations),
                       ("max_permutations", max_permutations)):
        if not isinstance(val, int) or val < 1:
            raise RoyaltyInputError(f"{label} must be a positive integer, got {val!r}")
    if not tol > 0:
        raise RoyaltyInputError(f"tol must be positive, got {tol!r}")
    runner = runner or CellRunner()
    t0 = time.perf_counter()
    n = utility.n_holders
    total = utility.grand_total
    s1, s2, m, batch = np.zeros(n), np.zeros(n), 0, 0
    settings = {"batch_size": batch_size, "n_holders": n,
                "utility": _fingerprint(utility)}
    se = np.full(n, np.inf)
    converged = False
    while m < max_permutations:
        cells = [Cell(("batch", batch + k), (utility, batch_size)) for k in range(round_batches)]
        got = runner.map(name, settings, seed, permutation_batch, cells)
        for cell in cells:  # batch order: the same sums on every executor
            a, b, k = got[cell.key]
            s1 += a
            s2 += b
            m += k
        batch += round_batches
        mean = s1 / m
        var = np.maximum(s2 / m - np.square(mean), 0.0) * m / max(m - 1, 1)
        se = np.sqrt(var / m)
        if m >= min_permutations and se.max() <= tol * abs(total):
            converged = True
            break
    return ShareEstimate(phi=(s1 / m).tolist(), std_errors=se.tolist(), grand_total=total,
                         n_permutations=m, converged=converged,
                         max_rel_se=float(se.max() / abs(total)) if total else float("inf"),
                         wall_s=time.perf_counter() - t0)


def _fingerprint(utility: CoverageUtility) -> str:
    import hashlib

    h = hashlib.sha256(utility.table.tobytes())
    h.update(utility.weights.tobytes())
    return h.hexdigest()[:16]


def coverage_scenario(n_holders: int, *, n_features: int | None = None,
                      per_holder: int = 12, seed: int = 0) -> CoverageUtility:
    """A collective of ``n_holders`` whose data covers an artifact's weighted n-grams:
    feature popularity follows a Zipf law (common n-grams are covered by many holders, rare
    ones by few), weights are log-normal (rare n-grams carry more information).

    Examples
    --------
    >>> u = coverage_scenario(50, seed=1)
    >>> u.n_holders, bool(np.isclose(u.exact_shapley().sum(), u.grand_total))
    (50, True)
    """
    if not isinstance(n_holders, int) or n_holders < 1:
        raise RoyaltyInputError(f"n_holders must be a positive integer, got {n_holders!r}")
    rng = np.random.default_rng(seed)
    f = n_features or 5 * n_holders
    popularity = 1.0 / np.arange(1, f + 1) ** 0.8
    popularity /= popularity.sum()
    weights = rng.lognormal(0.0, 1.0, size=f)
    drawn = rng.choice(f, size=(n_holders, per_holder), p=popularity)  # repeats: dropped
    return CoverageUtility(list(drawn), weights)
