"""Conformity scores as strategy objects, for :class:`ConformalRegressor` and
:class:`ConformalClassifier`.

Every score turns a model's output into a nonconformity score s(x, y); the estimators calibrate a
threshold lambda on the calibration scores s(x_i, y_i) with any rule (``bq``, ``crc``, ...) and
predict {y : s(x, y) <= lambda}. Whatever the score, coverage is guaranteed by the rule; the score
only decides the *shape* of the sets (adaptive or not).

Regression (``fit`` the model(s), ``score`` residuals, ``interval`` at a lambda):

* ``"absolute"`` — :class:`AbsoluteResidual`: |y - f(x)|, interval f(x) +- lambda.
* ``"normalized"`` — :class:`NormalizedResidual`: |y - f(x)| / sigma(x) with a difficulty estimate
  sigma (any regressor fitted on |residual|, or the kNN spread of the training targets);
  interval f(x) +- lambda sigma(x): wide where the model is unsure, narrow where it is not.
* ``"cqr"`` — :class:`CQR`: conformalised quantile regression, max(q_lo(x) - y, y - q_hi(x)).

Classification (score of every label from ``predict_proba``; ``u`` uniforms for randomised ones):

* ``"lac"`` — :class:`LAC`: 1 - p_y(x). Smallest sets on average, not adaptive.
* ``"aps"`` — :class:`APS`: the probability mass ranked *strictly above* y plus u * p_y, u ~ U(0, 1)
  (Romano et al. 2020's randomised tie-breaking) on the *calibration* points; at prediction the set
  takes labels in order of probability up to and including the one whose cumulative mass crosses
  lambda ("include the last label"), so it is never empty and covers >= 1 - alpha. The U term
  keeps lambda away from 0 when the model is right more often than 1 - alpha (without it every
  set is the top label alone). ``APS(tie_break=False)`` is the purely deterministic score;
  ``APS(randomized=True)`` (``"aps_randomized"``) also draws u for each *test* point: exact
  coverage 1 - alpha on average (sets may then be empty).
* ``"raps"`` — :class:`RAPS`: APS plus lam * (rank(y) - k_reg)^+ (Angelopoulos et al. 2021),
  which penalises long tails of unlikely labels: smaller sets at the same coverage.
  ``"raps_randomized"``: the randomised variant.
* ``"top_k"`` — :class:`TopK`: the rank of y; every set has the same size (the top
  ceil(lambda) labels). ``"top_k_randomized"``: rank - 1 + u, sets of two neighbouring sizes,
  coverage exactly 1 - alpha on average.

Add a score by subclassing :class:`RegressionScore` / :class:`ClassificationScore` and passing an
instance as ``conformity_score=`` (or registering it in :data:`REGRESSION_SCORES` /
:data:`CLASSIFICATION_SCORES`).

Examples
--------
>>> import numpy as np
>>> p = np.array([[0.7, 0.2, 0.1]])
>>> APS().label_scores(p, None).round(2)      # mass ranked strictly above each label
array([[0. , 0.7, 0.9]])
>>> APS().label_scores(p, np.array([0.5])).round(2)   # + u * p_k on calibration points
array([[0.35, 0.8 , 0.95]])
>>> TopK().label_scores(p, None)
array([[1., 2., 3.]])
"""

from __future__ import annotations

import copy

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

__all__ = ["APS", "CLASSIFICATION_SCORES", "CQR", "LAC", "RAPS", "REGRESSION_SCORES",
           "AbsoluteResidual", "ClassificationScore", "NormalizedResidual", "RegressionScore",
           "TopK", "get_classification_score", "get_regression_score"]


class _Strategy:
    name = ""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.endswith("_"))
        return f"{type(self).__name__}({args})"

    def __eq__(self, other) -> bool:
        if type(self) is not type(other):
            return False
        mine = {k: v for k, v in vars(self).items() if not k.endswith("_")}
        theirs = {k: v for k, v in vars(other).items() if not k.endswith("_")}
        return repr(mine) == repr(theirs)

    def __hash__(self) -> int:
        return hash(repr(self))


# --------------------------------------------------------------------------- regression
class RegressionScore(_Strategy):
    """Base class. ``fit`` stores fitted models on the (copied) score; then score / interval.

    Subclasses implement ``fit(estimator, X, y, *, alpha, prefit)``, ``predict(X)``,
    ``score(X, y)`` (the conformity scores, shape (n,)) and ``interval(X, lam)`` (shape (n, 2));
    an instance can be passed as ``conformity_score=`` to the regressors.

    Examples
    --------
    >>> from icml25.conformal import AbsoluteResidual, CQR, RegressionScore
    >>> isinstance(AbsoluteResidual(), RegressionScore), isinstance(CQR(), RegressionScore)
    (True, True)
    """

    def fit(self, estimator, X, y, *, alpha: float, prefit: bool) -> RegressionScore:
        raise NotImplementedError

    def predict(self, X) -> np.ndarray:
        raise NotImplementedError

    def score(self, X, y) -> np.ndarray:
        raise NotImplementedError

    def interval(self, X, lam) -> np.ndarray:
        raise NotImplementedError


def _fit_or_check(model, X, y, prefit: bool, default):
    model = default() if model is None else model
    if prefit:
        check_is_fitted(model)
        return model
    return clone(model).fit(X, y)


def _pred(model, X) -> np.ndarray:
    return np.asarray(model.predict(X), dtype=float).reshape(-1)


class AbsoluteResidual(RegressionScore):
    """|y - f(x)|; interval f(x) +- lambda (the same width everywhere).

    ``fit(estimator, X, y, alpha=..., prefit=...)`` fits a clone of the estimator
    (``LinearRegression`` when None) or, with ``prefit=True``, checks that it is fitted.

    Attributes
    ----------
    model_ : regressor
        The fitted point model f.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import AbsoluteResidual
    >>> X = np.arange(10.0).reshape(-1, 1); y = 2 * X[:, 0] + 1
    >>> s = AbsoluteResidual().fit(None, X, y, alpha=0.1, prefit=False)
    >>> s.score(X[:2], [1.5, 2.0])                 # f(x) = 1, 3
    array([0.5, 1. ])
    >>> s.interval(X[:1], 0.5)
    array([[0.5, 1.5]])
    """

    name = "absolute"

    def fit(self, estimator, X, y, *, alpha, prefit):
        from sklearn.linear_model import LinearRegression

        self.model_ = _fit_or_check(estimator, X, y, prefit, LinearRegression)
        return self

    def predict(self, X):
        return _pred(self.model_, X)

    def score(self, X, y):
        return np.abs(y - self.predict(X))

    def interval(self, X, lam):
        f = self.predict(X)
        return np.column_stack([f - lam, f + lam])


class _KNNSpread:
    """sigma(x) = standard deviation of the targets of the k nearest training points."""

    def __init__(self, n_neighbors: int):
        self.n_neighbors = n_neighbors

    def fit(self, X, y):
        from sklearn.neighbors import NearestNeighbors

        k = min(self.n_neighbors, X.shape[0])
        self.nn_ = NearestNeighbors(n_neighbors=k).fit(X)
        self.y_ = np.asarray(y, dtype=float)
        return self

    def predict(self, X):
        idx = self.nn_.kneighbors(X, return_distance=False)
        return self.y_[idx].std(axis=1)


class NormalizedResidual(RegressionScore):
    """|y - f(x)| / sigma(x): locally adaptive intervals f(x) +- lambda * sigma(x).

    Parameters
    ----------
    difficulty : "knn", "knn_spread" or a regressor, default="knn"
        How sigma(x) is estimated on the training part: ``"knn"`` — mean |residual| of the
        ``n_neighbors`` nearest training points (a ``KNeighborsRegressor`` on |residual|);
        ``"knn_spread"`` — standard deviation of their targets; a regressor — fitted on
        (X_train, |residual|). Residuals are out-of-fold (``cv`` folds) unless ``cv=None``
        (in-sample: cheaper, but flat for models that interpolate, e.g. forests).
        With ``prefit=True`` there is no training part: pass a *fitted* regressor that predicts
        the spread from X.
    n_neighbors : int, default=25
        Neighbours of the ``"knn"`` and ``"knn_spread"`` difficulty estimates.
    cv : int or None, default=5
        Folds of the out-of-fold residuals (None: in-sample).
    min_spread : float, default=0.05
        sigma is floored at ``min_spread`` times the mean training |residual| (no division by 0).

    Attributes
    ----------
    model_ : regressor
        The fitted point model f.

    Raises
    ------
    ValueError
        From ``fit``: a non-positive ``min_spread``, an unknown ``difficulty``, or
        ``prefit=True`` without a fitted difficulty regressor.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import NormalizedResidual
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 4, size=(300, 1)); y = X[:, 0] + rng.normal(size=300) * X[:, 0]
    >>> s = NormalizedResidual(n_neighbors=20).fit(None, X, y, alpha=0.1, prefit=False)
    >>> lo_noise, hi_noise = s.spread(np.array([[0.5], [3.5]]))
    >>> bool(hi_noise > 3 * lo_noise)              # wider where the noise is larger
    True
    """

    name = "normalized"

    def __init__(self, difficulty="knn", n_neighbors: int = 25, cv: int | None = 5,
                 min_spread: float = 0.05):
        self.difficulty = difficulty
        self.n_neighbors = n_neighbors
        self.cv = cv
        self.min_spread = min_spread

    def fit(self, estimator, X, y, *, alpha, prefit):
        from sklearn.linear_model import LinearRegression
        from sklearn.model_selection import cross_val_predict
        from sklearn.neighbors import KNeighborsRegressor

        if not (isinstance(self.min_spread, float | int) and self.min_spread > 0):
            raise ValueError(f"min_spread must be positive, got {self.min_spread!r}")
        self.model_ = _fit_or_check(estimator, X, y, prefit, LinearRegression)
        if prefit:
            if isinstance(self.difficulty, str) or not hasattr(self.difficulty, "predict"):
                raise ValueError("with prefit=True there is no training data for the difficulty "
                                 "estimator: pass NormalizedResidual(difficulty=<a fitted "
                                 "regressor of |residual| on X, trained on data not used for "
                                 "calibration>)")
            check_is_fitted(self.difficulty)
            self.difficulty_ = self.difficulty
            self.floor_ = None
            return self
        if self.difficulty == "knn_spread":
            self.difficulty_ = _KNNSpread(int(self.n_neighbors)).fit(X, y)
            spread = self.difficulty_.predict(X)
        else:
            if self.difficulty == "knn":
                diff = KNeighborsRegressor(n_neighbors=min(int(self.n_neighbors), X.shape[0]))
            elif isinstance(self.difficulty, str) or not hasattr(self.difficulty, "fit"):
                raise ValueError(f"difficulty must be 'knn', 'knn_spread' or a regressor, got "
                                 f"{self.difficulty!r}")
            else:
                diff = clone(self.difficulty)
            base = LinearRegression() if estimator is None else estimator
            if self.cv is not None and X.shape[0] >= 2 * int(self.cv):
                fitted = cross_val_predict(clone(base), X, y, cv=int(self.cv))
            else:
                fitted = _pred(self.model_, X)
            resid = np.abs(np.asarray(y, dtype=float) - np.asarray(fitted, dtype=float))
            self.difficulty_ = diff.fit(X, resid)
            spread = resid
        scale = float(np.mean(np.abs(spread))) if spread.size else 0.0
        self.floor_ = self.min_spread * scale if scale > 0 else 1e-12
        return self

    def spread(self, X) -> np.ndarray:
        """sigma(x) used to scale the interval."""
        s = np.maximum(_pred(self.difficulty_, X), 0.0)
        floor = self.floor_ if self.floor_ is not None else 1e-12
        return np.maximum(s, floor)

    def predict(self, X):
        return _pred(self.model_, X)

    def score(self, X, y):
        return np.abs(y - self.predict(X)) / self.spread(X)

    def interval(self, X, lam):
        f, s = self.predict(X), self.spread(X)
        return np.column_stack([f - lam * s, f + lam * s])


class CQR(RegressionScore):
    """Conformalised quantile regression: max(q_lo(x) - y, y - q_hi(x)).

    The estimator is one quantile regressor (its ``quantile`` or, for ``loss="quantile"`` models,
    ``alpha`` parameter is set to alpha/2 and 1 - alpha/2; default ``QuantileRegressor``) or a
    pair (lower, upper). Interval [q_lo - lambda, q_hi + lambda].

    Attributes
    ----------
    models_ : list of two regressors
        The fitted lower and upper quantile models.

    Raises
    ------
    ValueError
        From ``fit``: a sequence of estimators that is not a pair, or a single estimator with
        no quantile parameter.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import CQR
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 4, size=(300, 1)); y = X[:, 0] + rng.normal(size=300)
    >>> s = CQR().fit(None, X, y, alpha=0.2, prefit=False)     # the 10% and 90% quantiles
    >>> lo, hi = s.interval(np.array([[1.0]]), 0.0)[0]
    >>> bool(lo < 1.0 < hi), s.score(np.array([[1.0]]), [hi + 1.0]).round(6)
    (True, array([1.]))
    """

    name = "cqr"

    def fit(self, estimator, X, y, *, alpha, prefit):
        from sklearn.linear_model import QuantileRegressor

        if isinstance(estimator, list | tuple):
            if len(estimator) != 2:
                raise ValueError("for conformity_score='cqr' pass one quantile regressor or a pair")
            models = list(estimator)
        else:
            base = QuantileRegressor(alpha=0.0, solver="highs") if estimator is None else estimator
            models = [_with_quantile(base, alpha / 2), _with_quantile(base, 1 - alpha / 2)]
        if prefit:
            for m in models:
                check_is_fitted(m)
            self.models_ = models
        else:
            self.models_ = [clone(m).fit(X, y) for m in models]
        return self

    def _bands(self, X):
        lo, hi = (_pred(m, X) for m in self.models_)
        return np.minimum(lo, hi), np.maximum(lo, hi)

    def predict(self, X):
        lo, hi = self._bands(X)
        return 0.5 * (lo + hi)

    def score(self, X, y):
        lo, hi = self._bands(X)
        return np.maximum(lo - y, y - hi)

    def interval(self, X, lam):
        lo, hi = self._bands(X)
        return np.column_stack([lo - lam, hi + lam])


def _with_quantile(model, q: float):
    params = model.get_params()
    if "quantile" in params:
        return clone(model).set_params(quantile=q)
    if params.get("loss") == "quantile" and "alpha" in params:
        return clone(model).set_params(alpha=q)
    raise ValueError("conformity_score='cqr' needs a quantile regressor (a 'quantile' parameter, "
                     f"or loss='quantile' with 'alpha'); {type(model).__name__} has neither. "
                     "Or pass a pair (lower, upper) of regressors.")


# --------------------------------------------------------------------------- classification
class ClassificationScore(_Strategy):
    """Base class: ``label_scores(proba, u)`` gives s(x, k) for every label k (n, K).

    The set is {k : s(x, k) <= lambda} (:meth:`in_set`). ``randomized`` scores receive ``u``
    (n,) uniforms, one per example (the same u for every label of an example), at calibration
    and at prediction; ``tie_break`` scores receive them at calibration only, and at prediction
    ``u = 0`` with the strict test s(x, k) < lambda ("include the last label"); others receive
    ``u=None``. ``max_score(K)`` bounds the scores (a label the model never saw is scored
    above it). An instance can be passed as ``conformity_score=`` to the classifiers.

    Examples
    --------
    >>> from icml25.conformal import APS, LAC, ClassificationScore
    >>> isinstance(LAC(), ClassificationScore), LAC().max_score(3)
    (True, 1.0)
    >>> APS().needs_u("calibrate"), APS().needs_u("predict")
    (True, False)
    """

    randomized = False
    tie_break = False

    def label_scores(self, proba: np.ndarray, u: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def needs_u(self, stage: str) -> bool:
        """Whether uniforms are drawn at ``stage`` ("calibrate" or "predict")."""
        return bool(self.randomized or (self.tie_break and stage == "calibrate"))

    def in_set(self, scores: np.ndarray, lam) -> np.ndarray:
        """Membership of each label given its prediction-time score and the threshold."""
        if self.tie_break and not self.randomized:
            return scores < lam - 1e-12
        return scores <= lam + 1e-12

    def max_score(self, n_classes: int) -> float:
        return 1.0


class LAC(ClassificationScore):
    """Least ambiguous classifier: s = 1 - p_k(x).

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import LAC
    >>> s = LAC().label_scores(np.array([[0.6, 0.3, 0.1]]), None)
    >>> s
    array([[0.4, 0.7, 0.9]])
    >>> LAC().in_set(s, 0.5)
    array([[ True, False, False]])
    """

    name = "lac"

    def label_scores(self, proba, u):
        return 1.0 - proba


def _ranked(proba):
    """(mass strictly above each label, 1-based rank of each label), ties broken by index."""
    order = np.argsort(-proba, axis=1, kind="stable")
    srt = np.take_along_axis(proba, order, axis=1)
    above = np.cumsum(srt, axis=1) - srt
    mass = np.empty_like(proba)
    np.put_along_axis(mass, order, above, axis=1)
    rank = np.empty(proba.shape, dtype=float)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(1, proba.shape[1] + 1.0),
                                                   proba.shape).copy(), axis=1)
    return np.clip(mass, 0.0, 1.0), rank


class APS(ClassificationScore):
    """Adaptive prediction sets: s(x, k) = mass of the labels ranked strictly above k (+ u p_k).

    Parameters
    ----------
    randomized : bool, default=False
        Add u * p_k(x), u ~ U(0, 1), at calibration *and* prediction (Romano et al. 2020): the
        set is {k : s <= lambda}, coverage exactly 1 - alpha on average; sets can be empty.
    tie_break : bool, default=True
        (When not randomized.) Add the u * p_y term to the calibration scores only, and predict
        the most likely labels up to and including the one whose cumulative mass crosses
        lambda — the "include the last label" rule (MAPIE's default). Never empty; coverage
        >= 1 - alpha. ``False``: the purely deterministic score, whose calibration scores are
        0 for every correctly classified point, so a model right more often than 1 - alpha
        gets the top label alone for every input.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.6, 0.3, 0.1]])
    >>> APS().in_set(APS().label_scores(p, np.zeros(1)), 0.65)   # 0.6 < 0.65: 2nd label in
    array([[ True,  True, False]])
    """

    name = "aps"

    def __init__(self, randomized: bool = False, tie_break: bool = True):
        self.randomized = randomized
        self.tie_break = tie_break

    def label_scores(self, proba, u):
        above, _ = _ranked(proba)
        if u is not None:
            return above + u[:, None] * proba
        return above


class RAPS(APS):
    """Regularised APS: APS + lam * (rank - k_reg)^+ (Angelopoulos et al. 2021).

    Labels past the ``k_reg`` most likely ones pay ``lam`` per rank, which cuts the long tail of
    unlikely labels that APS adds when the model is unsure. ``randomized`` and ``tie_break`` as
    for :class:`APS`.

    Parameters
    ----------
    k_reg : int, default=1
        Number of top labels that pay no penalty.
    lam : float, default=0.01
        Penalty per rank past ``k_reg``.
    randomized : bool, default=False
        As for :class:`APS`.
    tie_break : bool, default=True
        As for :class:`APS`.

    Raises
    ------
    ValueError
        From ``label_scores``: a negative or non-integer ``k_reg``, or a negative ``lam``.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import RAPS
    >>> RAPS(k_reg=1, lam=0.1).label_scores(np.array([[0.6, 0.3, 0.1]]), None)
    array([[0. , 0.7, 1.1]])
    """

    name = "raps"

    def __init__(self, k_reg: int = 1, lam: float = 0.01, randomized: bool = False,
                 tie_break: bool = True):
        self.k_reg = k_reg
        self.lam = lam
        self.randomized = randomized
        self.tie_break = tie_break

    def _check(self):
        if not (isinstance(self.k_reg, int | np.integer) and self.k_reg >= 0):
            raise ValueError(f"k_reg must be a non-negative int, got {self.k_reg!r}")
        if not (isinstance(self.lam, float | int) and self.lam >= 0):
            raise ValueError(f"lam must be a non-negative number, got {self.lam!r}")

    def label_scores(self, proba, u):
        self._check()
        above, rank = _ranked(proba)
        s = above + self.lam * np.maximum(rank - self.k_reg, 0.0)
        if u is not None:
            s = s + u[:, None] * proba
        return s

    def max_score(self, n_classes):
        return 1.0 + self.lam * max(n_classes - self.k_reg, 0)


class TopK(ClassificationScore):
    """s = rank of the label (1 = most likely): every set holds the same number of labels.

    ``randomized=True``: s = rank - 1 + u, u ~ U(0, 1) at calibration and prediction, so sets
    hold floor(lambda) or floor(lambda) + 1 labels and coverage is exactly 1 - alpha on average
    (a fixed k can only reach the coverage of the top-k accuracies).

    Parameters
    ----------
    randomized : bool, default=False
        Use the randomised score rank - 1 + u.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import TopK
    >>> s = TopK().label_scores(np.array([[0.3, 0.6, 0.1]]), None)
    >>> s
    array([[2., 1., 3.]])
    >>> TopK().in_set(s, 2)
    array([[ True,  True, False]])
    """

    name = "top_k"

    def __init__(self, randomized: bool = False):
        self.randomized = randomized

    def label_scores(self, proba, u):
        rank = _ranked(proba)[1]
        if self.randomized:
            return rank - 1.0 + u[:, None]
        return rank

    def max_score(self, n_classes):
        return float(n_classes)


REGRESSION_SCORES: dict[str, RegressionScore] = {
    "absolute": AbsoluteResidual(), "normalized": NormalizedResidual(), "cqr": CQR()}
CLASSIFICATION_SCORES: dict[str, ClassificationScore] = {
    "lac": LAC(), "aps": APS(), "aps_randomized": APS(randomized=True), "raps": RAPS(),
    "raps_randomized": RAPS(randomized=True), "top_k": TopK(),
    "top_k_randomized": TopK(randomized=True)}


def _get(score, registry: dict, base: type, kind: str):
    if isinstance(score, str):
        try:
            return copy.deepcopy(registry[score])
        except KeyError:
            raise ValueError(f"conformity_score must be one of {tuple(registry)} or a "
                             f"{base.__name__} instance, got {score!r}") from None
    if isinstance(score, base):
        return copy.deepcopy(score)
    raise ValueError(f"conformity_score for a {kind} must be one of {tuple(registry)} or a "
                     f"{base.__name__} instance, got {score!r}")


def get_regression_score(score) -> RegressionScore:
    """A fresh copy of a registered regression score (by name) or of the given instance."""
    return _get(score, REGRESSION_SCORES, RegressionScore, "regressor")


def get_classification_score(score) -> ClassificationScore:
    """A fresh copy of a registered classification score (by name) or of the given instance."""
    return _get(score, CLASSIFICATION_SCORES, ClassificationScore, "classifier")
