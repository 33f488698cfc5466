"""Exact answers for the simulations: for a fixed pool, failure rates follow from ranks.

A trial draws a calibration set of ``n`` rows uniformly without replacement from a fixed pool of
``N`` and measures the realised risk on the other ``N - n``. When a rule's threshold is an order
statistic of the calibration set (every 0/1-loss rule: allow ``k`` misses, take the
``(n - k)``-th smallest score), the pool rank ``J`` of that order statistic has the
distribution ``Pr(J = j) = C(j-1, r-1) C(N-j, n-r) / C(N, n)`` and the trial fails exactly when
``J`` falls below a rank fixed by the pool. So the failure rate over infinitely many trials is a
hypergeometric tail, and the mean interval length an expectation over ``J`` — no simulation noise.

For losses with few values per row (the binomial loss of Section 5.1: each row's loss at lambda
is the share of its K values above lambda), ``{lambda <= v}`` holds exactly when the histogram
of per-row counts above ``v`` over the calibration rows is admissible, and that histogram is
multivariate hypergeometric: :func:`histogram_event_probability` sums over all of them.

Examples
--------
>>> k_star = max_allowed_misses(lambda k: k <= 19, 200)         # CRC at alpha 0.1, n 200
>>> round(100 * order_statistic_failure(5_200, 200, 200 - k_star, 5_200 - 519 - 1), 2)
46.39
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
from scipy import special, stats

__all__ = ["histogram_event_probability", "histograms", "max_allowed_misses",
           "order_statistic_failure", "order_statistic_pmf", "rank_threshold"]


def max_allowed_misses(admissible: Callable[[np.ndarray], np.ndarray] | Callable[[int], bool],
                       n: int) -> int:
    """Largest k in 0..n whose 0/1 loss vector (k ones, n - k zeros) is admissible; -1 if none.

    ``admissible`` takes an (m, n) array of loss vectors and returns m booleans (e.g.
    ``RuleSpec.admissible``), or takes an int k and returns a bool. Admissibility must fall with
    k (it does for every registered rule); a rule for which it does not is refused.
    """
    ks = np.arange(n + 1)
    try:
        losses = (np.arange(n)[None, :] >= n - ks[:, None]).astype(float)
        ok = np.asarray(admissible(losses), dtype=bool).reshape(-1)
        if ok.size != n + 1:
            raise TypeError
    except (TypeError, ValueError):
        ok = np.array([bool(admissible(int(k))) for k in ks])
    if ok.any() and not ok[: np.flatnonzero(ok).max() + 1].all():
        raise ValueError("admissibility is not monotone in the number of misses")
    return int(np.flatnonzero(ok).max()) if ok.any() else -1


def order_statistic_pmf(n_pool: int, n: int, r: int) -> np.ndarray:
    """Pr(J = j) for j = 1..N, J the pool rank of the r-th smallest of a random n-subset."""
    j = np.arange(1, n_pool + 1)
    valid = (j >= r) & (n_pool - j >= n - r)
    out = np.zeros(n_pool)
    jv = j[valid]
    logp = (_log_comb(jv - 1, r - 1) + _log_comb(n_pool - jv, n - r)
            - _log_comb(n_pool, n))
    out[valid] = np.exp(logp)
    return out


def order_statistic_failure(n_pool: int, n: int, r: int, j_fail: int) -> float:
    """Pr(J <= j_fail): at least r of the n calibration points lie among the j_fail lowest."""
    if r < 1 or r > n:
        return 0.0
    if j_fail < r:
        return 0.0
    return float(stats.hypergeom.sf(r - 1, n_pool, j_fail, n))


def rank_threshold(n_pool: int, n: int, k: int, alpha: float) -> int:
    """Largest pool rank j (1-based, ascending, no ties) at which lambda = s_(j) fails.

    With lambda the (n - k)-th smallest calibration score, k calibration points lie above it, so
    the held-out miscoverage is ((N - j) - k) / (N - n); the trial fails when that exceeds alpha.
    """
    # (N - j - k) > alpha (N - n)  <=>  j < N - k - alpha (N - n)
    bound = n_pool - k - alpha * (n_pool - n)
    j = math.ceil(bound) - 1
    # guard the float comparison exactly
    while j >= 1 and not (n_pool - j - k) > alpha * (n_pool - n) + 1e-12:
        j -= 1
    while (n_pool - (j + 1) - k) > alpha * (n_pool - n) + 1e-12:
        j += 1
    return j


def histograms(n: int, n_categories: int) -> np.ndarray:
    """Every way to split n rows among ``n_categories`` categories: (m, n_categories) counts."""
    out = []
    for cuts in itertools.combinations(range(n + n_categories - 1), n_categories - 1):
        edges = (-1, *cuts, n + n_categories - 1)
        out.append([edges[i + 1] - edges[i] - 1 for i in range(n_categories)])
    return np.array(out, dtype=int)


def histogram_pmf(category_sizes: np.ndarray, hists: np.ndarray) -> np.ndarray:
    """Multivariate hypergeometric probability of each histogram for a random n-subset."""
    m = np.asarray(category_sizes, dtype=float)
    n = int(hists[0].sum())
    logp = _log_comb(m[None, :], hists).sum(axis=1) - _log_comb(m.sum(), n)
    return np.exp(logp)


def histogram_event_probability(row_counts: np.ndarray, n: int, k: int,
                                admissible: Callable[[np.ndarray], np.ndarray],
                                bound: float = 1.0) -> tuple[float, np.ndarray, np.ndarray]:
    """Pr(the calibration rows' loss vector is admissible) when a pool row's loss is c/K.

    ``row_counts`` gives each pool row's count c in 0..K (values above the lambda of interest);
    the calibration set is a uniform n-subset of rows. Returns (probability, histograms,
    admissible per histogram).
    """
    counts = np.bincount(np.asarray(row_counts, dtype=int), minlength=k + 1)
    hists = histograms(n, k + 1)
    pmf = histogram_pmf(counts, hists)
    values = np.arange(k + 1) * (bound / k)
    losses = np.stack([np.repeat(values, h) for h in hists])
    ok = np.asarray(admissible(losses), dtype=bool)
    return float(pmf[ok].sum()), hists, ok


def _log_comb(a, b):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        out = special.gammaln(a + 1) - special.gammaln(b + 1) - special.gammaln(a - b + 1)
    return np.where((b < 0) | (b > a), -np.inf, out)
