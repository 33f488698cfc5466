"""Weighted conformal prediction under covariate shift (Tibshirani, Barber, Candes & Ramdas 2019).

When the test inputs come from another distribution than the calibration inputs but the
relation y | x is the same (covariate shift), split conformal loses its guarantee. With the
likelihood ratio w(x) = dP_test(x) / dP_cal(x) known (or estimated), each calibration score s_i
gets the weight p_i(x) = w(X_i) / (sum_j w(X_j) + w(x)) and the test point itself the weight
p_{n+1}(x) = w(x) / (...) placed at +inf. The threshold for a test point x is the 1 - alpha
quantile of

    sum_i p_i(x) delta_{s_i} + p_{n+1}(x) delta_{+inf},

i.e. the smallest lambda with  sum_{i : s_i > lambda} p_i(x) + p_{n+1}(x) <= alpha  (+inf when
none): coverage >= 1 - alpha under the test distribution when w is the true ratio. With equal
weights this is exactly split conformal's ceil((n + 1)(1 - alpha))-th smallest score.

**The Bayesian-quadrature view.** Written with the miscoverage losses l_i = 1{s_i > lambda}, the
rule above is "posterior mean of L+ <= alpha" for L+ = sum_i U_i l_i + U_{n+1} B where U has
mean (p_1, ..., p_{n+1}): the weighted CRC / split rule *is* the mean of a weighted L+ (as the
unweighted one is, Snell & Griffiths' Prop. 3.1), so ``method="split"`` (alias ``"crc"``) is exact
and carries the Tibshirani et al. guarantee. The paper's credible bound (``bq``) does not extend
with the same guarantee: its Dirichlet(1, ..., 1) comes from the quantile levels F(s_i) of
exchangeable scores being uniform order statistics, while under covariate shift the levels
F_test(s_i) of calibration scores are not uniform and their law depends on how w varies *with
the score*, which the data do not reveal (w is a function of x). ``method="bq"`` here uses the
closest extension we can state: U ~ Dirichlet(c p_1, ..., c p_{n+1}) with c = the Kish effective
size (sum w)^2 / sum w^2 of the n + 1 weights, so L+ for 0/1 losses is
Beta(c a, c (1 - a)) with a = sum_{s_i > lambda} p_i + p_{n+1}. It equals the unweighted ``bq``
rule exactly when the weights are equal (c = n + 1, Beta(k + 1, n - k)), keeps the weighted mean,
and shrinks the credibility with the effective size, but it is a heuristic: no theorem covers it
under shift, and it is labelled so wherever it is used.

Examples
--------
>>> import numpy as np
>>> s = np.arange(1.0, 20.0)                      # 19 calibration scores
>>> float(weighted_thresholds(s, np.ones(19), np.ones(1), alpha=0.1)[0])   # = split conformal
18.0
>>> w = np.where(s > 10, 3.0, 1.0)                # the test distribution favours large scores
>>> float(weighted_thresholds(s, w, np.array([3.0]), alpha=0.1)[0])
19.0
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from icml25.conformal._validation import check_level

__all__ = ["DomainClassifierRatio", "WEIGHTED_METHODS", "WeightedConformalRegressor",
           "effective_sample_size", "weighted_thresholds"]

WEIGHTED_METHODS = ("split", "crc", "bq")


def _check_weights(w, n: int, name: str) -> np.ndarray:
    arr = np.asarray(w, dtype=float).reshape(-1)
    if arr.size != n:
        raise ValueError(f"{name} must hold one weight per row ({n}), got {arr.size}")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError(f"{name} must be finite and non-negative (a likelihood ratio)")
    return arr


def effective_sample_size(weights) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2 of non-negative weights.

    Parameters
    ----------
    weights : array-like of shape (n,)

    Returns
    -------
    float
        n for equal weights, down to 1 when one weight dominates.

    Examples
    --------
    >>> effective_sample_size([1, 1, 1, 1]), effective_sample_size([1, 0, 0, 0])
    (4.0, 1.0)
    """
    w = np.asarray(weights, dtype=float)
    return float(w.sum() ** 2 / np.sum(w * w)) if w.sum() > 0 else 0.0


def weighted_thresholds(scores, cal_weights, test_weights, alpha: float, *,
                        method: str = "split", beta: float = 0.95) -> np.ndarray:
    """Per-test-point thresholds of weighted split conformal prediction.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Calibration nonconformity scores s_i.
    cal_weights : array-like of shape (n,)
        w(X_i) for the calibration points (any positive scale).
    test_weights : array-like of shape (m,)
        w(x) for the test points, on the same scale.
    alpha : float in (0, 1)
        Miscoverage level.
    method : {"split", "crc", "bq"}, default="split"
        ``split`` / ``crc``: the weighted quantile (Tibshirani et al. 2019; the posterior-mean
        rule). ``bq``: the effective-size Dirichlet heuristic of the module docstring, at
        credibility ``beta``.
    beta : float in (0, 1), default=0.95
        Credibility of ``bq``.

    Returns
    -------
    ndarray of shape (m,)
        lambda for each test point; +inf where no finite threshold reaches the level (the
        test point's own weight is too large a share).

    Raises
    ------
    ValueError
        For negative or non-finite weights, mismatched sizes or an unknown method.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import weighted_thresholds
    >>> scores = np.arange(1.0, 11.0)            # ten calibration scores 1..10
    >>> weighted_thresholds(scores, np.ones(10), [1.0, 5.0], alpha=0.2)
    array([ 9., inf])

    A heavy test point (weight 5 against a total of 10) gets no finite threshold.
    """
    s = np.asarray(scores, dtype=float).reshape(-1)
    if s.size == 0 or np.isnan(s).any():
        raise ValueError("scores must be a non-empty array without NaN")
    w = _check_weights(cal_weights, s.size, "cal_weights")
    wt = np.asarray(test_weights, dtype=float).reshape(-1)
    wt = _check_weights(wt, wt.size, "test_weights")
    alpha = check_level(alpha, "alpha")
    if method not in WEIGHTED_METHODS:
        raise ValueError(f"method must be one of {WEIGHTED_METHODS}, got {method!r}")
    order = np.argsort(s, kind="stable")
    s, w = s[order], w[order]
    values, first = np.unique(s, return_index=True)
    w_value = np.add.reduceat(w, first)                # ties share one threshold
    total = float(w.sum())
    if total <= 0:
        raise ValueError("every calibration weight is 0: the calibration data carry no "
                         "information about the test distribution")
    tail = total - np.cumsum(w_value)                 # weight of scores > values[j]
    tail = np.maximum(tail, 0.0)
    if method in ("split", "crc"):
        # smallest j with (tail_j + w_t) / (W + w_t) <= alpha; tail is non-increasing
        thr = alpha * (total + wt) - wt
        j = np.searchsorted(-tail, -thr - 1e-12 * total, side="left")
    else:
        from scipy.stats import beta as beta_dist

        beta = check_level(beta, "beta")
        sq = float(np.sum(w * w))
        c = (total + wt) ** 2 / (sq + wt ** 2)        # Kish size of the n + 1 weights
        a = (tail[None, :] + wt[:, None]) / (total + wt)[:, None]   # (m, J) mass above
        a = np.clip(a, 1e-300, 1.0 - 1e-15)
        ok = beta_dist.cdf(alpha, c[:, None] * a, c[:, None] * (1.0 - a)) >= beta
        j = np.where(ok.any(axis=1), ok.argmax(axis=1), values.size)
    out = np.full(wt.size, np.inf)
    fin = j < values.size
    out[fin] = values[j[fin]]
    return out


class DomainClassifierRatio(MetaEstimatorMixin, BaseEstimator):
    """Likelihood ratio w(x) = dP_target / dP_source estimated by a probabilistic classifier.

    A classifier c(x) = Pr(target | x) is fitted on source rows (label 0) against target rows
    (label 1); then w(x) = c(x) / (1 - c(x)) * n_source / n_target (the odds, corrected for the
    two sample sizes). Probabilities are clipped to [clip, 1 - clip] so a confident classifier
    cannot give infinite or zero weights.

    Parameters
    ----------
    classifier : classifier with ``predict_proba``, default=None
        ``None``: logistic regression on the standardised features and their squares and
        products (a quadratic log-ratio: a linear one cannot represent a shift toward the
        middle of a range), its penalty chosen among 5 values by 3-fold cross-validated
        log-loss.
    clip : float, default=0.01
        Probability clipping.

    Attributes
    ----------
    classifier_ : the fitted classifier
    prior_odds_ : float
        n_target / n_source.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> src, tgt = rng.normal(0, 1, (500, 1)), rng.normal(1, 1, (500, 1))
    >>> ratio = DomainClassifierRatio().fit(src, tgt)
    >>> w = ratio(np.array([[-1.0], [0.5], [2.0]]))     # true ratio exp(x - 0.5)
    >>> bool(w[0] < w[1] < w[2])
    True
    """

    def __init__(self, classifier=None, clip: float = 0.01):
        self.classifier = classifier
        self.clip = clip

    def fit(self, X_source, X_target):
        """Fit the domain classifier.

        Parameters
        ----------
        X_source : array-like of shape (n_source, n_features)
            Inputs of the calibration (source) distribution.
        X_target : array-like of shape (n_target, n_features)
            Unlabelled inputs of the test (target) distribution.

        Returns
        -------
        self : DomainClassifierRatio
        """
        xs = np.asarray(X_source, dtype=float)
        xt = np.asarray(X_target, dtype=float)
        if xs.ndim != 2 or xt.ndim != 2 or xs.shape[1] != xt.shape[1]:
            raise ValueError(f"X_source and X_target must be 2-D with the same columns, got "
                             f"{xs.shape} and {xt.shape}")
        if xs.shape[0] < 2 or xt.shape[0] < 2:
            raise ValueError("the domain classifier needs at least 2 source and 2 target rows")
        if not (isinstance(self.clip, float | int) and 0 < self.clip < 0.5):
            raise ValueError(f"clip must lie in (0, 0.5), got {self.clip!r}")
        clf = self.classifier
        if clf is None:
            from sklearn.linear_model import LogisticRegressionCV
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import PolynomialFeatures, StandardScaler

            clf = make_pipeline(StandardScaler(), PolynomialFeatures(2, include_bias=False),
                                StandardScaler(),
                                LogisticRegressionCV(Cs=5, cv=3, scoring="neg_log_loss",
                                                     max_iter=2_000))
        import warnings

        with warnings.catch_warnings():  # LogisticRegressionCV's 1.9 -> 1.10 API notices
            warnings.simplefilter("ignore", FutureWarning)
            self.classifier_ = clone(clf).fit(
                np.vstack([xs, xt]), np.r_[np.zeros(xs.shape[0]), np.ones(xt.shape[0])])
        self.prior_odds_ = xt.shape[0] / xs.shape[0]
        return self

    def __call__(self, X) -> np.ndarray:
        """w(x) for each row of X (shape (n,))."""
        check_is_fitted(self, "classifier_")
        p = np.asarray(self.classifier_.predict_proba(np.asarray(X, dtype=float)))[:, 1]
        p = np.clip(p, self.clip, 1.0 - self.clip)
        return p / (1.0 - p) / self.prior_odds_


class WeightedConformalRegressor(MetaEstimatorMixin, RegressorMixin, BaseEstimator):
    """Prediction intervals that keep their coverage under covariate shift.

    fit (model) -> calibrate (scores and their weights) -> predict_interval, where every test
    point gets its own threshold from :func:`weighted_thresholds`.

    Parameters
    ----------
    estimator : regressor, default=None
        The point model (``LinearRegression`` when None); for ``conformity_score="cqr"`` a
        quantile regressor, as in :class:`~icml25.conformal.ConformalRegressor`.
    likelihood_ratio : callable or None, default=None
        w(X) -> (n,) non-negative: dP_test / dP_calibration, up to a constant. ``None``: a
        :class:`DomainClassifierRatio` is fitted on the calibration inputs against
        ``X_test`` (unlabelled inputs of the test distribution, passed to ``fit`` /
        ``calibrate``).
    domain_classifier : classifier, default=None
        The classifier of the :class:`DomainClassifierRatio` (None: quadratic logistic).
    alpha : float in (0, 1), default=0.1
    beta : float in (0, 1), default=0.95
        Credibility of ``method="bq"``.
    method : {"split", "crc", "bq"}, default="split"
        See :func:`weighted_thresholds` (``bq`` is a heuristic under shift).
    conformity_score : {"absolute", "normalized", "cqr"} or RegressionScore, default="absolute"
    prefit : bool, default=False
        The estimator is already fitted; all of ``fit``'s data calibrates.
    calibration_size : float or int, default=0.5
        Share (or number) of ``fit``'s rows held out for calibration; 0: train on all and
        call :meth:`calibrate` yourself.
    random_state : int or None, default=None
        Seed of the train/calibration split.

    Attributes
    ----------
    conformity_score_ : the fitted score (holds the model)
    calibration_scores_ : ndarray of shape (n_cal,)
    calibration_weights_ : ndarray of shape (n_cal,)
    ratio_ : callable
        The likelihood ratio used (the user's, or the fitted domain classifier).
    effective_size_ : float
        Kish effective size of the calibration weights (n for no shift).

    References
    ----------
    R. J. Tibshirani, R. F. Barber, E. J. Candes, A. Ramdas. Conformal prediction under
    covariate shift. NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 4, (2_000, 1)); y = X[:, 0] + rng.normal(size=2_000) * X[:, 0]
    >>> ratio = lambda X: np.exp(X[:, 0])                # the test data favour large x
    >>> reg = WeightedConformalRegressor(likelihood_ratio=ratio, random_state=0).fit(X, y)
    >>> iv = reg.predict_interval(np.array([[0.5], [3.5]]))
    >>> iv.shape, bool(np.all(np.isfinite(iv)))
    ((2, 2), True)
    """

    def __init__(self, estimator=None, *, likelihood_ratio=None, domain_classifier=None,
                 alpha=0.1, beta=0.95, method="split", conformity_score="absolute",
                 prefit=False, calibration_size=0.5, random_state=None):
        self.estimator = estimator
        self.likelihood_ratio = likelihood_ratio
        self.domain_classifier = domain_classifier
        self.alpha = alpha
        self.beta = beta
        self.method = method
        self.conformity_score = conformity_score
        self.prefit = prefit
        self.calibration_size = calibration_size
        self.random_state = random_state

    def _check(self):
        check_level(self.alpha, "alpha")
        check_level(self.beta, "beta")
        if self.method not in WEIGHTED_METHODS:
            raise ValueError(f"method must be one of {WEIGHTED_METHODS}, got {self.method!r}")
        if self.likelihood_ratio is not None and not callable(self.likelihood_ratio):
            raise ValueError("likelihood_ratio must be a callable X -> weights, or None to "
                             "fit a domain classifier on X_test")

    def fit(self, X, y, X_test=None):
        """Fit the model (unless prefit) and calibrate on the held-out part.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        X_test : array-like of shape (m, n_features), default=None
            Unlabelled inputs from the test distribution; needed when ``likelihood_ratio`` is
            None (the domain classifier is fitted on them).

        Returns
        -------
        self : WeightedConformalRegressor
        """
        from sklearn.model_selection import train_test_split

        from icml25.conformal.scores import get_regression_score

        self._check()
        score = get_regression_score(self.conformity_score)
        X, y = validate_data(self, X, y, y_numeric=True)
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
        self.conformity_score_ = score.fit(self.estimator, x_tr, y_tr, alpha=float(self.alpha),
                                           prefit=self.prefit)
        if x_cal is None:
            return self
        return self._calibrate(x_cal, y_cal, X_test)

    def calibrate(self, X, y, X_test=None):
        """Calibrate on held-out data, keeping the fitted model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        X_test : array-like of shape (m, n_features), default=None
            Unlabelled test-distribution inputs (for the domain classifier).

        Returns
        -------
        self : WeightedConformalRegressor
        """
        check_is_fitted(self, "conformity_score_")
        self._check()
        X, y = validate_data(self, X, y, y_numeric=True, reset=False)
        return self._calibrate(X, y, X_test)

    def _calibrate(self, X, y, X_test):
        if self.likelihood_ratio is not None:
            self.ratio_ = self.likelihood_ratio
        else:
            if X_test is None:
                raise ValueError("no likelihood_ratio given: pass X_test (unlabelled inputs of "
                                 "the test distribution) so a domain classifier can estimate it")
            xt = validate_data(self, X_test, reset=False)
            self.ratio_ = DomainClassifierRatio(self.domain_classifier).fit(X, xt)
        self.calibration_scores_ = np.asarray(self.conformity_score_.score(X, y), dtype=float)
        self.calibration_weights_ = _check_weights(self.ratio_(X), X.shape[0],
                                                   "likelihood_ratio(X_cal)")
        self.effective_size_ = effective_sample_size(self.calibration_weights_)
        return self

    def predict(self, X):
        """Point prediction of the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "conformity_score_")
        X = validate_data(self, X, reset=False)
        return self.conformity_score_.predict(X)

    def predict_lambda(self, X) -> np.ndarray:
        """The threshold of each test row (its own weighted quantile; +inf if infeasible).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "calibration_scores_")
        X = validate_data(self, X, reset=False)
        wt = _check_weights(self.ratio_(X), X.shape[0], "likelihood_ratio(X)")
        return weighted_thresholds(self.calibration_scores_, self.calibration_weights_, wt,
                                   float(self.alpha), method=self.method, beta=float(self.beta))

    def predict_interval(self, X):
        """Intervals with coverage >= 1 - alpha under the test distribution.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
            [lower, upper]; (-inf, inf) where the row's own weight is too large.
        """
        lam = self.predict_lambda(X)
        X = validate_data(self, X, reset=False)
        fin = np.isfinite(lam)
        iv = self.conformity_score_.interval(X, np.where(fin, lam, 0.0))
        iv[~fin] = (-np.inf, np.inf)
        return iv
