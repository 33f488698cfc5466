"""scikit-learn estimators: conformal intervals, prediction sets and risk control.

Each wraps any regressor/classifier (fitted with ``prefit=True``, otherwise fitted on a split of
the data passed to ``fit``), calibrates lambda on held-out data with one of the rules
``method`` in {"bq", "crc", "rcps", "split"}, and exposes ``lambda_``, ``calibration_`` and
``risk_posterior_`` (the posterior of the risk L+ at the chosen lambda; ``plot_risk_posterior``).
When the calibration set cannot support the request they return the trivial predictor (infinite
intervals, full sets) and warn with the minimum calibration size.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, RegressorMixin, clone
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted, validate_data

from icml25.conformal.calibration import calibrate_scores_spec, calibrate_spec
from icml25.conformal.rules import RuleSpec

__all__ = ["ConformalClassifier", "ConformalRegressor", "RiskController"]


class _ConformalMixin(MetaEstimatorMixin):
    """Shared parameter checks, train/calibration split and posterior plotting."""

    def _check_params(self) -> RuleSpec:
        """Validate the parameters once; the returned request is passed down unchanged.

        ``random_state`` seeds both the train/calibration split and the Monte Carlo draws
        (the common random numbers of the ``bq`` posterior when it has no closed form).
        """
        spec = RuleSpec.make(self.method, self.alpha, self.beta, self.bound, self.concentration,
                             self.n_draws, self.random_state)
        size = self.calibration_size
        if not (isinstance(size, float) and 0 < size < 1
                or isinstance(size, int | np.integer) and not isinstance(size, bool) and size > 0):
            raise ValueError(f"calibration_size must be a float in (0, 1) or a positive int, "
                             f"got {size!r}")
        return spec

    def _split(self, X, y):
        """(X_train, y_train, X_cal, y_cal); with prefit everything is calibration data."""
        if self.prefit:
            return None, None, X, y
        n = X.shape[0]
        size = self.calibration_size
        n_cal = int(round(size * n)) if isinstance(size, float) else int(size)
        if n < 2 or n_cal < 1 or n_cal >= n:
            raise ValueError(f"cannot split {n} sample(s) into a training part and a calibration "
                             f"part of size {size!r}; pass more data or prefit=True")
        return train_test_split(X, y, test_size=n_cal, random_state=self.random_state)[::1]

    def _calibrate_scores(self, scores, spec: RuleSpec) -> None:
        self.calibration_ = calibrate_scores_spec(scores, spec)
        self.lambda_ = self.calibration_.lambda_
        self.risk_posterior_ = self.calibration_.posterior
        self.n_calibration_ = int(np.asarray(scores).size)

    def plot_risk_posterior(self, ax=None):
        """Density of the risk posterior L+ at the chosen lambda, alpha and beta marked."""
        check_is_fitted(self, "risk_posterior_")
        ax = self.risk_posterior_.plot(ax, alpha=self.alpha, beta=self.beta)
        ax.set_title(f"{type(self).__name__} ({self.method}): risk posterior at "
                     f"lambda = {self.lambda_:.4g}")
        return ax


def _order_split(parts):
    # train_test_split returns X_tr, X_te, y_tr, y_te; reorder to (X_tr, y_tr, X_te, y_te).
    x_tr, x_te, y_tr, y_te = parts
    return x_tr, y_tr, x_te, y_te


# --------------------------------------------------------------------------- regression
class ConformalRegressor(_ConformalMixin, RegressorMixin, BaseEstimator):
    """Prediction intervals with a guarantee on miscoverage.

    Parameters
    ----------
    estimator : regressor, pair of regressors, or None
        ``conformity_score="absolute"``: any regressor (default ``LinearRegression``); interval
        ``y_hat +- lambda``. ``conformity_score="cqr"``: a quantile regressor (its ``quantile``
        or, for
        ``loss="quantile"`` models, ``alpha`` parameter is set to ``alpha/2`` and ``1-alpha/2``),
        or a pair (lower, upper); interval ``[q_lo - lambda, q_hi + lambda]``.
    method : {"bq", "crc", "rcps", "split"}
        ``bq``: Pr(coverage >= 1 - alpha | calibration data) >= beta (Snell & Griffiths);
        ``crc``/``split``: marginal coverage >= 1 - alpha; ``rcps``: confidence beta.
    alpha, beta : float in (0, 1)
    bound : float
        B for the miscoverage loss (1 is exact; larger is conservative).
    conformity_score : {"absolute", "cqr"}
    prefit : bool
        The estimator is already fitted; all of ``fit``'s data is used for calibration.
    calibration_size : float or int
        Share (or number) of ``fit``'s data held out for calibration when not prefit.
    concentration : {"hb", "hoeffding"}
        RCPS bound.
    n_draws : int
        Monte Carlo draws when the posterior has no closed form.
    random_state : int or None
        Seed of the train/calibration split.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> X, y = make_regression(n_samples=600, n_features=4, noise=10, random_state=0)
    >>> reg = ConformalRegressor(alpha=0.1, method="bq", random_state=0).fit(X, y)
    >>> reg.predict_interval(X[:2]).shape
    (2, 2)
    """

    def __init__(self, estimator=None, *, method="bq", alpha=0.1, beta=0.95, bound=1.0,
                 conformity_score="absolute", prefit=False, calibration_size=0.5,
                 concentration="hb",
                 n_draws=10_000, random_state=None):
        self.estimator = estimator
        self.method = method
        self.alpha = alpha
        self.beta = beta
        self.bound = bound
        self.conformity_score = conformity_score
        self.prefit = prefit
        self.calibration_size = calibration_size
        self.concentration = concentration
        self.n_draws = n_draws
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the regressor (unless prefit) and calibrate lambda on held-out data."""
        spec = self._check_params()
        if self.conformity_score not in ("absolute", "cqr"):
            raise ValueError("conformity_score must be 'absolute' or 'cqr', "
                             f"got {self.conformity_score!r}")
        X, y = validate_data(self, X, y, y_numeric=True)
        parts = self._split(X, y)
        x_tr, y_tr, x_cal, y_cal = parts if self.prefit else _order_split(parts)
        self.estimators_ = self._fitted_models(x_tr, y_tr)
        return self._calibrate(x_cal, y_cal, spec)

    def calibrate(self, X, y):
        """Re-calibrate lambda on new data, keeping the fitted model(s)."""
        check_is_fitted(self, "estimators_")
        spec = self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True, reset=False)
        return self._calibrate(X, y, spec)

    def _calibrate(self, X, y, spec):
        lo, hi = self._bands(X)
        scores = np.maximum(lo - y, y - hi) if self.conformity_score == "cqr" else np.abs(y - lo)
        self._calibrate_scores(scores, spec)
        return self

    def _fitted_models(self, X, y) -> list:
        from sklearn.linear_model import LinearRegression, QuantileRegressor

        est = self.estimator
        if self.conformity_score == "absolute":
            est = LinearRegression() if est is None else est
            if self.prefit:
                check_is_fitted(est)
                return [est]
            return [clone(est).fit(X, y)]
        if isinstance(est, list | tuple):
            if len(est) != 2:
                raise ValueError("for conformity_score='cqr' pass one quantile regressor or a pair")
            models = list(est)
        else:
            base = QuantileRegressor(alpha=0.0, solver="highs") if est is None else est
            models = [_with_quantile(base, self.alpha / 2),
                      _with_quantile(base, 1 - self.alpha / 2)]
        if self.prefit:
            for m in models:
                check_is_fitted(m)
            return models
        return [clone(m).fit(X, y) for m in models]

    def _bands(self, X):
        pred = [np.asarray(m.predict(X), dtype=float).reshape(-1) for m in self.estimators_]
        if self.conformity_score == "absolute":
            return pred[0], pred[0]
        return np.minimum(pred[0], pred[1]), np.maximum(pred[0], pred[1])

    def predict(self, X):
        """Point prediction (the model's, or the CQR band's midpoint)."""
        check_is_fitted(self, "estimators_")
        X = validate_data(self, X, reset=False)
        lo, hi = self._bands(X)
        return 0.5 * (lo + hi)

    def predict_interval(self, X):
        """(n, 2) array of [lower, upper]; +-inf when the request was infeasible."""
        check_is_fitted(self, "estimators_")
        X = validate_data(self, X, reset=False)
        lo, hi = self._bands(X)
        return np.column_stack([lo - self.lambda_, hi + self.lambda_])


def _with_quantile(model, q: float):
    params = model.get_params()
    if "quantile" in params:
        return clone(model).set_params(quantile=q)
    if params.get("loss") == "quantile" and "alpha" in params:
        return clone(model).set_params(alpha=q)
    raise ValueError("conformity_score='cqr' needs a quantile regressor (a 'quantile' parameter, "
                     "or "
                     f"loss='quantile' with 'alpha'); {type(model).__name__} has neither. "
                     "Or pass a pair (lower, upper) of regressors.")


# --------------------------------------------------------------------------- classification
class ConformalClassifier(_ConformalMixin, ClassifierMixin, BaseEstimator):
    """Prediction sets with a guarantee on miscoverage.

    ``conformity_score="lac"``: set = {k : 1 - p_k(x) <= lambda}. ``conformity_score="aps"``:
    set = classes whose
    cumulative probability (classes sorted by probability, the class itself included) is
    <= lambda. Other parameters as :class:`ConformalRegressor`; the default estimator is
    ``LogisticRegression``. ``predict`` returns the model's label, ``predict_set`` the sets.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = ConformalClassifier(alpha=0.1, method="crc", random_state=0).fit(X, y)
    >>> clf.predict_set(X[:3]).shape
    (3, 3)
    """

    def __init__(self, estimator=None, *, method="bq", alpha=0.1, beta=0.95, bound=1.0,
                 conformity_score="lac", prefit=False, calibration_size=0.5,
                 concentration="hb",
                 n_draws=10_000, random_state=None):
        self.estimator = estimator
        self.method = method
        self.alpha = alpha
        self.beta = beta
        self.bound = bound
        self.conformity_score = conformity_score
        self.prefit = prefit
        self.calibration_size = calibration_size
        self.concentration = concentration
        self.n_draws = n_draws
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the classifier (unless prefit) and calibrate lambda on held-out data."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.utils.multiclass import check_classification_targets

        spec = self._check_params()
        if self.conformity_score not in ("lac", "aps"):
            raise ValueError("conformity_score must be 'lac' or 'aps', "
                             f"got {self.conformity_score!r}")
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        est = LogisticRegression() if self.estimator is None else self.estimator
        if self.prefit:
            check_is_fitted(est)
            self.estimator_ = est
            x_cal, y_cal = X, y
        else:
            x_tr, y_tr, x_cal, y_cal = _order_split(self._split(X, y))
            if np.unique(y_tr).size < 2:
                raise ValueError("the training part holds a single class; pass more data")
            self.estimator_ = clone(est).fit(x_tr, y_tr)
        self.classes_ = np.asarray(self.estimator_.classes_)
        return self._calibrate(x_cal, y_cal, spec)

    def calibrate(self, X, y):
        """Re-calibrate lambda on new data, keeping the fitted classifier."""
        check_is_fitted(self, "estimator_")
        spec = self._check_params()
        X, y = validate_data(self, X, y, reset=False)
        return self._calibrate(X, y, spec)

    def _calibrate(self, X, y, spec):
        all_scores = self._class_scores(X)
        pos = np.searchsorted(self.classes_, y)
        pos = np.clip(pos, 0, self.classes_.size - 1)
        known = self.classes_[pos] == y
        # A label the model never saw can only be covered by the full set.
        scores = np.where(known, all_scores[np.arange(len(y)), pos], np.inf)
        scores = np.where(np.isinf(scores), 2.0, scores)
        self._calibrate_scores(scores, spec)
        return self

    def _class_scores(self, X) -> np.ndarray:
        proba = np.asarray(self.estimator_.predict_proba(X), dtype=float)
        if self.conformity_score == "lac":
            return 1.0 - proba
        order = np.argsort(-proba, axis=1, kind="stable")
        cum = np.cumsum(np.take_along_axis(proba, order, axis=1), axis=1)
        out = np.empty_like(proba)
        np.put_along_axis(out, order, cum, axis=1)
        return out

    def predict(self, X):
        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False)
        return self.estimator_.predict(X)

    def predict_proba(self, X):
        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False)
        return self.estimator_.predict_proba(X)

    def predict_set(self, X):
        """Boolean (n, n_classes) membership matrix, columns in ``classes_`` order."""
        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False)
        if not np.isfinite(self.lambda_):
            return np.ones((X.shape[0], self.classes_.size), dtype=bool)
        return self._class_scores(X) <= self.lambda_ + 1e-12


# --------------------------------------------------------------------------- risk control
def false_negative_rate(Y, scores, lam) -> np.ndarray:
    """Per-example share of true labels missed by the set {k : score_k >= lam} (0 if no labels)."""
    Y = np.asarray(Y).astype(bool)
    missed = (Y & (scores < lam)).sum(axis=1)
    n_true = Y.sum(axis=1)
    return np.where(n_true > 0, missed / np.maximum(n_true, 1), 0.0)


class RiskController(_ConformalMixin, BaseEstimator):
    """Choose lambda so a user loss is controlled, e.g. the multilabel false-negative rate.

    Parameters
    ----------
    estimator : classifier or None
        Produces per-class scores (``predict_proba``; multilabel lists of (n, 2) arrays are
        handled). ``None``: ``X`` already holds the scores (n, K).
    loss : "fnr" or callable
        ``"fnr"``: set = classes with score >= lambda, loss = share of true labels missed.
        A callable ``loss(Y, scores, lam) -> (n,)`` losses in [0, bound], monotone in lambda.
    lambdas : array or None
        Grid of lambdas; default for ``"fnr"``: 0 and every calibration true-label score (exact),
        for a callable ``linspace(0, 1, 201)``.
    set_fn : callable or None
        ``set_fn(scores, lam) -> (n, K) bool`` used by ``predict``; default ``scores >= lam``.
    direction : {"auto", "decreasing", "increasing"}
        How losses move with lambda; ``"auto"`` detects it (and rejects non-monotone losses).
    Other parameters as :class:`ConformalRegressor`.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal.data import make_multilabel_scores
    >>> S, Y = make_multilabel_scores(n_samples=800, rng=0)
    >>> rc = RiskController(alpha=0.1, method="bq", prefit=True).fit(S, Y)
    >>> rc.predict(S[:2]).shape
    (2, 80)
    """

    def __init__(self, estimator=None, *, loss="fnr", lambdas=None, set_fn=None,
                 direction="auto", method="bq", alpha=0.1, beta=0.95, bound=1.0, prefit=False,
                 calibration_size=0.5, concentration="hb", n_draws=10_000, random_state=None):
        self.estimator = estimator
        self.loss = loss
        self.lambdas = lambdas
        self.set_fn = set_fn
        self.direction = direction
        self.method = method
        self.alpha = alpha
        self.beta = beta
        self.bound = bound
        self.prefit = prefit
        self.calibration_size = calibration_size
        self.concentration = concentration
        self.n_draws = n_draws
        self.random_state = random_state

    def fit(self, X, Y):
        """Fit the estimator (unless prefit or precomputed scores) and calibrate lambda."""
        spec = self._check_params()
        if self.loss != "fnr" and not callable(self.loss):
            raise ValueError(f"loss must be 'fnr' or a callable, got {self.loss!r}")
        X = validate_data(self, X)
        Y = np.asarray(Y)
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
        if self.estimator is None or self.prefit:
            if self.estimator is not None:
                check_is_fitted(self.estimator)
            self.estimator_ = self.estimator
            x_cal, y_cal = X, Y
        else:
            x_tr, y_tr, x_cal, y_cal = _order_split(self._split(X, Y))
            self.estimator_ = clone(self.estimator).fit(x_tr, y_tr)
        return self._calibrate(x_cal, y_cal, spec)

    def calibrate(self, X, Y):
        """Re-calibrate lambda on new data, keeping the fitted estimator."""
        check_is_fitted(self, "calibration_")
        spec = self._check_params()
        X = validate_data(self, X, reset=False)
        return self._calibrate(X, np.asarray(Y), spec)

    def _scores(self, X) -> np.ndarray:
        if self.estimator_ is None:
            return np.asarray(X, dtype=float)
        proba = self.estimator_.predict_proba(X)
        if isinstance(proba, list):  # multilabel: one (n, 2) array per label
            return np.column_stack([p[:, -1] for p in proba])
        return np.asarray(proba, dtype=float)

    def _calibrate(self, X, Y, spec):
        scores = self._scores(X)
        if self.loss == "fnr":
            Yb = np.asarray(Y)
            if Yb.shape != scores.shape or not np.isin(Yb, (0, 1)).all():
                raise ValueError(f"loss='fnr' needs a 0/1 label matrix of the scores' shape "
                                 f"{scores.shape}, got shape {Yb.shape}")
            grid = (np.asarray(self.lambdas, dtype=float) if self.lambdas is not None else
                    np.unique(np.concatenate([[0.0], scores[Yb.astype(bool)]])))
            losses = np.stack([false_negative_rate(Yb, scores, g) for g in grid], axis=1)
        else:
            grid = (np.asarray(self.lambdas, dtype=float) if self.lambdas is not None
                    else np.linspace(0.0, 1.0, 201))
            losses = np.stack([np.asarray(self.loss(Y, scores, g), dtype=float).reshape(-1)
                               for g in grid], axis=1)
        self.calibration_ = calibrate_spec(losses, grid, spec, direction=self.direction)
        self.lambda_ = self.calibration_.lambda_
        self.risk_posterior_ = self.calibration_.posterior
        self.n_calibration_ = int(losses.shape[0])
        return self

    def predict_set(self, X):
        """(n, K) boolean sets at the chosen lambda (full sets when infeasible)."""
        check_is_fitted(self, "calibration_")
        X = validate_data(self, X, reset=False)
        scores = self._scores(X)
        if self.set_fn is not None:
            return np.asarray(self.set_fn(scores, self.lambda_), dtype=bool)
        return scores >= self.lambda_

    def predict(self, X):
        """Sets as a 0/1 indicator matrix (multilabel predictions)."""
        return self.predict_set(X).astype(int)
