"""Marginal transforms applied before a graph is fitted: the nonparanormal (Gaussian copula)
transform of Liu, Lafferty & Wasserman (2009), computed on each column's observed entries."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata
from sklearn.utils import check_array

__all__ = ["TRANSFORMS", "apply_transform", "nonparanormal"]

TRANSFORMS = (None, "nonparanormal")


def nonparanormal(X, *, truncate: bool = True) -> np.ndarray:
    """Rank-based Gaussian copula transform of every column, ignoring missing entries.

    Each column's observed values are replaced by normal scores ``Phi^{-1}(r / (m + 1))``
    (``r`` their average rank among the column's ``m`` observed values), or, with
    ``truncate=True``, by the Winsorised empirical CDF of Liu, Lafferty & Wasserman (2009),
    clipped to ``[delta, 1 - delta]`` with ``delta = 1 / (4 m^{1/4} sqrt(pi log m))``. The
    scores are then rescaled to the column's observed mean and standard deviation, so the
    result keeps the data's units. NaN stays NaN: a row's missing entries neither move nor
    enter any other value's rank, so the transform is the same whatever the mask hides.
    The graph of a nonparanormal distribution (a Gaussian after monotone maps of each
    variable) is the graph of the transformed data's Gaussian.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data; NaN marks a missing entry.
    truncate : bool, default=True
        Winsorise the empirical CDF (Liu et al.'s estimator) instead of ``r / (m + 1)``.

    Returns
    -------
    numpy.ndarray of shape (n_samples, n_features)
        The transformed data, NaN where ``X`` is missing.

    Raises
    ------
    ValueError
        If ``X`` is not a 2-d numeric array, holds infinities, or a column has no observed
        entry.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 10.0], [2.0, np.nan], [4.0, 30.0], [100.0, 20.0]])
    >>> Z = nonparanormal(X, truncate=False)
    >>> bool(np.isnan(Z[1, 1])), bool(np.all(np.diff(Z[:, 0]) > 0))
    (True, True)
    """
    Xc = check_array(X, dtype=np.float64, ensure_all_finite="allow-nan", copy=True,
                     input_name="X")
    obs = ~np.isnan(Xc)
    if not obs.any(0).all():
        raise ValueError(f"X has column(s) with no observed value: "
                         f"{np.flatnonzero(~obs.any(0)).tolist()}")
    out = np.full(Xc.shape, np.nan)
    for j in range(Xc.shape[1]):
        o = obs[:, j]
        v = Xc[o, j]
        m = v.size
        if m == 1:
            out[o, j] = v
            continue
        u = rankdata(v) / (m + 1.0)
        if truncate and m > 2:
            delta = 1.0 / (4.0 * m ** 0.25 * np.sqrt(np.pi * np.log(m)))
            u = np.clip(u, delta, 1.0 - delta)
        z = ndtri(u)
        sd = z.std()
        z = (z - z.mean()) / (sd if sd > 0 else 1.0)
        out[o, j] = v.mean() + v.std() * z
    return out


def apply_transform(X, transform: str | None) -> np.ndarray:
    """``X`` after the named transform (None: unchanged); a clear error for an unknown name."""
    if transform not in TRANSFORMS:
        raise ValueError(f"marginal_transform must be one of {TRANSFORMS}, got {transform!r}")
    if transform is None:
        return X
    return nonparanormal(X)
