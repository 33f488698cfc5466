"""Sampling uncertainty of the empirical quantities, and when the PAR means nothing.

* :func:`bootstrap_evaluation` - seeded, vectorised percentile bootstrap (resampling people) of
  R^2, the recall at each alpha, the recall one capacity step later, the recall of the "slightly
  better model" (residual scaling, recomputed on each resample), the two gains, the empirical
  PAR and the capacity needed for target recalls. Point estimates equal
  :func:`~icml25.worstoff.empirical.empirical_value` / :func:`~.empirical.empirical_par` /
  :func:`~.empirical.capacity_needed` exactly (same tie handling).
* :func:`predictor_problems` - the reasons the PAR is meaningless for a predictor (R^2 <= 0, a
  constant predictor); :func:`bootstrap_evaluation` and :func:`~.empirical.empirical_par` warn
  with them (:class:`MeaninglessPARWarning`).
* :func:`smoothed_par` - the empirical PAR kernel-smoothed over alpha (numerator and
  denominator averaged separately) with a bootstrap band.

>>> import numpy as np
>>> rng = np.random.default_rng(0); y = rng.normal(size=2000)
>>> p = 0.45 * y + rng.normal(0, .5, 2000)
>>> ev = bootstrap_evaluation(y, p, [0.2], 0.2, n_boot=200, seed=0)
>>> lo, hi = ev.par_ci[0]; bool(lo < ev.par[0] < hi), ev.meaningful
(True, True)
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from icml25.worstoff._validation import check_fraction, check_outcomes, check_positive

__all__ = [
    "MeaninglessPARWarning",
    "par_verdict",
    "ScreeningEvaluation",
    "SmoothedPAR",
    "bootstrap_delta_alpha_star",
    "bootstrap_evaluation",
    "predictor_problems",
    "smoothed_par",
]


class MeaninglessPARWarning(UserWarning):
    """The predictor carries no usable signal (R^2 <= 0 or constant): its PAR means nothing.

    Parameters
    ----------
    *args
        The warning message, as for any ``UserWarning``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from icml25.worstoff import MeaninglessPARWarning, bootstrap_evaluation
    >>> rng = np.random.default_rng(0); y = rng.normal(size=200)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     ev = bootstrap_evaluation(y, -y, [0.2], 0.2, n_boot=10, recalibrate=False)
    >>> caught[0].category is MeaninglessPARWarning, ev.meaningful, ev.lever()
    (True, False, [None])
    """


def predictor_problems(y, yhat) -> list[str]:
    """Reasons why PAR comparisons for ``yhat`` are meaningless; empty when there are none.

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions.

    Returns
    -------
    list of str
        One sentence per problem (a constant predictor; R^2 <= 0).

    Raises
    ------
    ValueError
        For mismatched or invalid inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import predictor_problems
    >>> y = np.random.default_rng(0).normal(size=100)
    >>> predictor_problems(y, y + 0.1)
    []
    >>> [p[:27] for p in predictor_problems(y, np.zeros(100))]
    ['the predictor is constant (', 'R^2 = -0.0071 <= 0: the pre']
    """
    y, yhat = check_outcomes(y, yhat)
    out = []
    if np.ptp(yhat) == 0:
        out.append(f"the predictor is constant ({yhat[0]:g} for all {yhat.size} rows): "
                   "screening by it is random, so recall equals alpha, and 'improving' it by "
                   "residual scaling turns it into the outcome itself; the PAR is meaningless "
                   "and no recommendation is made")
    sst = np.sum((y - y.mean()) ** 2)
    r2 = 1.0 - np.sum((y - yhat) ** 2) / sst if sst > 0 else np.nan
    if not r2 > 0:
        out.append(f"R^2 = {r2:.3g} <= 0: the predictor explains none of the outcome's variance "
                   "(it does no better than predicting the mean); the PAR, which compares a "
                   "capacity step with an R^2 step from this model, is meaningless and no "
                   "recommendation is made")
    return out


def par_verdict(low: float, high: float, cost_ratio: float = 1.0, *,
                saturated: bool = False) -> str:
    """What a PAR interval supports, in words.

    Parameters
    ----------
    low, high : float
        The interval's ends (``high`` may be ``inf``).
    cost_ratio : float, default=1.0
        Cost of one capacity step / cost of one R^2 step.
    saturated : bool, default=False
        No step gains recall (both gains' intervals end at 0).

    Returns
    -------
    str
        ``"expand access"``, ``"improve prediction"``, ``"unclear"`` or ``"neither"``,
        followed by the reason.

    Examples
    --------
    >>> par_verdict(1.4, 2.9)
    'expand access: PAR > 1 across the interval (a capacity step buys more recall)'
    >>> par_verdict(0.6, float("inf"))
    'unclear: the interval contains 1 (the data support either lever)'
    """
    c = float(cost_ratio)
    if saturated:
        return "neither: recall is saturated (no step gains anything)"
    if low > c:
        return (f"expand access: PAR > {c:g} across the interval (a capacity step buys more "
                "recall)")
    if high < c:
        return (f"improve prediction: PAR < {c:g} across the interval (an R^2 step buys more "
                "recall)")
    return f"unclear: the interval contains {c:g} (the data support either lever)"


def _tie_mean(keys: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Row-wise: each weight replaced by the mean over its block of equal (sorted) keys."""
    b, n = keys.shape
    new = np.ones((b, n), bool)
    new[:, 1:] = keys[:, 1:] != keys[:, :-1]
    ids = np.cumsum(new.ravel()) - 1
    sums = np.bincount(ids, weights=w.ravel())
    counts = np.bincount(ids)
    return (sums / counts)[ids].reshape(b, n)


def _cum_caught(Y: np.ndarray, P: np.ndarray, beta: float) -> np.ndarray:
    """(b, n + 1) expected worst-off caught after screening m units (random tie-breaking)."""
    b, n = Y.shape
    oy = np.argsort(Y, axis=1, kind="stable")
    ws = np.broadcast_to(np.clip(beta * n - np.arange(n), 0.0, 1.0), (b, n))
    ws = _tie_mean(np.take_along_axis(Y, oy, 1), ws)
    worst = np.empty((b, n))
    np.put_along_axis(worst, oy, ws, 1)
    op = np.argsort(P, axis=1, kind="stable")
    caught = _tie_mean(np.take_along_axis(P, op, 1), np.take_along_axis(worst, op, 1))
    return np.concatenate([np.zeros((b, 1)), np.cumsum(caught, axis=1)], axis=1)


def _at(cum: np.ndarray, alpha: np.ndarray, beta: float) -> np.ndarray:
    n = cum.shape[1] - 1
    m = np.clip(alpha * n, 0, n)
    lo = np.minimum(np.floor(m).astype(int), n - 1)
    frac = m - lo
    return (cum[:, lo] + frac * (cum[:, lo + 1] - cum[:, lo])) / (beta * n)


def _capacity(cum: np.ndarray, recall: np.ndarray, beta: float) -> np.ndarray:
    """(b, k) capacity reaching ``recall``: (k,) targets shared by the rows or (b, k) own."""
    b, n1 = cum.shape
    total = beta * (n1 - 1)
    recall = np.atleast_2d(recall)
    target = recall * total  # (1, k) or (b, k)
    idx = (cum[:, :, None] < (target - 1e-12 * total)[:, None, :]).sum(axis=1)  # (b, k)
    idx = np.clip(idx, 1, n1 - 1)
    lo = np.take_along_axis(cum, idx - 1, 1)
    hi = np.take_along_axis(cum, idx, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(hi > lo, (target - lo) / (hi - lo), 0.0)
    m = (idx - 1) + np.clip(frac, 0.0, 1.0)
    m = np.where(recall <= 0, 0.0, m)
    return m / (n1 - 1)


def _quantities(Y, P, alpha, beta, d_alpha, d_r2, recall_targets) -> dict[str, np.ndarray]:
    """Every quantity for a (b, n) stack of data sets (row 0 may be the original)."""
    ybar = Y.mean(axis=1, keepdims=True)
    sst = np.sum((Y - ybar) ** 2, axis=1)
    sse = np.sum((Y - P) ** 2, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - sse / sst
        shrink = np.sqrt(np.clip(1.0 - d_r2 * sst / sse, 0.0, None))
    delta = np.where(sse > 0, 1.0 - shrink, 0.0)
    better = P + delta[:, None] * (Y - P)
    cum = _cum_caught(Y, P, beta)
    cum_b = _cum_caught(Y, better, beta)
    v = _at(cum, alpha, beta)
    up = _at(cum, np.minimum(alpha + d_alpha, 1.0), beta)
    vp = _at(cum_b, alpha, beta)
    num, den = up - v, vp - v
    with np.errstate(divide="ignore", invalid="ignore"):
        par = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                       np.where(num > 0, np.inf, np.nan))
    return {"r2": r2, "recall": v, "recall_more_access": up, "recall_better_prediction": vp,
            "access_gain": num, "prediction_gain": den, "par": par,
            "capacity": _capacity(cum, recall_targets, beta)}


_KEYS = ("recall", "recall_more_access", "recall_better_prediction", "access_gain",
         "prediction_gain", "par", "capacity")


@dataclasses.dataclass
class ScreeningEvaluation:
    """Point estimates and percentile-bootstrap intervals for one ``beta``.

    Arrays over ``alphas``: ``recall``, ``recall_more_access`` (at alpha + d_alpha),
    ``recall_better_prediction`` (the residual-scaled model at alpha), ``access_gain``,
    ``prediction_gain``, ``par``; over ``recall_targets``: ``capacity``; scalar ``r2``. Each
    ``<name>_ci`` is an array of ``[low, high]`` rows (``inf`` where the upper end of a PAR
    interval is unbounded because the prediction gain can be zero). ``problems`` lists why the
    PAR is meaningless (then ``meaningful`` is False and :meth:`lever` gives None).
    :func:`bootstrap_evaluation` builds it; ``lever(cost_ratio)`` reads the PAR intervals and
    ``to_dict()`` gives plain JSON.

    Parameters
    ----------
    alphas : ndarray of shape (k,)
        The capacities evaluated.
    beta, d_alpha, d_r2 : float
        Target fraction and the two steps.
    n, n_boot : int
        Number of people and of bootstrap resamples.
    level : float
        Confidence level of the intervals.
    seed : int or None
        The seed used (None when a generator was passed).
    recall_targets : ndarray of shape (t,)
        Recalls for which ``capacity`` is reported.
    r2, r2_ci, recall, recall_ci, ..., capacity, capacity_ci
        The point estimates and their ``[low, high]`` intervals, as above.
    problems : list of str
        Why the PAR is meaningless (empty when it is not).
    recalibration : dict or None, default=None
        The least-squares line applied (intercept, slope, applied, r2_raw).

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import bootstrap_evaluation
    >>> rng = np.random.default_rng(0); y = rng.normal(size=1000)
    >>> ev = bootstrap_evaluation(y, 0.45 * y + rng.normal(0, .5, 1000), [0.1, 0.2], 0.2,
    ...                           n_boot=100, seed=0)
    >>> ev.par.round(1), ev.par_ci.shape, ev.lever()
    (array([7.4, 2. ]), (2, 2), ['expand access', 'expand access'])
    >>> sorted(ev.to_dict())[:3]
    ['access_gain', 'access_gain_ci', 'alphas']
    """

    alphas: np.ndarray
    beta: float
    d_alpha: float
    d_r2: float
    n: int
    n_boot: int
    level: float
    seed: int | None
    recall_targets: np.ndarray
    r2: float
    r2_ci: np.ndarray
    recall: np.ndarray
    recall_ci: np.ndarray
    recall_more_access: np.ndarray
    recall_more_access_ci: np.ndarray
    recall_better_prediction: np.ndarray
    recall_better_prediction_ci: np.ndarray
    access_gain: np.ndarray
    access_gain_ci: np.ndarray
    prediction_gain: np.ndarray
    prediction_gain_ci: np.ndarray
    par: np.ndarray
    par_ci: np.ndarray
    capacity: np.ndarray
    capacity_ci: np.ndarray
    problems: list[str]
    recalibration: dict | None = None  # intercept, slope, applied, r2_raw

    @property
    def meaningful(self) -> bool:
        return not self.problems

    def lever(self, cost_ratio: float = 1.0) -> list[str | None]:
        """Per alpha, at ``cost_ratio`` = cost of a capacity step / cost of an R^2 step:
        "expand access" when the whole PAR interval is above it, "improve prediction" when it
        is below, "unclear" when it straddles it, "neither" when no resample gains recall from
        either step (recall already saturated: PAR is 0/0, not a case for more access); None
        for every alpha when not meaningful."""
        if not self.meaningful:
            return [None] * self.alphas.size
        out = []
        saturated = (self.access_gain_ci[:, 1] <= 0) & (self.prediction_gain_ci[:, 1] <= 0)
        for (lo, hi), flat in zip(self.par_ci, saturated, strict=True):
            if flat:
                out.append("neither")
            elif lo > cost_ratio:
                out.append("expand access")
            elif hi < cost_ratio:
                out.append("improve prediction")
            else:
                out.append("unclear")
        return out

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (non-finite numbers become None)."""
        def clean(x):
            a = np.asarray(x, dtype=float)
            lst = np.where(np.isfinite(a), a, np.nan).tolist()
            return _nan_to_none(lst)

        out = {"beta": self.beta, "d_alpha": self.d_alpha, "d_r2": self.d_r2, "n": self.n,
               "n_boot": self.n_boot, "level": self.level, "seed": self.seed,
               "alphas": self.alphas.tolist(), "recall_targets": self.recall_targets.tolist(),
               "r2": self.r2, "r2_ci": clean(self.r2_ci)}
        for key in _KEYS:
            out[key] = clean(getattr(self, key))
            out[f"{key}_ci"] = clean(getattr(self, f"{key}_ci"))
        out["meaningful"] = self.meaningful
        out["warnings"] = list(self.problems)
        out["lever"] = self.lever()
        out["recalibration"] = self.recalibration
        return out


def _nan_to_none(x):
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return None if x != x else x


def _recalibrate(y, yhat, on: bool) -> tuple[np.ndarray, dict]:
    """(predictions on the outcome's scale when ``on``, the record of what was done)."""
    from icml25.worstoff.empirical import r2_score, recalibration

    raw = float(r2_score(y, yhat))
    if not on:
        return yhat, {"applied": False, "requested": False, "intercept": 0.0, "slope": 1.0,
                      "r2_raw": raw}
    a, b, applied = recalibration(y, yhat)
    return a + b * yhat, {"applied": applied, "requested": True, "intercept": a, "slope": b,
                          "r2_raw": raw}


def _check_step_and_warn(y, yhat, d_r2: float, warn: bool) -> list[str]:
    """Raise if the residuals cannot give an R^2 gain of ``d_r2``; return (and, with ``warn``,
    warn with) the reasons the PAR is meaningless."""
    sst = np.sum((y - y.mean()) ** 2)
    sse = np.sum((y - yhat) ** 2)
    if d_r2 * sst > sse * (1.0 + 1e-9):
        raise ValueError(f"cannot raise R^2 by {d_r2:g}: the residuals allow at most "
                         f"{sse / sst:.6g}")
    problems = predictor_problems(y, yhat)
    if warn:
        for p in problems:
            warnings.warn(p, MeaninglessPARWarning, stacklevel=3)
    return problems


def _bootstrap(y, yhat, n_boot, seed, chunk_elements, quantities, *more):
    """(point, draws): ``quantities(Y, P, *M)`` (a dict of arrays over (b, n) stacks of ``y``,
    ``yhat`` and the further columns ``more``) on the data and on ``n_boot`` seeded resamples
    of people, vectorised in chunks of about ``chunk_elements`` cells; draws concatenated over
    resamples."""
    from icml25.core import make_rng

    n = y.size
    cols = (y, yhat, *more)
    point = quantities(*(c[None] for c in cols))
    rng = make_rng(seed)
    per = max(1, int(chunk_elements) // n)
    draws: dict[str, list[np.ndarray]] = {k: [] for k in point}
    done = 0
    while done < n_boot:
        b = min(per, n_boot - done)
        idx = rng.integers(0, n, size=(b, n))
        for k, v in quantities(*(c[idx] for c in cols)).items():
            draws[k].append(v)
        done += b
    return point, {k: np.concatenate(v, axis=0) for k, v in draws.items()}


def bootstrap_evaluation(y, yhat, alpha, beta, d_alpha: float = 0.1, d_r2: float = 0.1, *,
                         recall_targets=(0.5, 0.75, 0.9), n_boot: int = 1000,
                         level: float = 0.95, seed: int | np.random.Generator | None = 0,
                         lower_is_worse: bool = True, chunk_elements: int = 4_000_000,
                         warn: bool = True, recalibrate: bool = True) -> ScreeningEvaluation:
    """Empirical recall, PAR (and components) and capacity with percentile bootstrap intervals.

    With ``recalibrate=True`` (default) the predictions are first put on the outcome's scale
    by the least-squares line of ``y`` on ``yhat``
    (:func:`~icml25.worstoff.empirical.recalibrate`, fitted once on all rows; recorded in
    ``recalibration``): R^2, the "better model" and the PAR then do not depend on the units
    of the predictions, only on their ranking and linear fit.

    People are resampled with replacement ``n_boot`` times (seeded by ``seed``); on each
    resample the quantiles, the residual-scaled "better model" (``d_r2``) and every quantity are
    recomputed, vectorised over resamples in chunks of about ``chunk_elements`` cells. The
    interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` percentiles. Warns with
    :class:`MeaninglessPARWarning` (and records the reason in ``problems``) when R^2 <= 0 or the
    predictor is constant.

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions.
    alpha : float or array-like of shape (k,)
        Screening capacities, in (0, 1).
    beta : float
        Target fraction, in (0, 1).
    d_alpha : float, default=0.1
        Capacity step.
    d_r2 : float, default=0.1
        R^2 step of the "better model".
    recall_targets : sequence of float, default=(0.5, 0.75, 0.9)
        Recalls for which the capacity needed is reported.
    n_boot : int, default=1000
        Bootstrap resamples, at least 10.
    level : float, default=0.95
        Confidence level of the intervals.
    seed : int, numpy.random.Generator or None, default=0
        Seed of the resampling.
    lower_is_worse : bool, default=True
        Whether low outcomes are the worse ones.
    chunk_elements : int, default=4000000
        Cells per vectorised chunk (memory versus speed).
    warn : bool, default=True
        Warn with :class:`MeaninglessPARWarning`.
    recalibrate : bool, default=True
        Put the predictions on the outcome's scale first.

    Returns
    -------
    ScreeningEvaluation

    Raises
    ------
    ValueError
        For invalid inputs, ``alpha + d_alpha > 1``, ``n_boot < 10``, or a ``d_r2`` larger than
        the residuals allow.

    Warns
    -----
    MeaninglessPARWarning
        When R^2 <= 0 or the predictor is constant (with ``warn=True``).

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import bootstrap_evaluation
    >>> rng = np.random.default_rng(0); y = rng.normal(size=2000)
    >>> p = 0.45 * y + rng.normal(0, .5, 2000)
    >>> ev = bootstrap_evaluation(y, p, [0.2], 0.2, n_boot=200, seed=0)
    >>> lo, hi = ev.par_ci[0]; bool(lo < ev.par[0] < hi), ev.meaningful
    (True, True)
    """
    y, yhat = check_outcomes(y, yhat)
    if not lower_is_worse:
        y, yhat = -y, -yhat
    alphas = np.atleast_1d(check_fraction("alpha", alpha)).astype(float)
    beta = float(check_fraction("beta", beta))
    d_alpha = float(check_positive("d_alpha", d_alpha))
    d_r2 = float(check_positive("d_r2", d_r2))
    level = float(check_fraction("level", level))
    targets = np.atleast_1d(check_fraction("recall_targets", recall_targets, low_open=False,
                                           high_open=False)).astype(float)
    if (alphas + d_alpha > 1 + 1e-12).any():
        raise ValueError("alpha + d_alpha must not exceed 1")
    if int(n_boot) < 10:
        raise ValueError(f"n_boot must be at least 10, got {n_boot!r}")
    n_boot = int(n_boot)
    n = y.size
    yhat, recal = _recalibrate(y, yhat, recalibrate)
    problems = _check_step_and_warn(y, yhat, d_r2, warn)
    point, draws = _bootstrap(y, yhat, n_boot, seed, chunk_elements,
                              lambda Y, P: _quantities(Y, P, alphas, beta, d_alpha, d_r2,
                                                       targets))
    lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2

    def ci(key):
        a = draws[key]
        if a.ndim == 1:
            a = a[:, None]
        if key == "par":  # 0/0 (neither lever helps) counts as unbounded, like x/0
            a = np.where(np.isnan(a) | np.isinf(a), 1e300, a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = np.stack([np.nanpercentile(a, lo_q, axis=0),
                            np.nanpercentile(a, hi_q, axis=0)], axis=-1)
        return np.where(out >= 1e299, np.inf, out)

    fields = {}
    for key in _KEYS:
        fields[key] = point[key][0]
        fields[f"{key}_ci"] = ci(key)
    return ScreeningEvaluation(
        alphas=alphas, beta=beta, d_alpha=d_alpha, d_r2=d_r2, n=n, n_boot=n_boot, level=level,
        seed=seed if isinstance(seed, int) else None, recall_targets=targets,
        r2=float(point["r2"][0]), r2_ci=ci("r2")[0], problems=problems,
        recalibration=recal, **fields)


@dataclasses.dataclass
class SmoothedPAR:
    """A kernel-smoothed empirical PAR curve over alpha with a percentile-bootstrap band.

    ``access_gain`` and ``prediction_gain`` are the Gaussian-kernel averages (bandwidth
    ``bandwidth`` in alpha) of the two recall gains over a fine grid of capacities; ``par`` is
    their ratio. Smoothing numerator and denominator separately (not the ratio) keeps the PAR's
    meaning - gain of a capacity step over gain of an R^2 step, now averaged over neighbouring
    capacities - while removing the jumps the finite sample puts between neighbouring alpha.
    Each ``<name>_ci`` holds ``[low, high]`` rows. :func:`smoothed_par` builds it;
    ``lever(cost_ratio)`` / ``verdicts(cost_ratio)`` read the intervals and ``to_dict()`` gives
    plain JSON.

    Parameters
    ----------
    alphas : ndarray of shape (k,)
        The capacities evaluated.
    beta, d_alpha, d_r2, bandwidth : float
        Target fraction, the two steps and the kernel bandwidth.
    n, n_boot : int
        Number of people and of bootstrap resamples.
    level : float
        Confidence level of the band.
    par, par_ci, access_gain, access_gain_ci, prediction_gain, prediction_gain_ci : ndarray
        Smoothed values of shape (k,) and their ``[low, high]`` rows, shape (k, 2).
    problems : list of str
        Why the PAR is meaningless (empty when it is not).
    recalibration : dict or None, default=None
        The least-squares line applied.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import smoothed_par
    >>> rng = np.random.default_rng(0); y = rng.normal(size=1000)
    >>> sm = smoothed_par(y, 0.45 * y + rng.normal(0, .5, 1000), 0.2, alphas=[0.1, 0.3],
    ...                   n_boot=50, seed=0)
    >>> sm.par.round(1), sm.lever()
    (array([7.2, 1.8]), ['expand access', 'expand access'])
    """

    alphas: np.ndarray
    beta: float
    d_alpha: float
    d_r2: float
    bandwidth: float
    n: int
    n_boot: int
    level: float
    par: np.ndarray
    par_ci: np.ndarray
    access_gain: np.ndarray
    access_gain_ci: np.ndarray
    prediction_gain: np.ndarray
    prediction_gain_ci: np.ndarray
    problems: list[str]
    recalibration: dict | None = None

    @property
    def meaningful(self) -> bool:
        return not self.problems

    def lever(self, cost_ratio: float = 1.0) -> list[str | None]:
        """Per alpha, what the smoothed PAR's interval supports (:func:`par_verdict`, its
        first word: "expand access", "improve prediction", "unclear", "neither"); None for
        every alpha when not meaningful."""
        return [None if v is None else v.split(":")[0] for v in self.verdicts(cost_ratio)]

    def verdicts(self, cost_ratio: float = 1.0) -> list[str | None]:
        """Per alpha, :func:`par_verdict` of the smoothed PAR's interval, with its reason."""
        if not self.meaningful:
            return [None] * self.alphas.size
        saturated = (self.access_gain_ci[:, 1] <= 0) & (self.prediction_gain_ci[:, 1] <= 0)
        return [par_verdict(lo, hi, cost_ratio, saturated=bool(s))
                for (lo, hi), s in zip(self.par_ci, saturated, strict=True)]

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (non-finite numbers become None)."""
        def clean(x):
            a = np.asarray(x, dtype=float)
            return _nan_to_none(np.where(np.isfinite(a), a, np.nan).tolist())

        out = {"alphas": self.alphas.tolist(), "bandwidth": self.bandwidth}
        for key in ("par", "access_gain", "prediction_gain"):
            out[key] = clean(getattr(self, key))
            out[f"{key}_ci"] = clean(getattr(self, f"{key}_ci"))
        out["meaningful"] = self.meaningful
        out["lever"] = self.lever()
        out["verdict"] = self.verdicts()
        out["recalibration"] = self.recalibration
        return out


def smoothed_par(y, yhat, beta, d_alpha: float = 0.1, d_r2: float = 0.1, *, alphas=None,
                 bandwidth: float = 0.05, grid_points: int = 201, n_boot: int = 1000,
                 level: float = 0.95, seed: int | np.random.Generator | None = 0,
                 lower_is_worse: bool = True, chunk_elements: int = 4_000_000,
                 warn: bool = True, recalibrate: bool = True) -> SmoothedPAR:
    """The empirical PAR smoothed over alpha, with a seeded percentile-bootstrap band.

    The access gain V(a + d_alpha) - V(a) and the prediction gain (the residual-scaled model,
    ``d_r2``) are computed on ``grid_points`` capacities a in [0, 1 - d_alpha], averaged with a
    Gaussian kernel of ``bandwidth`` (truncated to that range and renormalised) at each of
    ``alphas`` (default: 0.02 ... 1 - d_alpha - 0.02), and divided. On every bootstrap resample
    the whole curve is recomputed, so the band is simultaneous in construction but pointwise
    in coverage. ``bandwidth`` -> 0 recovers the raw empirical PAR on the grid.
    ``recalibrate`` as in :func:`bootstrap_evaluation`.

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat : array-like of shape (n,)
        Predictions.
    beta : float
        Target fraction, in (0, 1).
    d_alpha : float, default=0.1
        Capacity step.
    d_r2 : float, default=0.1
        R^2 step of the "better model".
    alphas : array-like or None, default=None
        Where to report the curve (None: 0.02 ... 1 - d_alpha - 0.02).
    bandwidth : float, default=0.05
        Standard deviation of the Gaussian kernel, in units of alpha.
    grid_points : int, default=201
        Capacities of the fine grid that is smoothed.
    n_boot : int, default=1000
        Bootstrap resamples.
    level : float, default=0.95
        Confidence level of the band.
    seed : int, numpy.random.Generator or None, default=0
        Seed of the resampling.
    lower_is_worse : bool, default=True
        Whether low outcomes are the worse ones.
    chunk_elements : int, default=4000000
        Cells per vectorised chunk.
    warn : bool, default=True
        Warn with :class:`MeaninglessPARWarning`.
    recalibrate : bool, default=True
        Put the predictions on the outcome's scale first.

    Returns
    -------
    SmoothedPAR

    Raises
    ------
    ValueError
        For invalid inputs or steps, or a ``d_r2`` larger than the residuals allow.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1); yhat = rng.normal(0, .45, 3000)
    >>> y = yhat + rng.normal(0, .9, 3000)
    >>> sm = smoothed_par(y, yhat, 0.2, alphas=[0.2, 0.4], n_boot=100, seed=0)
    >>> bool(np.all(sm.par_ci[:, 0] < sm.par) and np.all(sm.par < sm.par_ci[:, 1]))
    True
    """
    y, yhat = check_outcomes(y, yhat)
    if not lower_is_worse:
        y, yhat = -y, -yhat
    beta = float(check_fraction("beta", beta))
    d_alpha = float(check_positive("d_alpha", d_alpha))
    d_r2 = float(check_positive("d_r2", d_r2))
    bandwidth = float(check_positive("bandwidth", bandwidth))
    level = float(check_fraction("level", level))
    if d_alpha >= 1:
        raise ValueError(f"d_alpha must be below 1, got {d_alpha:g}")
    if int(grid_points) < 10:
        raise ValueError(f"grid_points must be at least 10, got {grid_points!r}")
    if int(n_boot) < 10:
        raise ValueError(f"n_boot must be at least 10, got {n_boot!r}")
    top = 1.0 - d_alpha
    if alphas is None:
        alphas = np.linspace(0.02, top - 0.02, 50) if top > 0.05 else np.array([top / 2])
    alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    if np.any(alphas < 0) or np.any(alphas > top + 1e-12) or not np.all(np.isfinite(alphas)):
        raise ValueError(f"alphas must lie in [0, 1 - d_alpha] = [0, {top:g}]")
    yhat, recal = _recalibrate(y, yhat, recalibrate)
    problems = _check_step_and_warn(y, yhat, d_r2, warn)
    grid = np.linspace(0.0, top, int(grid_points))
    W = np.exp(-0.5 * ((alphas[:, None] - grid[None, :]) / bandwidth) ** 2)
    W /= W.sum(axis=1, keepdims=True)
    targets = np.array([0.5])

    def quantities(Y, P):
        q = _quantities(Y, P, grid, beta, d_alpha, d_r2, targets)
        num, den = q["access_gain"] @ W.T, q["prediction_gain"] @ W.T
        with np.errstate(divide="ignore", invalid="ignore"):
            par = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                           np.where(num > 0, np.inf, np.nan))
        return {"access_gain": num, "prediction_gain": den, "par": par}

    point, draws = _bootstrap(y, yhat, int(n_boot), seed, chunk_elements, quantities)
    lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    fields = {}
    for key, a in draws.items():
        if key == "par":
            a = np.where(np.isnan(a) | np.isinf(a), 1e300, a)
        out = np.stack([np.percentile(a, lo_q, axis=0), np.percentile(a, hi_q, axis=0)], -1)
        fields[key] = point[key][0]
        fields[f"{key}_ci"] = np.where(out >= 1e299, np.inf, out)
    return SmoothedPAR(alphas=alphas, beta=beta, d_alpha=d_alpha, d_r2=d_r2,
                       bandwidth=bandwidth, n=y.size, n_boot=int(n_boot), level=level,
                       problems=problems, recalibration=recal, **fields)


def bootstrap_delta_alpha_star(y, yhat_better, yhat_simple, alpha, beta, *, n_boot: int = 1000,
                               level: float = 0.95,
                               seed: int | np.random.Generator | None = 0,
                               lower_is_worse: bool = True,
                               chunk_elements: int = 4_000_000) -> tuple[np.ndarray, np.ndarray]:
    """(Delta-alpha*, its percentile-bootstrap interval as (k, 2) rows) over ``alpha``.

    The point estimate equals :func:`~icml25.worstoff.empirical.delta_alpha_star`; people are
    resampled ``n_boot`` times (seeded) with both predictions, and on each resample the two
    recall curves and the simpler model's capacity are recomputed. Where the simpler model
    cannot catch up within 1 - beta the value is NaN; such resamples count as unbounded, so an
    interval can end at ``inf`` (and a NaN point estimate keeps its interval).

    Parameters
    ----------
    y : array-like of shape (n,)
        Outcomes.
    yhat_better : array-like of shape (n,)
        Predictions of the better model.
    yhat_simple : array-like of shape (n,)
        Predictions of the simpler model.
    alpha : float or array-like of shape (k,)
        Screening capacities, in (0, 1).
    beta : float
        Target fraction, in (0, 1).
    n_boot : int, default=1000
        Bootstrap resamples, at least 10.
    level : float, default=0.95
        Confidence level.
    seed : int, numpy.random.Generator or None, default=0
        Seed of the resampling.
    lower_is_worse : bool, default=True
        Whether low outcomes are the worse ones.
    chunk_elements : int, default=4000000
        Cells per vectorised chunk.

    Returns
    -------
    delta : ndarray of shape (k,)
        The extra capacity (NaN where it cannot catch up).
    ci : ndarray of shape (k, 2)
        Its ``[low, high]`` interval.

    Raises
    ------
    ValueError
        For invalid inputs or ``n_boot < 10``.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.worstoff import bootstrap_delta_alpha_star, improve_predictions
    >>> rng = np.random.default_rng(0); y = rng.normal(size=1000)
    >>> simple = 0.45 * y + rng.normal(0, .5, 1000)
    >>> better = improve_predictions(y, simple, 0.1)
    >>> d, ci = bootstrap_delta_alpha_star(y, better, simple, [0.2], 0.2, n_boot=50)
    >>> d.round(3), ci.shape, bool(ci[0, 0] <= d[0] <= ci[0, 1])
    (array([0.035]), (1, 2), True)
    """
    y, yhat_better = check_outcomes(y, yhat_better, names=("y", "yhat_better"))
    _, yhat_simple = check_outcomes(y, yhat_simple, names=("y", "yhat_simple"))
    if not lower_is_worse:
        y, yhat_better, yhat_simple = -y, -yhat_better, -yhat_simple
    alphas = np.atleast_1d(check_fraction("alpha", alpha)).astype(float)
    beta = float(check_fraction("beta", beta))
    level = float(check_fraction("level", level))
    if int(n_boot) < 10:
        raise ValueError(f"n_boot must be at least 10, got {n_boot!r}")

    def quantities(Y, P, B):
        target = _at(_cum_caught(Y, P, beta), alphas, beta)
        cum_s = _cum_caught(Y, B, beta)
        simple = _at(cum_s, alphas, beta)
        need = _capacity(cum_s, np.minimum(target, 1.0), beta)
        d = np.where(target <= simple, 0.0, np.maximum(need - alphas, 0.0))
        return {"delta": np.where(d >= 1.0 - beta, np.nan, d)}

    point, draws = _bootstrap(y, yhat_better, int(n_boot), seed, chunk_elements, quantities,
                              yhat_simple)
    a = np.where(np.isnan(draws["delta"]), 1e300, draws["delta"])
    lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    ci = np.stack([np.percentile(a, lo_q, axis=0), np.percentile(a, hi_q, axis=0)], -1)
    return point["delta"][0], np.where(ci >= 1e299, np.inf, ci)
