"""The paper's empirical method, for a user's own outcomes and predictions.

Conventions
-----------
* ``y`` is the welfare outcome and ``yhat`` a prediction of it. By default lower is worse
  (income); pass ``lower_is_worse=False`` when higher is worse (unemployment duration).
* The worst-off are the ``beta`` fraction with the worst outcomes; the policy screens the ``alpha``
  fraction with the worst predictions. The value is the recall: the share of the worst-off screened.
* Predictions are recalibrated onto the outcome's scale before R^2, the PAR and the "better
  model" are computed (:func:`recalibrate`: the least-squares line of ``y`` on ``yhat``;
  ``recalibrate=False`` turns it off). Recall depends only on the ranking, but the R^2 and the
  residual-scaled "better model" depend on the scale: without it, multiplying a model's
  predictions by a constant changes its PAR.
* Ties are broken at random, and we return the *expected* recall under that tie-breaking, computed
  exactly: a tied block at the screening boundary is screened fractionally. This matters for coarse
  predictors (a depth-4 tree has at most 16 distinct predictions) and for capped outcomes. It also
  makes ``alpha * n`` continuous, so recall is piecewise linear in ``alpha``.
"""

from __future__ import annotations

import numpy as np

from icml25.worstoff._validation import (
    check_fraction,
    check_outcomes,
    check_positive,
    scalar_or_array,
)

__all__ = [
    "recalibrate",
    "recalibration",
    "r2_score",
    "empirical_value",
    "capacity_needed",
    "improve_predictions",
    "predictions_at_r2",
    "empirical_par",
    "empirical_par_at_r2",
    "delta_alpha_star",
]


def _oriented(y, yhat, lower_is_worse: bool) -> tuple[np.ndarray, np.ndarray]:
    y, yhat = check_outcomes(y, yhat)
    return (y, yhat) if lower_is_worse else (-y, -yhat)


def recalibration(y, yhat) -> tuple[float, float, bool]:
    """The least-squares line ``y ~ intercept + slope * yhat`` used by :func:`recalibrate`.

    Parameters
    ----------
    y, yhat : array-like of shape (n,)
        Outcomes and predictions.

    Returns
    -------
    intercept, slope : float
        The fitted line (0 and 1 when it is not applied).
    applied : bool
        False when ``yhat`` is constant or the slope is not positive: a line with a
        non-positive slope would reverse (or erase) the ranking, which is the predictor's
        whole content, so the predictions are left as they are (and
        :func:`~icml25.worstoff.uncertainty.predictor_problems` reports R^2 <= 0).

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([1.0, 2.0, 3.0, 4.0])
    >>> a, b, applied = recalibration(y, 10 * y + 5)
    >>> round(a, 9), round(b, 9), applied
    (-0.5, 0.1, True)
    """
    y, yhat = check_outcomes(y, yhat)
    var = float(np.var(yhat))
    if var <= 0:
        return 0.0, 1.0, False
    slope = float(np.mean((yhat - yhat.mean()) * (y - y.mean())) / var)
    if not slope > 0:
        return 0.0, 1.0, False
    return float(y.mean() - slope * yhat.mean()), slope, True


def recalibrate(y, yhat) -> np.ndarray:
    """Predictions put on the outcome's scale: ``intercept + slope * yhat`` from the
    least-squares regression of ``y`` on ``yhat`` (:func:`recalibration`).

    The ranking, hence every recall, is unchanged (the slope is positive); the R^2 becomes
    the squared correlation, the largest any affine rescaling of ``yhat`` attains, and the
    residual-scaled "better model" (:func:`improve_predictions`) no longer depends on the
    units the predictions happen to be in. Left unchanged when the slope is not positive.

    Parameters
    ----------
    y, yhat : array-like of shape (n,)
        Outcomes and predictions.

    Returns
    -------
    numpy.ndarray of shape (n,)
        The recalibrated predictions.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([1.0, 2.0, 4.0, 3.0]); p = np.array([0.1, 0.2, 0.3, 0.4])
    >>> bool(np.allclose(recalibrate(y, 7 * p - 3), recalibrate(y, p)))
    True
    """
    y, yhat = check_outcomes(y, yhat)
    a, b, _ = recalibration(y, yhat)
    return a + b * yhat


def r2_score(y, yhat) -> float:
    """Coefficient of determination ``1 - SSE/SST`` (the paper's R^2).

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For inputs of different lengths, too short, or not finite.

    Examples
    --------
    >>> from icml25.worstoff import r2_score
    >>> r2_score([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0])
    0.8
    """
    y, yhat = check_outcomes(y, yhat)
    return float(1.0 - np.sum((y - yhat) ** 2) / np.sum((y - y.mean()) ** 2))


def _tie_mean(sorted_keys: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Replace each weight by the mean weight of its block of tied keys (random tie-breaking)."""
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    sums = np.add.reduceat(weights, starts)
    counts = np.diff(np.r_[starts, sorted_keys.size])
    return np.repeat(sums / counts, counts)


def _bottom_weights(values: np.ndarray, fraction: float) -> np.ndarray:
    """Expected membership (0..1) of each unit in the lowest ``fraction`` of ``values``."""
    n = values.size
    order = np.argsort(values, kind="stable")
    k = fraction * n
    w_sorted = np.clip(k - np.arange(n), 0.0, 1.0)
    w_sorted = _tie_mean(values[order], w_sorted)
    w = np.empty(n)
    w[order] = w_sorted
    return w


def _recall_curve(y: np.ndarray, yhat: np.ndarray, beta: float):
    """(cumulative expected worst-off caught after screening m units, m = 0..n; beta * n)."""
    worst = _bottom_weights(y, beta)
    order = np.argsort(yhat, kind="stable")
    caught = _tie_mean(yhat[order], worst[order])
    return np.r_[0.0, np.cumsum(caught)], beta * y.size


def empirical_value(y, yhat, alpha, beta, *, lower_is_worse: bool = True):
    """Empirical recall ``V(alpha, beta)`` of screening the ``alpha`` fraction with the worst
    predictions; vectorised over ``alpha`` (``beta`` a scalar).

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions (only their ranking matters; ties are screened fractionally).
    alpha : float or array-like
        Screening capacity, in [0, 1].
    beta : float
        Target fraction, in (0, 1).
    lower_is_worse : bool, default=True
        Whether low outcomes (and predictions) are the worse ones.

    Returns
    -------
    float or ndarray
        Expected recall, shaped like ``alpha``.

    Raises
    ------
    ValueError
        For mismatched or invalid inputs, or a fraction outside its range.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import empirical_value
    >>> y = np.arange(10.0)
    >>> empirical_value(y, y, [0.1, 0.2], 0.2)            # a perfect ranking
    array([0.5, 1. ])
    >>> round(empirical_value(y, np.zeros(10), 0.2, 0.2), 6)  # all tied: random screening
    0.2
    """
    y, yhat = _oriented(y, yhat, lower_is_worse)
    alpha = check_fraction("alpha", alpha, low_open=False, high_open=False)
    beta = float(check_fraction("beta", beta))
    cum, total = _recall_curve(y, yhat, beta)
    m = np.arange(cum.size, dtype=float)
    return scalar_or_array(np.interp(alpha * y.size, m, cum) / total)


def capacity_needed(y, yhat, beta, recall, *, lower_is_worse: bool = True):
    """Smallest screening capacity ``alpha`` whose expected recall reaches ``recall``
    (``alpha* = inf{alpha : V(alpha, beta) >= p}``); vectorised over ``recall``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions.
    beta : float
        Target fraction, in (0, 1).
    recall : float or array-like
        Target recall(s), in [0, 1].
    lower_is_worse : bool, default=True
        Whether low outcomes (and predictions) are the worse ones.

    Returns
    -------
    float or ndarray
        The capacity, shaped like ``recall``.

    Raises
    ------
    ValueError
        For mismatched or invalid inputs, or a fraction outside its range.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import capacity_needed
    >>> y = np.arange(10.0)
    >>> capacity_needed(y, y, 0.2, [0.5, 1.0])
    array([0.1, 0.2])
    >>> round(float(capacity_needed(y, np.zeros(10), 0.2, 0.5)), 6)   # random: alpha = recall
    0.5
    """
    y, yhat = _oriented(y, yhat, lower_is_worse)
    beta = float(check_fraction("beta", beta))
    recall = check_fraction("recall", recall, low_open=False, high_open=False)
    cum, total = _recall_curve(y, yhat, beta)
    target = recall * total
    # cum is non-decreasing and piecewise linear in m: invert on its first crossing.
    idx = np.searchsorted(cum, target - 1e-12 * total, side="left")
    idx = np.clip(idx, 1, cum.size - 1)
    lo, hi = cum[idx - 1], cum[idx]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(hi > lo, (target - lo) / (hi - lo), 0.0)
    m = (idx - 1) + np.clip(frac, 0.0, 1.0)
    m = np.where(recall <= 0, 0.0, m)
    return scalar_or_array(m / y.size)


def improve_predictions(y, yhat, delta_r2, *, mask=None):
    """The paper's "slightly better model": shrink residuals so R^2 rises by exactly ``delta_r2``.

    ``yhat + delta * (y - yhat)`` with ``delta = 1 - sqrt(1 - delta_r2 * SST / SSE)``: residuals
    keep their shape and shrink by ``1 - delta``. With ``mask`` only that subgroup's residuals
    shrink (uneven improvement, e.g. better data for one region), still raising overall R^2 by
    ``delta_r2``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions.
    delta_r2 : float
        Gain in R^2, positive.
    mask : array-like of bool, shape (n,), or None, default=None
        Subgroup whose residuals shrink (None: everybody).

    Returns
    -------
    ndarray of shape (n,)
        The improved predictions.

    Raises
    ------
    ValueError
        If the gain exceeds what the (sub)group's residuals allow, or ``mask`` has the wrong
        shape.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import improve_predictions, r2_score
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=500); yhat = y + rng.normal(size=500)
    >>> better = improve_predictions(y, yhat, 0.1)
    >>> round(r2_score(y, better) - r2_score(y, yhat), 6)
    0.1
    """
    y, yhat = check_outcomes(y, yhat)
    delta_r2 = float(check_positive("delta_r2", delta_r2))
    sel = np.ones(y.size, bool) if mask is None else np.asarray(mask, dtype=bool)
    if sel.shape != y.shape:
        raise ValueError(f"mask has shape {sel.shape}, expected {y.shape}")
    sst = np.sum((y - y.mean()) ** 2)
    sse = np.sum((y[sel] - yhat[sel]) ** 2)
    if delta_r2 * sst > sse * (1.0 + 1e-9):
        room = sse / sst
        raise ValueError(f"cannot raise R^2 by {delta_r2:g}: the residuals allow at most "
                         f"{room:.6g}")
    delta = 1.0 - np.sqrt(max(1.0 - delta_r2 * sst / sse, 0.0))
    out = yhat.copy()
    out[sel] = yhat[sel] + delta * (y[sel] - yhat[sel])
    return out


def _calibrated_noise(y, yhat, target_r2: float, rng: np.random.Generator) -> np.ndarray:
    """Degrade predictions to R^2 = target by adding shuffled residuals, then refit the line.

    Adding ``kappa * xi`` (``xi`` a permutation of the residuals: same shape, no signal) lowers the
    squared correlation with ``y``; the least-squares recalibration ``c0 + c1 * p`` of the noisy
    score has R^2 equal to that squared correlation, and ranks people the same way as ``p``.
    """
    from scipy.optimize import brentq

    xi = rng.permutation(y - yhat)
    xi = xi - xi.mean()

    def corr2(kappa: float) -> float:
        return float(np.corrcoef(yhat + kappa * xi, y)[0, 1]) ** 2

    hi = 1.0
    while corr2(hi) > target_r2:
        hi *= 4.0
        if hi > 1e8:
            raise ValueError(f"cannot degrade the predictions to R^2 = {target_r2:g}")
    kappa = brentq(lambda k: corr2(k) - target_r2, 0.0, hi, xtol=1e-14, rtol=1e-14)
    p = yhat + kappa * xi
    slope, intercept = np.polyfit(p, y, 1)
    return intercept + slope * p


def predictions_at_r2(y, yhat, target_r2: float, *, seed=0) -> np.ndarray:
    """Predictions with R^2 = ``target_r2`` built from ``yhat`` (the "R^2 regimes" of Fig. 3).

    Above the current R^2: :func:`improve_predictions` (residual scaling). Below it: calibrated
    noise injection (shuffled residuals, then a least-squares line; ``seed`` fixes the shuffle).
    At 0: a constant (everybody tied, so screening is random and recall equals alpha).

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions.
    target_r2 : float
        The R^2 wanted, in [0, 1].
    seed : int or numpy.random.Generator, default=0
        Seed of the shuffle (used below the current R^2).

    Returns
    -------
    ndarray of shape (n,)

    Raises
    ------
    ValueError
        For invalid inputs or a target outside [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import predictions_at_r2, r2_score
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=500); yhat = y + rng.normal(size=500)
    >>> round(r2_score(y, predictions_at_r2(y, yhat, 0.3)), 6)
    0.3
    """
    from icml25.core import make_rng

    y, yhat = check_outcomes(y, yhat)
    target_r2 = float(check_fraction("target_r2", target_r2, low_open=False, high_open=False))
    current = r2_score(y, yhat)
    if target_r2 == 0.0:
        return np.full_like(y, y.mean())
    if target_r2 > current:
        return improve_predictions(y, yhat, target_r2 - current)
    if target_r2 == current:
        return yhat.copy()
    # Below: R^2 <= squared correlation, so shuffled-residual noise can always reach the target.
    return _calibrated_noise(y, yhat, target_r2, make_rng(seed))


def empirical_par(y, yhat, alpha, beta, d_alpha=0.1, d_r2=0.1, *, lower_is_worse: bool = True,
                  warn: bool = True, recalibrate: bool = True):
    """Empirical prediction-access ratio, vectorised over ``alpha``.

    With ``recalibrate=True`` (default) the predictions are first put on the outcome's scale
    (:func:`recalibrate`), so rescaling them leaves the PAR unchanged.

    Warns (:class:`~icml25.worstoff.uncertainty.MeaninglessPARWarning`, with the reason) when
    R^2 <= 0 or ``yhat`` is constant: the PAR then means nothing. For intervals, see
    :func:`~icml25.worstoff.uncertainty.bootstrap_evaluation`.

    ``[V(alpha + d_alpha) - V(alpha)] / [V+(alpha) - V(alpha)]`` where ``V+`` uses
    :func:`improve_predictions` ``(y, yhat, d_r2)``. A non-positive denominator (the better model
    does not help at this alpha) gives ``inf`` when access helps, ``nan`` when neither does.

    Parameters
    ----------
    y : array-like of shape (n,)
        Observed outcomes.
    yhat : array-like of shape (n,)
        Predictions of the outcomes.
    alpha : float or array-like
        Screening capacity (fraction screened), in (0, 1).
    beta : float
        Target fraction (the worst-off), in (0, 1).
    d_alpha : float, default=0.1
        Step of capacity.
    d_r2 : float, default=0.1
        Step of R^2 by which the predictions are improved.
    lower_is_worse : bool, default=True
        The worst-off have the lowest outcomes (False: the highest, e.g. unemployment spells).
    warn : bool, default=True
        Warn when the PAR means nothing (R^2 <= 0, constant predictions).

    Returns
    -------
    float or ndarray
        The empirical PAR at each ``alpha``.

    Raises
    ------
    ValueError
        For outcomes and predictions of different lengths, non-finite values, or fractions
        outside (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import simulate_gaussian
    >>> y, yhat = simulate_gaussian(20_000, 0.25, np.random.default_rng(0))
    >>> empirical_par(y, yhat, [0.1, 0.2], 0.2).round(2)   # closed form: 4.72, 2.55
    array([4.45, 2.28])
    """
    y, yhat = check_outcomes(y, yhat)
    alpha = check_fraction("alpha", alpha)
    d_alpha = float(check_positive("d_alpha", d_alpha))
    if (alpha + d_alpha > 1 + 1e-12).any():
        raise ValueError("alpha + d_alpha must not exceed 1")
    if recalibrate:
        yhat = _recalibrated(y, yhat)
    better = improve_predictions(y, yhat, d_r2)
    if warn:
        import warnings

        from icml25.worstoff.uncertainty import MeaninglessPARWarning, predictor_problems

        for problem in predictor_problems(y, yhat):
            warnings.warn(problem, MeaninglessPARWarning, stacklevel=2)
    return _par_from(y, yhat, better, alpha, beta, d_alpha, lower_is_worse)


def _recalibrated(y, yhat):
    a, b, _ = recalibration(y, yhat)
    return a + b * yhat


def _par_from(y, base_pred, better_pred, alpha, beta, d_alpha, lower_is_worse):
    base = np.asarray(empirical_value(y, base_pred, alpha, beta, lower_is_worse=lower_is_worse))
    up = np.asarray(empirical_value(y, base_pred, np.minimum(alpha + d_alpha, 1.0), beta,
                                    lower_is_worse=lower_is_worse))
    pred = np.asarray(empirical_value(y, better_pred, alpha, beta, lower_is_worse=lower_is_worse))
    num, den = up - base, pred - base
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                       np.where(num > 0, np.inf, np.nan))
    return scalar_or_array(out)


def empirical_par_at_r2(y, yhat, alpha, beta, r2, d_alpha=0.1, d_r2=0.1, *,
                        lower_is_worse: bool = True, seed=0, recalibrate: bool = True):
    """Empirical PAR in a chosen R^2 regime (the paper's Figure 3 regimes 0, model, 1 - step).

    Both the regime's predictions and the improved ones come from :func:`predictions_at_r2`
    applied to ``yhat`` (residual scaling upwards, calibrated noise downwards), so the residual
    shape of the user's model is kept. With ``recalibrate=True`` (default) ``yhat`` is first
    put on the outcome's scale (:func:`recalibrate`); at the model's own (recalibrated) R^2
    this equals :func:`empirical_par`.

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions.
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float
        Target fraction, in (0, 1).
    r2 : float
        The regime's R^2, in [0, 1).
    d_alpha : float, default=0.1
        Step of capacity.
    d_r2 : float, default=0.1
        Step of R^2.
    lower_is_worse : bool, default=True
        Whether low outcomes (and predictions) are the worse ones.
    seed : int, default=0
        Seed of the noise injection.
    recalibrate : bool, default=True
        Put ``yhat`` on the outcome's scale first.

    Returns
    -------
    float or ndarray
        The empirical PAR, shaped like ``alpha``.

    Raises
    ------
    ValueError
        If ``r2 + d_r2`` or ``alpha + d_alpha`` exceeds 1, or an input is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import empirical_par_at_r2
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=500); yhat = y + rng.normal(size=500)
    >>> round(float(empirical_par_at_r2(y, yhat, 0.2, 0.2, r2=0.3)), 3)
    2.5
    """
    y, yhat = check_outcomes(y, yhat)
    if recalibrate:
        yhat = _recalibrated(y, yhat)
    alpha = check_fraction("alpha", alpha)
    d_alpha = float(check_positive("d_alpha", d_alpha))
    d_r2 = float(check_positive("d_r2", d_r2))
    r2 = float(check_fraction("r2", r2, low_open=False, high_open=True))
    if r2 + d_r2 > 1 + 1e-12:
        raise ValueError("r2 + d_r2 must not exceed 1")
    if (alpha + d_alpha > 1 + 1e-12).any():
        raise ValueError("alpha + d_alpha must not exceed 1")
    base = predictions_at_r2(y, yhat, r2, seed=seed)
    better = predictions_at_r2(y, yhat, min(r2 + d_r2, 1.0), seed=seed)
    return _par_from(y, base, better, alpha, beta, d_alpha, lower_is_worse)


def delta_alpha_star(y, yhat_better, yhat_simple, alpha, beta, *, lower_is_worse: bool = True):
    """Extra capacity the simpler model needs to match the better model's recall at ``alpha``.

    ``inf{d > 0 : V_simple(alpha + d) - V_simple(alpha) >= V_better(alpha) - V_simple(alpha)}``;
    0 where the simpler model is already as good, ``nan`` where it cannot catch up within
    ``1 - beta`` (the paper's search range) or before everybody is screened.

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat_better : array-like of shape (n,)
        Predictions of the better model.
    yhat_simple : array-like of shape (n,)
        Predictions of the simpler model.
    alpha : float or array-like
        Screening capacity, in (0, 1).
    beta : float
        Target fraction, in (0, 1).
    lower_is_worse : bool, default=True
        Whether low outcomes (and predictions) are the worse ones.

    Returns
    -------
    float or ndarray
        The extra capacity, shaped like ``alpha``.

    Raises
    ------
    ValueError
        For mismatched or invalid inputs, or a fraction outside its range.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import delta_alpha_star
    >>> y = np.arange(10.0)
    >>> float(delta_alpha_star(y, np.zeros(10), y, 0.2, 0.2))   # the simpler one is better
    0.0
    >>> float(delta_alpha_star(y, y, np.zeros(10), 0.2, 0.2))   # random needs 0.8 > 1 - beta
    nan
    """
    y, yhat_better = check_outcomes(y, yhat_better, names=("y", "yhat_better"))
    _, yhat_simple = check_outcomes(y, yhat_simple, names=("y", "yhat_simple"))
    alpha = check_fraction("alpha", alpha)
    beta_f = float(check_fraction("beta", beta))
    target = np.asarray(empirical_value(y, yhat_better, alpha, beta_f,
                                        lower_is_worse=lower_is_worse))
    simple = np.asarray(empirical_value(y, yhat_simple, alpha, beta_f,
                                        lower_is_worse=lower_is_worse))
    need = np.asarray(capacity_needed(y, yhat_simple, beta_f, np.minimum(target, 1.0),
                                      lower_is_worse=lower_is_worse))
    d = np.where(target <= simple, 0.0, np.maximum(need - alpha, 0.0))
    d = np.where(d >= 1.0 - beta_f, np.nan, d)
    return scalar_or_array(d)

