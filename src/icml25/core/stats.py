"""Small statistics every reproduction reports."""

from __future__ import annotations


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) binomial confidence interval for k successes in n trials.

    Parameters
    ----------
    k : int
        Successes, ``0 <= k <= n``.
    n : int
        Trials, ``n >= 1``.
    level : float, default=0.95
        Confidence level.

    Returns
    -------
    tuple of float
        ``(low, high)``.

    Raises
    ------
    ValueError
        If ``n < 1`` or ``k`` is outside ``[0, n]``.

    Examples
    --------
    >>> [round(v, 4) for v in clopper_pearson(5, 10)]
    [0.1871, 0.8129]
    """
    from scipy import stats

    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def mean_interval(values, level: float = 0.95) -> tuple[float, float]:
    """Student-t confidence interval of the mean of ``values`` (e.g. one number per seed).

    One value gives the degenerate interval (that value, twice): no spread can be estimated.

    >>> mean_interval([1.0, 2.0, 3.0])  # doctest: +ELLIPSIS
    (-0.48..., 4.48...)
    """
    import numpy as np
    from scipy import stats

    x = np.asarray(list(values), dtype=float)
    if x.size == 0 or not np.isfinite(x).all():
        raise ValueError("need at least one finite value")
    m = float(x.mean())
    if x.size == 1:
        return m, m
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return m - half, m + half


def difference_interval(p1: float, n1: int, p2: float, n2: int,
                        level: float = 0.95) -> tuple[float, float]:
    """Agresti–Caffo interval of ``p1 - p2`` for two independent proportions over ``n1`` and
    ``n2`` draws (one success and one failure added to each: sound near 0 and 1, where the
    plain Wald interval collapses to a point).

    >>> lo, hi = difference_interval(0.3, 500, 0.2, 500)
    >>> round(lo, 3), round(hi, 3)
    (0.046, 0.153)
    >>> lo, hi = difference_interval(0.0, 500, 0.0, 500)
    >>> lo < 0 < hi
    True
    """
    import math

    from scipy import stats

    if n1 < 1 or n2 < 1:
        raise ValueError(f"need n1, n2 >= 1, got {n1}, {n2}")
    a, b = (p1 * n1 + 1) / (n1 + 2), (p2 * n2 + 1) / (n2 + 2)
    se = math.sqrt(a * (1 - a) / (n1 + 2) + b * (1 - b) / (n2 + 2))
    z = float(stats.norm.ppf(0.5 + level / 2))
    d = a - b
    return d - z * se, d + z * se
