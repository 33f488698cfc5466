"""Adaptive conformal inference for sequential data (Gibbs & Candes 2021; aggregated: 2022).

Exchangeability fails under distribution shift, so a threshold calibrated once stops covering.
ACI keeps a working level ``alpha_t`` and moves it after every observation:

    alpha_{t+1} = alpha_t + gamma * (alpha - err_t),     err_t = 1{y_t outside C_t},

where C_t uses the ``(1 - alpha_t)`` conformal quantile of the scores seen so far (the
ceil((1 - alpha_t)(n + 1))-th smallest of the last ``window`` scores; +inf when that rank
exceeds n or alpha_t <= 0, and the empty set when alpha_t >= 1). Whatever the data, the long-run
miscoverage obeys (Gibbs & Candes 2021, Prop. 4.1)

    | (1/T) sum_t err_t - alpha |  <=  (max(alpha_1, 1 - alpha_1) + gamma) / (gamma T).

The step size trades adaptation speed against the jitter of ``alpha_t``.
:class:`AggregatedAdaptiveConformal` removes that choice: it runs one ACI expert per gamma and
weights them by exponential weights on the pinball loss of their levels (the DtACI scheme of
Gibbs & Candes 2022, with a deterministic weighted-average level).

Both work on a stream of conformity scores (e.g. ``|y - y_hat|`` for intervals ``y_hat +-
radius``): call :meth:`~AdaptiveConformal.radius` before seeing y_t and
:meth:`~AdaptiveConformal.update` with its score after, or :meth:`~AdaptiveConformal.run` on a
whole series. :func:`plot_coverage_over_time` draws rolling coverage.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> scale = np.r_[np.ones(1000), 3 * np.ones(1000)]           # the noise triples at t = 1000
>>> scores = np.abs(rng.normal(size=2000) * scale)
>>> res = AdaptiveConformal(alpha=0.1, gamma=0.01).run(scores)
>>> bool(abs(res.errors.mean() - 0.1) <= res.bound)      # Gibbs & Candes, Prop. 4.1
True
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import math

import numpy as np

from icml25.conformal._validation import check_level

__all__ = ["AdaptiveConformal", "AdaptiveResult", "AggregatedAdaptiveConformal",
           "plot_coverage_over_time"]


@dataclasses.dataclass
class AdaptiveResult:
    """One pass over a series: per step the radius used, the working level and the miss."""

    radius: np.ndarray
    alpha_t: np.ndarray
    errors: np.ndarray  # 1.0 where the score exceeded the radius (y_t not covered)
    alpha: float
    bound: float  # the deterministic long-run bound on |mean error - alpha| (nan if none)

    @property
    def coverage(self) -> float:
        return float(1 - self.errors.mean())

    def rolling_coverage(self, window: int = 200) -> np.ndarray:
        return rolling_coverage(self.errors, window)


def rolling_coverage(errors, window: int = 200) -> np.ndarray:
    """Coverage over the last ``window`` steps (fewer at the start)."""
    err = np.asarray(errors, dtype=float)
    c = np.concatenate([[0.0], np.cumsum(1 - err)])
    t = np.arange(1, err.size + 1)
    lo = np.maximum(0, t - window)
    return (c[t] - c[lo]) / (t - lo)


class _ScoreWindow:
    """Sorted scores of the last ``window`` steps (all of them when window is None)."""

    def __init__(self, window: int | None):
        self.window = window
        self.sorted: list[float] = []
        self.fifo: collections.deque = collections.deque()

    def add(self, s: float) -> None:
        bisect.insort(self.sorted, s)
        if self.window is not None:
            self.fifo.append(s)
            if len(self.fifo) > self.window:
                old = self.fifo.popleft()
                del self.sorted[bisect.bisect_left(self.sorted, old)]

    def quantile(self, level_alpha: float) -> float:
        """The conformal (1 - a) quantile: +inf for a <= 0 or a too small, -inf for a >= 1."""
        n = len(self.sorted)
        if level_alpha >= 1:
            return -math.inf
        if level_alpha <= 0 or n == 0:
            return math.inf
        rank = math.ceil((1 - level_alpha) * (n + 1) - 1e-12)
        return math.inf if rank > n else self.sorted[max(rank, 1) - 1]

    def level_of(self, s: float) -> float:
        """beta_t: the largest a whose quantile still covers s (for the pinball loss)."""
        n = len(self.sorted)
        if n == 0:
            return 0.0
        # s is covered at level a iff rank(a) >= #(scores < s) + 1, i.e. the quantile >= s
        below = bisect.bisect_left(self.sorted, s)
        if below >= n:
            return 0.0
        return 1 - (below + 1) / (n + 1) + 1e-12


def _check_window(window) -> int | None:
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int | np.integer) or window < 1:
        raise ValueError(f"window must be a positive int or None, got {window!r}")
    return int(window)


def _check_gamma(gamma) -> float:
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise ValueError(f"gamma must be a positive number, got {gamma!r}") from None
    if not (math.isfinite(g) and g > 0):
        raise ValueError(f"gamma (the ACI step size) must be positive and finite, got {gamma!r}")
    return g


def _check_score(score) -> float:
    s = float(score)
    if math.isnan(s):
        raise ValueError("score is NaN")
    return s


class _Online:
    """Shared by the ACI variants: the interval of the next step and a pass over a series."""

    alpha: float
    alpha_t: float
    _scores: _ScoreWindow

    def radius(self) -> float:
        """The threshold for the next observation: cover its score if <= this."""
        return self._scores.quantile(self.alpha_t)

    def predict_interval(self, y_hat) -> np.ndarray:
        """``[y_hat - radius, y_hat + radius]`` for the next step (absolute-residual scores)."""
        r = self.radius()
        y = np.asarray(y_hat, dtype=float)
        if r == -math.inf:  # empty set: represent it as an inverted interval
            return np.stack([y + np.inf, y - np.inf], axis=-1)
        return np.stack([y - r, y + r], axis=-1)

    def update(self, score) -> bool:
        raise NotImplementedError

    @property
    def bound(self) -> float:
        return math.nan

    def run(self, scores) -> AdaptiveResult:
        """Process a whole series (continuing from the current state)."""
        arr = np.asarray(scores, dtype=float).reshape(-1)
        if np.isnan(arr).any():
            raise ValueError("scores contain NaN")
        rad, lev, err = (np.empty(arr.size) for _ in range(3))
        for t, s in enumerate(arr):
            rad[t], lev[t] = self.radius(), self.alpha_t
            err[t] = 0.0 if self.update(s) else 1.0
        return AdaptiveResult(rad, lev, err, self.alpha, self.bound)


class AdaptiveConformal(_Online):
    """ACI: conformal intervals whose working level adapts to the observed misses.

    Parameters
    ----------
    alpha : float in (0, 1), default=0.1
        Target long-run miscoverage.
    gamma : float > 0, default=0.005
        Step size: larger adapts faster to shifts, with a more jittery level.
    window : int or None, default=None
        Only the last ``window`` scores calibrate (None: all so far).
    alpha_init : float or None, default=None
        alpha_1 (None: ``alpha``).

    Attributes
    ----------
    alpha_t : float
        The working level used for the next step.
    n_seen, n_errors : int
        Scores recorded so far, and how many of them were not covered.
    bound : float
        Deterministic bound on |long-run error - alpha| after ``n_seen`` steps.

    Raises
    ------
    ValueError
        For a level outside (0, 1), a non-positive ``gamma`` or a bad ``window``.

    Examples
    --------
    >>> from icml25.conformal import AdaptiveConformal
    >>> aci = AdaptiveConformal(alpha=0.1, gamma=0.05)
    >>> for s in range(1, 11):
    ...     covered = aci.update(float(s))
    >>> aci.radius(), aci.n_seen
    (10.0, 10)
    >>> aci.predict_interval(0.0)            # y_hat -+ radius
    array([-10.,  10.])
    """

    def __init__(self, alpha: float = 0.1, gamma: float = 0.005, *, window: int | None = None,
                 alpha_init: float | None = None):
        self.alpha = check_level(alpha, "alpha")
        self.gamma = _check_gamma(gamma)
        self.window = _check_window(window)
        self.alpha_init = self.alpha if alpha_init is None else check_level(alpha_init,
                                                                              "alpha_init")
        self.reset()

    def reset(self) -> AdaptiveConformal:
        self.alpha_t = self.alpha_init
        self._scores = _ScoreWindow(self.window)
        self.n_seen = 0
        self.n_errors = 0
        return self

    def update(self, score) -> bool:
        """Record the next score; returns whether it was covered. Moves alpha_t."""
        s = _check_score(score)
        err = not (s <= self.radius())
        self.alpha_t = self.alpha_t + self.gamma * (self.alpha - float(err))
        self._scores.add(s)
        self.n_seen += 1
        self.n_errors += int(err)
        return not err

    @property
    def bound(self) -> float:
        """Deterministic bound on |long-run error - alpha| after the steps seen so far."""
        if self.n_seen == 0:
            return math.inf
        a1 = self.alpha_init
        return (max(a1, 1 - a1) + self.gamma) / (self.gamma * self.n_seen)


class AggregatedAdaptiveConformal(_Online):
    """Aggregated ACI: one expert per step size, exponentially weighted (DtACI-style).

    Every expert i runs ACI with its own ``gammas[i]``; after each step its weight is multiplied
    by ``exp(-eta * pinball(beta_t, alpha_t^i))``, where beta_t is the largest level that would
    have covered the score, then mixed with the uniform weights (share ``sigma``) so that a
    once-bad expert can come back. The interval uses the weighted average level.

    Parameters
    ----------
    alpha : float in (0, 1), default=0.1
        Target long-run miscoverage.
    gammas : sequence of positive floats, default=(0.001, 0.002, ..., 0.128)
        Candidate step sizes (0.001 to 0.128, doubling).
    eta : float > 0, default=2.0
        Learning rate of the weights.
    sigma : float in [0, 1), default=0.01
        Share of uniform weight mixed in at every step.
    window : int or None, default=None
        Only the last ``window`` scores calibrate (None: all so far).

    Attributes
    ----------
    levels : ndarray of shape (len(gammas),)
        Each expert's working level.
    weights : ndarray of shape (len(gammas),)
        The experts' weights (sum to 1).
    alpha_t : float
        The weighted average level used for the next step.

    Raises
    ------
    ValueError
        For an empty ``gammas``, a non-positive step size or ``eta``, or ``sigma`` outside
        [0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import AggregatedAdaptiveConformal
    >>> scores = np.abs(np.random.default_rng(0).normal(size=500))
    >>> res = AggregatedAdaptiveConformal(alpha=0.1).run(scores)
    >>> res.errors.shape, bool(abs(res.errors.mean() - 0.1) < 0.03)
    ((500,), True)
    """

    def __init__(self, alpha: float = 0.1, gammas=(0.001, 0.002, 0.004, 0.008, 0.016, 0.032,
                                                  0.064, 0.128), *, eta: float = 2.0,
                 sigma: float = 0.01, window: int | None = None):
        self.alpha = check_level(alpha, "alpha")
        gs = [_check_gamma(g) for g in gammas]
        if not gs:
            raise ValueError("gammas must hold at least one step size")
        self.gammas = np.array(gs)
        self.eta = _check_gamma(eta)
        if not (0 <= float(sigma) < 1):
            raise ValueError(f"sigma must lie in [0, 1), got {sigma!r}")
        self.sigma = float(sigma)
        self.window = _check_window(window)
        self.reset()

    def reset(self) -> AggregatedAdaptiveConformal:
        k = self.gammas.size
        self.levels = np.full(k, self.alpha)
        self.weights = np.full(k, 1.0 / k)
        self._scores = _ScoreWindow(self.window)
        self.n_seen = 0
        return self

    @property
    def alpha_t(self) -> float:
        """The working level: the weighted average of the experts' levels."""
        return float(self.weights @ self.levels)

    def update(self, score) -> bool:
        s = _check_score(score)
        covered = s <= self.radius()
        beta = self._scores.level_of(s)
        # pinball loss of each expert's level against beta (quantile level alpha)
        diff = beta - self.levels
        loss = np.where(diff >= 0, self.alpha * diff, (self.alpha - 1) * diff)
        w = self.weights * np.exp(-self.eta * loss)
        w = w / w.sum()
        self.weights = (1 - self.sigma) * w + self.sigma / w.size
        expert_err = np.array([not (s <= self._scores.quantile(a)) for a in self.levels],
                              dtype=float)
        self.levels = self.levels + self.gammas * (self.alpha - expert_err)
        self._scores.add(s)
        self.n_seen += 1
        return bool(covered)


def plot_coverage_over_time(results: dict, alpha: float, window: int = 200, ax=None):
    """Rolling coverage of several runs ({label: AdaptiveResult or error array}) on one axis.

    Parameters
    ----------
    results : dict
        ``{label: AdaptiveResult or array of 0/1 errors}``, one line each.
    alpha : float
        Target miscoverage; a dashed line marks 1 - alpha.
    window : int, default=200
        Length of the rolling window.
    ax : matplotlib Axes or None, default=None
        Where to draw (None: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
        The axis drawn on.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import AdaptiveConformal, plot_coverage_over_time
    >>> scores = np.abs(np.random.default_rng(0).normal(size=300))
    >>> res = AdaptiveConformal(alpha=0.1, gamma=0.01).run(scores)
    >>> ax = plot_coverage_over_time({"ACI": res}, alpha=0.1, window=50)
    >>> len(ax.lines)                         # the run and the 1 - alpha line
    2
    """
    from icml25.core import new_figure

    if ax is None:
        _, ax = new_figure(size=(6.0, 3.4))
    for label, res in results.items():
        err = res.errors if isinstance(res, AdaptiveResult) else np.asarray(res, dtype=float)
        ax.plot(np.arange(1, err.size + 1), rolling_coverage(err, window), lw=1, label=label)
    ax.axhline(1 - alpha, color="black", linestyle="--", lw=1, label=f"1 - alpha = {1 - alpha:g}")
    ax.set_xlabel("time step")
    ax.set_ylabel(f"coverage, last {window} steps")
    from icml25.core.figures import legend_outside

    legend_outside(ax, "below", fontsize=8)
    return ax
