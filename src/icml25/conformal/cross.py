"""CV+ and jackknife+ (Barber, Candes, Ramdas & Tibshirani 2021): no separate calibration set.

Every training point i is predicted by the model fitted without its fold, ``mu_{-k(i)}``, giving
the out-of-fold residual ``R_i = |y_i - mu_{-k(i)}(x_i)|``. For a new x the interval is

    [ (n + 1 - r)-th smallest of mu_{-k(i)}(x) - R_i ,  r-th smallest of mu_{-k(i)}(x) + R_i ]

with r the rank a rule allows on the n residuals: for ``split`` / ``crc``, r = ceil((1 - alpha)
(n + 1)), the published CV+ / jackknife+; a rule that certifies k* misses gives r = n - k*.
If r > n the interval is infinite.

Guarantees (exchangeable data): jackknife+ covers with probability >= 1 - 2 alpha, CV+ with
K folds >= 1 - 2 alpha - min(2(1 - 1/K)/(n/K + 1), (1 - K/n)/(K + 1)); in practice both sit near
1 - alpha. The paper's posterior guarantee is proven for a held-out calibration set only; with
``method="bq"`` the rank comes from the bq rule applied to the out-of-fold residuals, which is a
more conservative rank with no extra theorem behind it (stated wherever it is used).

Examples
--------
>>> import numpy as np
>>> fold_pred = np.array([[0.0, 0.1]])                 # one test point, two fold models
>>> lo, hi = cv_plus_interval(fold_pred, np.array([0, 1, 0, 1]), np.array([1.0, 2, 3, 4]), 3)
>>> float(lo[0]), float(hi[0])
(-3.0, 3.0)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["cv_plus_interval", "cv_plus_rank", "resolve_folds"]


def resolve_folds(cv, n: int) -> int:
    """Number of folds for ``cv`` = an int K >= 2 or ``"jackknife+"`` (leave-one-out)."""
    if n < 2:
        raise ValueError(f"CV+ / jackknife+ needs at least 2 samples; got {n} sample(s)")
    if isinstance(cv, str):
        if cv != "jackknife+":
            raise ValueError(f"cv must be an int >= 2 (CV+) or 'jackknife+', got {cv!r}")
        return n
    if isinstance(cv, bool) or not isinstance(cv, int | np.integer) or cv < 2:
        raise ValueError(f"cv must be an int >= 2 (CV+) or 'jackknife+', got {cv!r}")
    if cv > n:
        raise ValueError(f"cv={cv} folds need at least {cv} samples; got {n} sample(s)")
    return int(cv)


def cv_plus_rank(spec, n: int) -> int:
    """The rank r of the CV+ interval for a validated rule request; n + 1 means infinite."""
    from icml25.conformal.exact import max_allowed_misses

    k = max_allowed_misses(spec.admissible, n)
    return n + 1 if k < 0 else n - k


def cv_plus_interval(fold_pred: np.ndarray, fold_of: np.ndarray, residuals: np.ndarray,
                     rank: int, chunk: int = 2_048) -> tuple[np.ndarray, np.ndarray]:
    """CV+ bounds for m test points.

    ``fold_pred`` (m, K): each fold model's prediction; ``fold_of`` (n,): the fold of each
    training point; ``residuals`` (n,): out-of-fold |residuals|; ``rank``: r.
    """
    fold_pred = np.atleast_2d(np.asarray(fold_pred, dtype=float))
    n = residuals.size
    m = fold_pred.shape[0]
    if rank > n:
        return np.full(m, -math.inf), np.full(m, math.inf)
    lo = np.empty(m)
    hi = np.empty(m)
    k_lo = n - rank  # 0-based index of the (n + 1 - r)-th smallest
    k_hi = rank - 1
    for s in range(0, m, chunk):
        mu = fold_pred[s:s + chunk][:, fold_of]  # (c, n)
        lo[s:s + chunk] = np.partition(mu - residuals, k_lo, axis=1)[:, k_lo]
        hi[s:s + chunk] = np.partition(mu + residuals, k_hi, axis=1)[:, k_hi]
    return lo, hi
