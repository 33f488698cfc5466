"""Vectorised standard bivariate normal CDF.

Genz's (2004) refinement of Drezner & Wesolowsky (1990): Gauss-Legendre quadrature of the
integral of the density over the correlation (Plackett's identity) for |rho| < 0.925, and an
expansion around rho = +-1 plus a quadrature correction above. Absolute error is about 1e-15 over
the whole plane; every step works on whole arrays, so a million points take a fraction of a second
where ``scipy.stats.multivariate_normal.cdf`` needs a Python-level call per point.

Reference: A. Genz, "Numerical computation of rectangular bivariate and trivariate normal and t
probabilities", Statistics and Computing 14 (2004) 251-260.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial.legendre import leggauss
from scipy.special import ndtr

from icml25.worstoff._validation import as_float_array, scalar_or_array

__all__ = ["bvn_cdf"]

_TWO_PI = 2.0 * np.pi
# Gauss-Legendre rules of 6, 12 and 20 points on (-1, 1); more points as |rho| grows (Genz).
_RULES = {n: leggauss(n) for n in (6, 12, 20)}
_CHUNK = 8192


def _rule(abs_r: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """Masks selecting the quadrature size for each |rho| band."""
    return [(abs_r < 0.3, 6), ((abs_r >= 0.3) & (abs_r < 0.75), 12), (abs_r >= 0.75, 20)]


def _upper_small_r(h, k, r, n):
    """P(X > h, Y > k) for |r| < 0.925 via the integral over the angle asin(r)."""
    x, w = _RULES[n]
    hk = (h * k)[:, None]
    hs = ((h * h + k * k) / 2.0)[:, None]
    asr = np.arcsin(r)[:, None]
    sn = np.sin(asr * (x + 1.0) / 2.0)
    integral = np.exp((sn * hk - hs) / (1.0 - sn * sn)) @ w
    return integral * np.arcsin(r) / (2.0 * _TWO_PI) + ndtr(-h) * ndtr(-k)


def _upper_large_r(h, k, r, n):
    """P(X > h, Y > k) for 0.925 <= |r| < 1: expansion about |r| = 1 plus a correction term."""
    x, w = _RULES[n]
    neg = r < 0
    k = np.where(neg, -k, k)  # reduce rho < 0 to rho > 0 by reflecting Y
    hk = h * k
    a2 = (1.0 - r) * (1.0 + r)
    a = np.sqrt(a2)
    bs = (h - k) ** 2
    b = np.sqrt(bs)
    c = (4.0 - hk) / 8.0
    d = (12.0 - hk) / 16.0
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * np.exp(-(bs / a2 + hk) / 2.0) * (
            1.0 - c * (bs - a2) * (1.0 - d * bs / 5.0) / 3.0 + c * d * a2 * a2 / 5.0)
        # exp(-hk/2) overflows only when the whole term is negligible; mask it out there.
        tail = np.exp(-np.minimum(hk, 200.0) / 2.0) * np.sqrt(_TWO_PI) * ndtr(-b / a) * b * (
            1.0 - c * bs * (1.0 - d * bs / 5.0) / 3.0)
    p = p - np.where(hk > -160.0, tail, 0.0)
    half = (a / 2.0)[:, None]
    xs = (half * (x + 1.0)) ** 2
    rs = np.sqrt(1.0 - xs)
    expo = -(bs[:, None] / xs + hk[:, None]) / 2.0
    sp = 1.0 + c[:, None] * xs * (1.0 + d[:, None] * xs)
    ep = np.exp(-hk[:, None] * xs / (2.0 * (1.0 + rs) ** 2)) / rs
    quad = (np.exp(np.maximum(expo, -700.0)) * (sp - ep)) @ w
    p = (half[:, 0] * quad - p) / _TWO_PI
    pos = p + ndtr(-np.maximum(h, k))
    # rho < 0: P = max(0, Phi(-h) - Phi(-k)) - p, with the difference taken in the accurate tail.
    diff = np.where(h < 0, ndtr(k) - ndtr(h), ndtr(-h) - ndtr(-k))
    negp = np.maximum(diff, 0.0) - p
    return np.where(neg, negp, pos)


def _bvn_flat(x: np.ndarray, y: np.ndarray, r: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    # Exact cases first: infinite limits and perfect correlation.
    lo_inf = (x == -np.inf) | (y == -np.inf)
    out[lo_inf] = 0.0
    x_inf = (x == np.inf) & ~lo_inf
    out[x_inf] = ndtr(y[x_inf])
    y_inf = (y == np.inf) & ~lo_inf & ~x_inf
    out[y_inf] = ndtr(x[y_inf])
    done = lo_inf | x_inf | y_inf
    one = ~done & (r == 1.0)
    out[one] = ndtr(np.minimum(x[one], y[one]))
    minus_one = ~done & (r == -1.0)
    out[minus_one] = np.maximum(ndtr(x[minus_one]) - ndtr(-y[minus_one]), 0.0)
    done |= one | minus_one
    h, k = -x, -y  # Phi2(x, y; r) = P(X > -x, Y > -y; r)
    abs_r = np.abs(r)
    for mask, n in _rule(abs_r):
        small = mask & ~done & (abs_r < 0.925)
        if small.any():
            out[small] = _upper_small_r(h[small], k[small], r[small], n)
        large = mask & ~done & (abs_r >= 0.925)
        if large.any():
            out[large] = _upper_large_r(h[large], k[large], r[large], n)
    return np.clip(out, 0.0, 1.0)


def bvn_cdf(x, y, rho):
    """Standard bivariate normal CDF ``P(X <= x, Y <= y)`` with correlation ``rho``.

    Broadcasts ``x``, ``y`` and ``rho`` like a NumPy ufunc; infinite limits and ``|rho| = 1``
    are exact.

    Parameters
    ----------
    x, y : float or array-like
        Upper limits (``-inf`` / ``inf`` allowed).
    rho : float or array-like
        Correlation, in [-1, 1].

    Returns
    -------
    float or ndarray
        The probability, broadcast over the inputs.

    Raises
    ------
    ValueError
        For NaN inputs or ``|rho| > 1``.

    Examples
    --------
    >>> from icml25.worstoff import bvn_cdf
    >>> round(bvn_cdf(0.0, 0.0, 0.5), 12)  # 1/4 + asin(0.5)/(2 pi) = 1/3
    0.333333333333
    >>> bvn_cdf([0.0, float("inf")], 0.0, 0.5).round(6)     # an infinite limit: Phi(0)
    array([0.333333, 0.5     ])
    """
    x = as_float_array("x", x)
    y = as_float_array("y", y)
    r = as_float_array("rho", rho)
    if (np.abs(r) > 1).any():
        raise ValueError(f"rho must lie in [-1, 1], got {float(r[np.abs(r) > 1].ravel()[0])!r}")
    x, y, r = np.broadcast_arrays(x, y, r)
    shape = x.shape
    x, y, r = (np.ascontiguousarray(v, dtype=float).ravel() for v in (x, y, r))
    out = np.empty(x.size)
    # Chunks keep the (points x nodes) temporaries in cache: ~2x faster on large inputs.
    for start in range(0, x.size, _CHUNK):
        sl = slice(start, start + _CHUNK)
        out[sl] = _bvn_flat(x[sl].copy(), y[sl].copy(), r[sl].copy())
    return scalar_or_array(out.reshape(shape))
