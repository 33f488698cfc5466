"""Closed forms of the Gaussian screening model (Fischer-Abaigar, Kern & Perdomo, ICML 2025).

Outcome ``Y`` and prediction ``Yhat`` are jointly normal with squared correlation ``R^2``; the
planner screens the lowest ``alpha`` fraction of predictions and wants to find the worst-off, the
lowest ``beta`` fraction of outcomes. The value of the policy is the recall on the worst-off
(Proposition 2.3)::

    V(alpha, beta, R^2) = Phi2(Phi^-1(alpha), Phi^-1(beta); sqrt(R^2)) / beta.

Everything here broadcasts over arrays. ``R^2 = 0`` (random screening, ``V = alpha``) and
``R^2 = 1`` (perfect ranking, ``V = min(alpha, beta) / beta``) are handled analytically, and the
local prediction-access ratio is computed in log space because it overflows for small ``alpha``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from icml25.worstoff._validation import (
    check_fraction,
    check_positive,
    check_r2,
    scalar_or_array,
)
from icml25.worstoff.bvn import bvn_cdf

__all__ = [
    "value",
    "dvalue_dalpha",
    "dvalue_dr2",
    "par",
    "local_par",
    "log_local_par",
    "policy_curve",
    "lognormal_r2_log",
    "lognormal_r2_level",
    "lognormal_value",
    "par_lower_bound",
    "prop33_region",
    "prop33_factors",
]

_LOG_2PI = np.log(2.0 * np.pi)


def _value(alpha, beta, r2) -> np.ndarray:
    """V without validation; ``alpha`` may be 0 or 1 (used by finite differences)."""
    alpha, beta, r2 = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (alpha, beta, r2)))
    a, b = ndtri(alpha), ndtri(beta)
    # ndtri gives -inf/inf at 0/1, which bvn_cdf handles exactly.
    v = np.asarray(bvn_cdf(a, b, np.sqrt(r2)), dtype=float) / beta
    v = np.where(r2 == 0.0, alpha, v)
    v = np.where(r2 == 1.0, np.minimum(alpha, beta) / beta, v)
    return v


def value(alpha, beta, r2):
    """Recall on the worst-off ``V(alpha, beta, R^2)`` of screening the lowest predictions.

    ``V = Phi2(Phi^-1(alpha), Phi^-1(beta); sqrt(R^2)) / beta`` for jointly normal outcome and
    prediction; exact at ``R^2 = 0`` (``alpha``) and ``R^2 = 1`` (``min(alpha, beta) / beta``).

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity: the fraction of the population screened, in (0, 1).
    beta : float or array-like
        Target fraction: the worst-off are the lowest ``beta`` of outcomes, in (0, 1).
    r2 : float or array-like
        Coefficient of determination of the predictor, in [0, 1].

    Returns
    -------
    float or ndarray
        The recall, broadcast over the inputs.

    Raises
    ------
    ValueError
        If a fraction is outside its range.

    Examples
    --------
    >>> round(value(0.2, 0.2, 0.25), 3)
    0.436
    >>> value([0.2, 0.4], 0.2, [0.0, 1.0]).tolist()     # random screening; a perfect model
    [0.2, 1.0]
    """
    alpha = check_fraction("alpha", alpha)
    beta = check_fraction("beta", beta)
    r2 = check_r2("r2", r2)
    return scalar_or_array(_value(alpha, beta, r2))


def _z(a, b, r, r2):
    """(b - r a) / sqrt(1 - R^2), the standardised argument of Lemma D.1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (b - r * a) / np.sqrt(1.0 - r2)


def dvalue_dalpha(alpha, beta, r2):
    """``dV/dalpha = Phi((b - r a) / sqrt(1 - R^2)) / beta`` (Lemma D.1).

    At ``R^2 = 1`` the limit is ``1/beta`` below ``beta``, ``0`` above and ``1/(2 beta)`` at
    ``alpha = beta`` (where V has a kink).

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float or array-like
        Target fraction (the worst-off), in (0, 1).
    r2 : float or array-like
        R^2 of the predictor, in [0, 1].

    Returns
    -------
    float or ndarray
        The derivative, broadcast over the inputs.

    Raises
    ------
    ValueError
        If a fraction is outside its range.

    Examples
    --------
    >>> from icml25.worstoff import dvalue_dalpha
    >>> round(dvalue_dalpha(0.2, 0.2, 0.25), 4)
    1.5676
    >>> dvalue_dalpha(0.1, 0.2, 1.0)            # perfect ranking: 1 / beta below beta
    5.0
    """
    alpha = check_fraction("alpha", alpha)
    beta = check_fraction("beta", beta)
    r2 = check_r2("r2", r2)
    alpha, beta, r2 = np.broadcast_arrays(alpha, beta, r2)
    a, b, r = ndtri(alpha), ndtri(beta), np.sqrt(r2)
    d = ndtr(_z(a, b, r, r2)) / beta
    perfect = np.where(alpha < beta, 1.0, np.where(alpha > beta, 0.0, 0.5)) / beta
    return scalar_or_array(np.where(r2 == 1.0, perfect, d))


def _log_phi2(a, b, r, r2):
    """Log density of the standard bivariate normal with correlation r."""
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (a * a + b * b - 2.0 * r * a * b) / (1.0 - r2)
        return -_LOG_2PI - 0.5 * np.log1p(-r2) - 0.5 * q


def dvalue_dr2(alpha, beta, r2):
    """``dV/dR^2 = phi2(a, b; r) / (2 beta r)`` (Lemma D.2, with ``dPhi2/drho = phi2``).

    Infinite at ``R^2 = 0`` and, when ``alpha = beta``, at ``R^2 = 1``; zero at ``R^2 = 1``
    otherwise (Theorem 3.2's "first and last mile").

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float or array-like
        Target fraction (the worst-off), in (0, 1).
    r2 : float or array-like
        R^2 of the predictor, in [0, 1].

    Returns
    -------
    float or ndarray
        The derivative, broadcast over the inputs.

    Raises
    ------
    ValueError
        If a fraction is outside its range.

    Examples
    --------
    >>> from icml25.worstoff import dvalue_dr2
    >>> round(dvalue_dr2(0.2, 0.2, 0.25), 4)
    0.573
    >>> dvalue_dr2(0.2, 0.2, 0.0)               # the "first mile"
    inf
    """
    alpha = check_fraction("alpha", alpha)
    beta = check_fraction("beta", beta)
    r2 = check_r2("r2", r2)
    alpha, beta, r2 = np.broadcast_arrays(alpha, beta, r2)
    a, b, r = ndtri(alpha), ndtri(beta), np.sqrt(r2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = np.exp(_log_phi2(a, b, r, r2) - np.log(2.0 * beta * r))
    d = np.where(r2 == 0.0, np.inf, d)
    d = np.where(r2 == 1.0, np.where(alpha == beta, np.inf, 0.0), d)
    return scalar_or_array(d)


def _log_local_par(alpha, beta, r2) -> np.ndarray:
    """log of (dV/dalpha) / (dV/dR^2) without validation.

    Writing ``z = (b - r a)/sqrt(1 - R^2)``, the ratio simplifies to
    ``2 r sqrt(1 - R^2) * [Phi(z)/phi(z)] / phi(a)``: the product of Proposition 3.3's factors
    ``T1 = sqrt(8 pi R^2 (1 - R^2))`` and ``T2 = Phi(z)/phi(z)`` with ``exp(a^2/2) >= 1``.
    """
    alpha, beta, r2 = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (alpha, beta, r2)))
    a, b, r = ndtri(alpha), ndtri(beta), np.sqrt(r2)
    z = _z(a, b, r, r2)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_mills = log_ndtr(z) + 0.5 * z * z + 0.5 * _LOG_2PI  # log Phi(z)/phi(z)
        out = (np.log(2.0 * r) + 0.5 * np.log1p(-r2) + log_mills
               + 0.5 * a * a + 0.5 * _LOG_2PI)
    out = np.where(r2 == 0.0, -np.inf, out)
    out = np.where(r2 == 1.0, np.where(alpha < beta, np.inf, -np.inf), out)
    return out


def log_local_par(alpha, beta, r2):
    """Natural log of :func:`local_par`; finite where the ratio itself overflows.

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float or array-like
        Target fraction (the worst-off), in (0, 1).
    r2 : float or array-like
        R^2 of the predictor, in [0, 1].

    Returns
    -------
    float or ndarray
        log of the local PAR (``-inf`` at ``R^2 = 0``).

    Raises
    ------
    ValueError
        If a fraction is outside its range.

    Examples
    --------
    >>> from icml25.worstoff import log_local_par
    >>> round(log_local_par(0.2, 0.2, 0.2), 4)            # log(2.47)
    0.9051
    >>> round(log_local_par(1e-300, 0.2, 0.5), 1)         # local_par itself overflows
    1330.9
    """
    alpha = check_fraction("alpha", alpha)
    beta = check_fraction("beta", beta)
    r2 = check_r2("r2", r2)
    return scalar_or_array(_log_local_par(alpha, beta, r2))


def local_par(alpha, beta, r2):
    """Local prediction-access ratio ``(dV/dalpha) / (dV/dR^2)`` (``Delta -> 0`` in Eq. 3).

    Above 1, a marginal unit of screening capacity buys more recall than a marginal unit of
    R^2. Equals 0 at ``R^2 = 0``; at ``R^2 = 1`` it is ``inf`` for ``alpha < beta`` and 0 otherwise.
    Overflows to ``inf`` for tiny ``alpha``; use :func:`log_local_par` there.

    Parameters
    ----------
    alpha, beta, r2 : float or array-like
        As in :func:`value`.

    Returns
    -------
    float or ndarray
        The local PAR, broadcast over the inputs.

    Raises
    ------
    ValueError
        If a fraction is outside its range.

    Examples
    --------
    >>> round(local_par(0.2, 0.2, 0.2), 2)
    2.47
    """
    with np.errstate(over="ignore"):
        return scalar_or_array(np.exp(np.asarray(log_local_par(alpha, beta, r2))))


_CANCEL = 1e-5  # below this relative size a difference of two V values keeps < ~10 digits
_PANELS = 8
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(16)


def _panel_quadrature(log_f, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Integral of ``exp(log_f(t))`` over [lo, hi] per row: 8 panels of 16-point Gauss-Legendre."""
    edges = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, _PANELS + 1)[None, :]
    mid = (edges[:, 1:] + edges[:, :-1]) / 2.0
    half = (edges[:, 1:] - edges[:, :-1]) / 2.0
    t = mid[:, :, None] + half[:, :, None] * _NODES[None, None, :]
    vals = np.exp(log_f(t)) * _WEIGHTS[None, None, :] * half[:, :, None]
    return vals.sum(axis=(1, 2))


def _gain_prediction(alpha, beta, r2_lo, r2_hi):
    """V(R^2_hi) - V(R^2_lo) as (1/beta) * integral of phi2(a, b; rho) over rho."""
    a, b = ndtri(alpha)[:, None, None], ndtri(beta)[:, None, None]

    def log_f(rho):
        return _log_phi2(a, b, rho, rho * rho)

    return _panel_quadrature(log_f, np.sqrt(r2_lo), np.sqrt(r2_hi)) / beta


def _gain_access(alpha_lo, alpha_hi, beta, r2):
    """V(alpha_hi) - V(alpha_lo) as (1/beta) * integral of phi(x) Phi((b - r x)/sqrt(1-R^2))."""
    b, r = ndtri(beta)[:, None, None], np.sqrt(r2)[:, None, None]
    s = np.sqrt(1.0 - r2)[:, None, None]

    def log_f(x):
        return -0.5 * x * x - 0.5 * _LOG_2PI + log_ndtr((b - r * x) / s)

    return _panel_quadrature(log_f, ndtri(alpha_lo), ndtri(alpha_hi)) / beta


def par(alpha, beta, r2, d_alpha=0.01, d_r2=0.01):
    """Prediction-access ratio with finite steps (Eq. 3).

    ``[V(alpha + d_alpha, beta, R^2) - V(alpha, beta, R^2)] /
    [V(alpha, beta, R^2 + d_r2) - V(alpha, beta, R^2)]``. Requires ``alpha + d_alpha <= 1`` and
    ``R^2 + d_r2 <= 1``. A zero denominator (prediction gains nothing) gives ``inf``.

    Decision rule: expand access iff ``cost of access / cost of prediction < PAR`` (per unit step).

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity: the fraction of the population screened, in (0, 1).
    beta : float or array-like
        Target fraction: the worst-off are the lowest ``beta`` of outcomes, in (0, 1).
    r2 : float or array-like
        Coefficient of determination of the predictor, in [0, 1].
    d_alpha : float, default=0.01
        Step of capacity (the access lever).
    d_r2 : float, default=0.01
        Step of R^2 (the prediction lever).

    Returns
    -------
    float or ndarray
        The PAR, broadcast over the inputs; ``inf`` where prediction gains nothing.

    Raises
    ------
    ValueError
        If a fraction is outside its range, or ``alpha + d_alpha`` or ``r2 + d_r2`` exceeds 1.

    Examples
    --------
    >>> round(par(0.2, 0.2, 0.25, d_alpha=0.2, d_r2=0.2), 2)  # the paper's Figure 1
    2.36
    >>> par([0.05, 0.2], 0.2, 0.25).round(2)                  # vectorised over alpha
    array([10.18,  2.72])
    """
    alpha = check_fraction("alpha", alpha)
    beta = check_fraction("beta", beta)
    r2 = check_r2("r2", r2)
    d_alpha = check_positive("d_alpha", d_alpha)
    d_r2 = check_positive("d_r2", d_r2)
    tol = 1e-12
    if (alpha + d_alpha > 1 + tol).any():
        raise ValueError("alpha + d_alpha must not exceed 1")
    if (r2 + d_r2 > 1 + tol).any():
        raise ValueError("r2 + d_r2 must not exceed 1")
    alpha, beta, r2, d_alpha, d_r2 = np.broadcast_arrays(alpha, beta, r2, d_alpha, d_r2)
    alpha_hi = np.minimum(alpha + d_alpha, 1.0)
    r2_hi = np.minimum(r2 + d_r2, 1.0)
    base = _value(alpha, beta, r2)
    gain_access = _value(alpha_hi, beta, r2) - base
    gain_pred = _value(alpha, beta, r2_hi) - base
    # Tiny gains (small alpha, small steps) lose their digits to cancellation in V(.) - V(.):
    # integrate the derivative directly instead.
    interior = (r2 > 0) & (r2 < 1)
    redo = interior & (np.abs(gain_pred) < _CANCEL * base)
    if redo.any():
        gain_pred = np.array(gain_pred, dtype=float)
        gain_pred[redo] = _gain_prediction(alpha[redo], beta[redo], r2[redo], r2_hi[redo])
    redo = interior & (np.abs(gain_access) < _CANCEL * base)
    if redo.any():
        gain_access = np.array(gain_access, dtype=float)
        gain_access[redo] = _gain_access(alpha[redo], alpha_hi[redo], beta[redo], r2[redo])
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(gain_pred > 0, gain_access / np.where(gain_pred > 0, gain_pred, 1.0),
                       np.inf)
    return scalar_or_array(out)


def policy_curve(y, alpha, r2):
    """``P(Yhat <= F^-1(alpha) | Y = y)`` for standardised outcomes ``y`` (the paper's Figure 1).

    Weighting this curve by the density of ``Y`` below ``Phi^-1(beta)`` and dividing by ``beta``
    gives ``V``.

    Parameters
    ----------
    y : float or array-like
        Standardised outcome values.
    alpha : float or array-like
        Screening capacity, in (0, 1).
    r2 : float or array-like
        R^2 of the predictor, in [0, 1].

    Returns
    -------
    float or ndarray
        Probability of being screened, broadcast over the inputs.

    Raises
    ------
    ValueError
        If a fraction is outside its range.

    Examples
    --------
    >>> from icml25.worstoff import policy_curve
    >>> policy_curve([-2.0, 0.0, 2.0], alpha=0.2, r2=0.25).round(3)
    array([0.573, 0.166, 0.017])
    """
    alpha = check_fraction("alpha", alpha)
    r2 = check_r2("r2", r2)
    y = np.asarray(y, dtype=float)
    a, r = ndtri(alpha), np.sqrt(r2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = ndtr((a - r * y) / np.sqrt(1.0 - r2))
    p = np.where(r2 == 1.0, (y <= a).astype(float), p)
    return scalar_or_array(p)


# --- log-normal outcomes -------------------------------------------------------------------------

def lognormal_r2_level(r2_log, sigma2_log):
    """R^2 on the natural scale of a log-normal outcome whose log has variance ``sigma2_log``.

    If ``log Y = log Yhat + eps`` with Gaussian, independent terms and ``R^2_log`` the share of the
    log-variance explained, the best predictor ``E[Y | X]`` explains
    ``(exp(R^2_log * s) - 1) / (exp(s) - 1)`` of the variance of ``Y`` (``s = sigma2_log``); it
    equals the squared correlation of ``Y`` and ``Yhat``.

    Parameters
    ----------
    r2_log : float or array-like
        R^2 on the log scale, in [0, 1].
    sigma2_log : float or array-like
        Variance of ``log Y``, positive.

    Returns
    -------
    float or ndarray
        R^2 on the natural scale (below ``r2_log``).

    Raises
    ------
    ValueError
        If ``r2_log`` is outside [0, 1] or ``sigma2_log`` is not positive.

    Examples
    --------
    >>> from icml25.worstoff import lognormal_r2_level
    >>> round(lognormal_r2_level(0.5, 1.0), 4)
    0.3775
    """
    r2_log = check_r2("r2_log", r2_log)
    s = check_positive("sigma2_log", sigma2_log)
    return scalar_or_array(np.expm1(r2_log * s) / np.expm1(s))


def lognormal_r2_log(r2_level, sigma2_log):
    """Inverse of :func:`lognormal_r2_level`: log-scale R^2 from the natural-scale R^2.

    Parameters
    ----------
    r2_level : float or array-like
        R^2 on the natural scale, in [0, 1].
    sigma2_log : float or array-like
        Variance of ``log Y``, positive.

    Returns
    -------
    float or ndarray
        R^2 on the log scale.

    Raises
    ------
    ValueError
        If ``r2_level`` is outside [0, 1] or ``sigma2_log`` is not positive.

    Examples
    --------
    >>> from icml25.worstoff import lognormal_r2_level, lognormal_r2_log
    >>> round(lognormal_r2_log(lognormal_r2_level(0.5, 1.0), 1.0), 4)
    0.5
    """
    r2_level = check_r2("r2_level", r2_level)
    s = check_positive("sigma2_log", sigma2_log)
    return scalar_or_array(np.log1p(r2_level * np.expm1(s)) / s)


def lognormal_value(alpha, beta, r2_level, sigma2_log):
    """V for a log-normal outcome with multiplicative errors, given the natural-scale R^2.

    Screening and the worst-off set depend only on ranks, which ``log`` preserves, so V is the
    Gaussian V at the log-scale R^2. Using the natural-scale R^2 directly in :func:`value`
    understates V (natural-scale R^2 is smaller than log-scale R^2 for the same predictor).

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float or array-like
        Target fraction, in (0, 1).
    r2_level : float or array-like
        R^2 on the natural scale, in [0, 1].
    sigma2_log : float or array-like
        Variance of ``log Y``, positive.

    Returns
    -------
    float or ndarray
        The recall on the worst-off.

    Raises
    ------
    ValueError
        If an input is outside its range.

    Examples
    --------
    >>> from icml25.worstoff import lognormal_value, value
    >>> round(lognormal_value(0.2, 0.2, 0.3, 1.0), 4), round(value(0.2, 0.2, 0.3), 4)
    (0.5256, 0.4638)
    """
    return value(alpha, beta, lognormal_r2_log(r2_level, sigma2_log))


# --- theorems ------------------------------------------------------------------------------------

def par_lower_bound(alpha, r2, d_alpha=0.01, d_r2=0.01, *, log: bool = False):
    """Theorem 3.1's lower bound on PAR for small capacity (``beta <= 1/2``), ``o(1)`` dropped::

        (d_alpha / d_r2) * sqrt(R^2 (1 - R^2)) * (5.1 * alpha * Phi^-1(1 - alpha))^(-1/(1 - R^2))

    It holds once ``alpha + d_alpha`` is below a threshold depending on (beta, R^2, d_r2) and the
    constant assumes ``alpha <= 0.05``; PAR grows like ``alpha^(-1/(1 - R^2))`` as ``alpha -> 0``.
    With ``log=True`` returns the natural log (the bound overflows for R^2 near 1).

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity, in (0, 0.5).
    r2 : float or array-like
        R^2 of the predictor, in (0, 1).
    d_alpha : float, default=0.01
        Step of capacity.
    d_r2 : float, default=0.01
        Step of R^2.
    log : bool, default=False
        Return the natural log of the bound.

    Returns
    -------
    float or ndarray
        The bound (or its log), broadcast over the inputs.

    Raises
    ------
    ValueError
        If ``alpha >= 0.5``, a fraction is outside (0, 1) or a step is not positive.

    Examples
    --------
    >>> from icml25.worstoff import par_lower_bound
    >>> round(par_lower_bound(0.01, 0.25), 3), round(par_lower_bound(0.01, 0.25, log=True), 3)
    (7.427, 2.005)
    """
    alpha = check_fraction("alpha", alpha)
    if (alpha >= 0.5).any():
        raise ValueError("Theorem 3.1 concerns small capacity: alpha must be below 0.5")
    r2 = check_fraction("r2", r2)
    d_alpha = check_positive("d_alpha", d_alpha)
    d_r2 = check_positive("d_r2", d_r2)
    base = np.log(5.1 * alpha * -ndtri(alpha))  # Phi^-1(1 - a) = -Phi^-1(a), exact for tiny a
    out = (np.log(d_alpha / d_r2) + 0.5 * np.log(r2 * (1.0 - r2)) - base / (1.0 - r2))
    if not log:
        with np.errstate(over="ignore"):
            out = np.exp(out)
    return scalar_or_array(out)


def prop33_region(alpha, beta, r2):
    """Which case of Proposition 3.3 guarantees local PAR >= 1: 1, 2, or 0 (none).

    Case 1: ``0.15 < R^2 < 0.85``, ``0.03 < beta < 0.5``, ``alpha <= beta``.
    Case 2: ``0.2 < R^2 < 0.5``, ``beta >= 0.15``, ``alpha <= 0.5``.
    The conditions are sufficient, not necessary: PAR > 1 over a much wider region.

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float or array-like
        Target fraction (the worst-off), in (0, 1).
    r2 : float or array-like
        R^2 of the predictor, in [0, 1].

    Returns
    -------
    int or ndarray of int
        1, 2 or 0, broadcast over the inputs.

    Raises
    ------
    ValueError
        If a fraction is outside its range.

    Examples
    --------
    >>> from icml25.worstoff import prop33_region
    >>> prop33_region([0.1, 0.4, 0.6], beta=0.2, r2=0.3)
    array([1, 2, 0])
    """
    alpha = check_fraction("alpha", alpha)
    beta = check_fraction("beta", beta)
    r2 = check_r2("r2", r2)
    case1 = (r2 > 0.15) & (r2 < 0.85) & (beta > 0.03) & (beta < 0.5) & (alpha <= beta)
    case2 = (r2 > 0.2) & (r2 < 0.5) & (beta >= 0.15) & (alpha <= 0.5)
    return scalar_or_array(np.where(case1, 1, np.where(case2, 2, 0)))


def prop33_factors(alpha, beta, r2):
    """``(T1, T2)`` of Proposition 3.3's proof; ``local_par >= T1 * T2``.

    ``T1 = sqrt(8 pi R^2 (1 - R^2))`` and ``T2 = Phi(z)/phi(z)`` with ``z = (b - r a)/sqrt(1-R^2)``.

    Parameters
    ----------
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float or array-like
        Target fraction, in (0, 1).
    r2 : float or array-like
        R^2 of the predictor, in (0, 1).

    Returns
    -------
    (T1, T2) : tuple of float or ndarray
        The two factors, broadcast over the inputs.

    Raises
    ------
    ValueError
        If a fraction is outside its range.

    Examples
    --------
    >>> from icml25.worstoff import local_par, prop33_factors
    >>> t1, t2 = prop33_factors(0.1, 0.2, 0.3)
    >>> round(t1, 4), round(t2, 4), bool(local_par(0.1, 0.2, 0.3) >= t1 * t2)
    (2.2974, 1.1024, True)
    """
    alpha = check_fraction("alpha", alpha)
    beta = check_fraction("beta", beta)
    r2 = check_fraction("r2", r2)
    a, b, r = ndtri(alpha), ndtri(beta), np.sqrt(r2)
    z = _z(a, b, r, r2)
    t1 = np.sqrt(8.0 * np.pi * r2 * (1.0 - r2))
    with np.errstate(over="ignore"):
        t2 = np.exp(log_ndtr(z) + 0.5 * z * z + 0.5 * _LOG_2PI)
    return scalar_or_array(t1), scalar_or_array(t2)
