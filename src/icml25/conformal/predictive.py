"""Conformal predictive distributions and p-values for regressors (split CPS, Vovk et al. 2019).

From n calibration residuals r_i = (y_i - f(x_i)) / sigma(x_i) (sigma = 1, or a difficulty
estimate for the normalised system), the predictive distribution of y at x is built on the n
points C_i(x) = f(x) + r_i sigma(x):

    Q(y, tau) = ( #{i : C_i < y} + tau (#{i : C_i = y} + 1) ) / (n + 1),   tau in [0, 1].

At the true label, Q(y, tau) with tau ~ U(0, 1) is exactly uniform (exchangeable data), so

* Q(t, tau) is the (smoothed) CDF at t, and a p-value for the null "y <= t" (small: y is
  above t); without smoothing tau = 1 gives a conservative one;
* 1 - Q(t, 1 - tau) is the p-value for the null "y >= t" (small: y is below t);
* the p-th percentile is the C_(k) with k = ceil(p (n + 1)) ("higher", +inf when k > n) or
  k = floor(p (n + 1)) ("lower", -inf when k < 1): [lower 5th, higher 95th] is a split
  conformal 90% interval built on signed residuals.

Examples
--------
>>> import numpy as np
>>> from sklearn.linear_model import LinearRegression
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(600, 2)); y = X @ [1.0, -1.0] + rng.normal(size=600)
>>> cps = ConformalPredictiveSystem(random_state=0).fit(X, y)
>>> float(cps.predict_cdf(np.zeros((1, 2)), 0.0, smoothing=False)[0]) > 0.4
True
>>> cps.predict_percentiles(X[:3], [5, 50, 95]).shape
(3, 3)
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["ConformalPredictiveSystem"]

ALTERNATIVES = ("less", "greater", "two-sided")


class ConformalPredictiveSystem(MetaEstimatorMixin, RegressorMixin, BaseEstimator):
    """Split conformal predictive system: a calibrated distribution of y for every x.

    fit (model) -> calibrate (residuals) -> ``predict_cdf`` / ``predict_percentiles`` /
    ``predict_pvalue`` / ``predict_cpds`` (crepes' ``predict_cps`` family).

    Parameters
    ----------
    estimator : regressor, default=None
        Point model (``LinearRegression`` when None).
    normalized : bool, default=False
        Scale residuals by a difficulty estimate sigma(x) (a kNN regressor on out-of-fold
        |residuals| of the training part, as ``NormalizedResidual``): wider distributions
        where the model is unsure.
    prefit : bool, default=False
        The estimator is fitted; all of ``fit``'s rows calibrate (``normalized`` needs a
        training part, so it is refused with prefit).
    calibration_size : float or int, default=0.5
        Rows of ``fit``'s data held out for calibration; 0: train on all, then
        :meth:`calibrate`.
    random_state : int or None, default=None
        Seed of the split and of the smoothing draws tau.

    Attributes
    ----------
    residuals_ : ndarray of shape (n_cal,)
        Sorted calibration residuals (normalised when ``normalized``).

    References
    ----------
    V. Vovk, J. Shen, V. Manokhin, M. Xie. Nonparametric predictive distributions based on
    conformal prediction. Machine Learning 108, 2019. H. Bostrom, crepes.

    Raises
    ------
    ValueError
        From ``fit``: ``normalized=True`` with ``prefit=True``, or a ``calibration_size`` that
        leaves no training or calibration rows.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import ConformalPredictiveSystem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 1)); y = X[:, 0] + rng.normal(size=200)
    >>> cps = ConformalPredictiveSystem(random_state=0).fit(X, y)
    >>> cps.residuals_.shape
    (100,)
    >>> lo, hi = cps.predict_percentiles(X[:1], [5, 95])[0]
    >>> bool(lo < cps.predict(X[:1])[0] < hi)
    True
    """

    def __init__(self, estimator=None, *, normalized=False, prefit=False, calibration_size=0.5,
                 random_state=None):
        self.estimator = estimator
        self.normalized = normalized
        self.prefit = prefit
        self.calibration_size = calibration_size
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the model (unless prefit) and calibrate on the held-out part.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : ConformalPredictiveSystem
        """
        from icml25.conformal.scores import AbsoluteResidual, NormalizedResidual

        X, y = validate_data(self, X, y, y_numeric=True)
        if self.normalized and self.prefit:
            raise ValueError("normalized=True fits a difficulty model on a training part; "
                             "it cannot be combined with prefit=True")
        size = self.calibration_size
        if self.prefit:
            x_tr = y_tr = None
            x_cal, y_cal = X, y
        elif not isinstance(size, float) and int(size) == 0:
            x_tr, y_tr, x_cal, y_cal = X, y, None, None
        else:
            n_cal = int(round(size * X.shape[0])) if isinstance(size, float) else int(size)
            if not 0 < n_cal < X.shape[0]:
                raise ValueError(f"calibration_size={size!r} leaves no training or calibration "
                                 f"rows out of {X.shape[0]}")
            x_tr, x_cal, y_tr, y_cal = train_test_split(X, y, test_size=n_cal,
                                                        random_state=self.random_state)
        score = NormalizedResidual() if self.normalized else AbsoluteResidual()
        # the score objects fit (a clone of) the model, or check it is fitted when prefit
        self.score_ = score.fit(self.estimator, x_tr, y_tr, alpha=0.1, prefit=self.prefit)
        self.__dict__.pop("residuals_", None)
        return self if x_cal is None else self._calibrate(x_cal, y_cal)

    def calibrate(self, X, y):
        """Calibrate on held-out rows, keeping the fitted model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : ConformalPredictiveSystem
        """
        check_is_fitted(self, "score_")
        X, y = validate_data(self, X, y, y_numeric=True, reset=False)
        return self._calibrate(X, y)

    def _calibrate(self, X, y):
        if X.shape[0] < 1:
            raise ValueError("calibration needs at least one row")
        r = (y - self.score_.predict(X)) / self._spread(X)
        self.residuals_ = np.sort(r)
        return self

    def _spread(self, X) -> np.ndarray:
        return self.score_.spread(X) if self.normalized else np.ones(X.shape[0])

    def _centre(self, X):
        check_is_fitted(self, "residuals_")
        X = validate_data(self, X, reset=False)
        return self.score_.predict(X), self._spread(X)

    def predict(self, X):
        """Point prediction of the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "score_")
        X = validate_data(self, X, reset=False)
        return self.score_.predict(X)

    def predict_cpds(self, X) -> np.ndarray:
        """The n support points C_i(x) of each row's predictive distribution, sorted.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_cal)
        """
        f, s = self._centre(X)
        return f[:, None] + self.residuals_[None, :] * s[:, None]

    def _tau(self, m: int, smoothing: bool) -> np.ndarray:
        if not smoothing:
            return np.ones(m)
        seed = 0 if self.random_state is None else self.random_state
        return np.random.default_rng([int(seed) % 2**32, 7]).random(m)

    def predict_cdf(self, X, y, smoothing: bool = True) -> np.ndarray:
        """Q(y | x): the predictive CDF of each row at ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : float or array-like of shape (n_samples,)
            The value(s) at which to evaluate.
        smoothing : bool, default=True
            Draw tau ~ U(0, 1) (seeded by ``random_state``): exactly uniform at the true y.
            ``False``: tau = 1, the upper (conservative for "y >= t") value.

        Returns
        -------
        ndarray of shape (n_samples,)
            Values in [1/(n+1) * tau, 1].
        """
        below, upto, n1, m = self._counts(X, y)
        tau = self._tau(m, smoothing)
        return (below + tau * (upto - below + 1)) / n1

    def _counts(self, X, t):
        """#{C_i < t}, #{C_i <= t}, n + 1 and the number of rows."""
        f, s = self._centre(X)
        t = np.broadcast_to(np.asarray(t, dtype=float), f.shape)
        if np.isnan(t).any():
            raise ValueError("the value(s) to evaluate contain NaN")
        r = (t - f) / s                                      # on the residual scale
        below = np.searchsorted(self.residuals_, r, side="left")
        upto = np.searchsorted(self.residuals_, r, side="right")
        return below, upto, self.residuals_.size + 1, f.size

    def predict_pvalue(self, X, threshold, alternative: str = "greater",
                       smoothing: bool = False) -> np.ndarray:
        """Conformal p-value of a threshold for each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        threshold : float or array-like of shape (n_samples,)
        alternative : {"greater", "less", "two-sided"}, default="greater"
            ``greater``: evidence that y > threshold (null y <= t), p = Q(t, tau);
            ``less``: evidence that y < threshold (null y >= t), p = 1 - Q(t, 1 - tau);
            ``two-sided``: twice the smaller of the two, capped at 1.
        smoothing : bool, default=False
            ``True``: tau ~ U(0, 1), exact p-values (uniform at the boundary of the null);
            ``False``: tau = 1, conservative.

        Returns
        -------
        ndarray of shape (n_samples,)
            Valid p-values: Pr(p <= a) <= a under the null, for exchangeable data.

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(1)
        >>> X = rng.normal(size=(400, 1)); y = 2 * X[:, 0] + rng.normal(size=400)
        >>> cps = ConformalPredictiveSystem(random_state=0).fit(X, y)
        >>> x = np.array([[1.0]])                  # y | x = 1 has mean 2, sd 1
        >>> bool(cps.predict_pvalue(x, 5.0, alternative="less")[0] < 0.05)    # y < 5: clear
        True
        >>> bool(cps.predict_pvalue(x, 5.0, alternative="greater")[0] > 0.5)  # y > 5: no
        True
        """
        if alternative not in ALTERNATIVES:
            raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
        below, upto, n1, m = self._counts(X, threshold)
        tau = self._tau(m, smoothing)
        greater = (below + tau * (upto - below + 1)) / n1
        less = ((n1 - 1) - upto + tau * (upto - below + 1)) / n1
        if alternative == "greater":
            return greater
        if alternative == "less":
            return less
        return np.minimum(1.0, 2.0 * np.minimum(less, greater))

    def predict_percentiles(self, X, percentiles, side: str = "auto") -> np.ndarray:
        """Percentiles of each row's predictive distribution.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        percentiles : float or array-like of shape (k,)
            In [0, 100].
        side : {"auto", "lower", "higher"}, default="auto"
            ``higher``: C_(ceil(p (n+1))) (+inf when past the sample); ``lower``:
            C_(floor(p (n+1))) (-inf when before it); ``auto``: lower below the median, higher
            from it, so [p_lo, p_hi] is a valid (p_hi - p_lo)% interval.

        Returns
        -------
        ndarray of shape (n_samples, k)
        """
        if side not in ("auto", "lower", "higher"):
            raise ValueError(f"side must be 'auto', 'lower' or 'higher', got {side!r}")
        p = np.atleast_1d(np.asarray(percentiles, dtype=float)) / 100.0
        if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
            raise ValueError("percentiles must lie in [0, 100]")
        cpds = self.predict_cpds(X)
        n = self.residuals_.size
        higher = np.ceil(p * (n + 1) - 1e-9).astype(int)
        lower = np.floor(p * (n + 1) + 1e-9).astype(int)
        use_high = (p >= 0.5) if side == "auto" else np.full(p.shape, side == "higher")
        k = np.where(use_high, higher, lower)
        out = np.empty((cpds.shape[0], p.size))
        for j, kj in enumerate(k):
            if kj > n:
                out[:, j] = np.inf
            elif kj < 1:
                out[:, j] = -np.inf
            else:
                out[:, j] = cpds[:, kj - 1]
        return out
