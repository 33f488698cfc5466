"""scikit-learn estimators: conformal intervals, prediction sets and risk control.

Each wraps any regressor/classifier (fitted with ``prefit=True``, otherwise fitted on a split of
the data passed to ``fit``), calibrates lambda on held-out data with one of the rules
``method`` in {"bq", "crc", "rcps", "split"} (or a :class:`~icml25.conformal.rules.Rule`), and
exposes ``lambda_``, ``calibration_`` and ``risk_posterior_`` (the posterior of the risk L+ at the
chosen lambda; ``plot_risk_posterior``). The shape of intervals and sets comes from
``conformity_score`` (a name or an instance, see :mod:`icml25.conformal.scores`).

**Mondrian calibration.** ``fit(X, y, groups=g)`` (any categorical taxonomy, one value per row)
calibrates one lambda per group, with the chosen rule's guarantee — the ``bq`` posterior
included — holding *within each group*; ``predict_interval(X, groups=g)`` then uses each row's
group's lambda. ``ConformalClassifier(class_conditional=True)`` groups calibration points by
their label and tests each candidate label against its own class's lambda. ``lambda_`` is then
an array aligned with ``groups_`` (``classes_``), and ``calibration_`` / ``risk_posterior_`` are
dicts keyed by group.

When a calibration set (or a group) cannot support the request the estimators return the trivial
predictor there (infinite intervals, the label always in the set) and warn with the minimum
calibration size.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, RegressorMixin, clone
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted, validate_data

from icml25.conformal._validation import InfeasibleRiskWarning
from icml25.conformal.calibration import calibrate_scores_spec, calibrate_spec
from icml25.conformal.rules import RuleSpec
from icml25.conformal.scores import get_classification_score, get_regression_score

__all__ = ["ConformalClassifier", "ConformalRegressor", "RiskController"]


def _check_groups(groups, n: int, where: str) -> np.ndarray:
    arr = np.asarray(groups)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"groups passed to {where} must be 1-D with one value per row of X "
                         f"({n}), got shape {arr.shape}")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"groups passed to {where} contain NaN; give every row a group")
    if arr.dtype.kind == "O" and any(v is None for v in arr):
        raise ValueError(f"groups passed to {where} contain None; give every row a group")
    return arr


def _alpha_levels(alpha) -> tuple[tuple, bool]:
    """(levels, is_sequence): a scalar alpha or a 1-D sequence of them (MAPIE's shape)."""
    if isinstance(alpha, str) or np.ndim(alpha) == 0:
        return (alpha,), False
    arr = np.asarray(alpha, dtype=object)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"alpha must be a number in (0, 1) or a non-empty 1-D sequence of "
                         f"them, got {alpha!r}")
    levels = tuple(arr.tolist())
    if len(set(map(repr, levels))) != len(levels):
        raise ValueError(f"alpha levels must be distinct, got {alpha!r}")
    return levels, True


def _plain(value):
    """A numpy scalar as the Python value (for dict keys and messages)."""
    return value.item() if isinstance(value, np.generic) else value


class _ConformalMixin(MetaEstimatorMixin):
    """Shared parameter checks, train/calibration split, (Mondrian) calibration and plotting."""

    def _check_params(self) -> RuleSpec:
        """Validate the parameters once for a single ``alpha``; the request is passed down."""
        levels, multi = _alpha_levels(self.alpha)
        if multi:
            raise ValueError(f"{type(self).__name__} takes one alpha, got {self.alpha!r}")
        return self._check_specs()[0]

    def _check_specs(self) -> list[RuleSpec]:
        """Validate the parameters once: one rule request per level of ``alpha``.

        ``random_state`` seeds both the train/calibration split and the Monte Carlo draws
        (the common random numbers of the ``bq`` posterior when it has no closed form).
        """
        levels, multi = _alpha_levels(self.alpha)
        specs = [RuleSpec.make(self.method, a, self.beta, self.bound, self.concentration,
                               self.n_draws, self.random_state) for a in levels]
        if multi and len({s.random_state for s in specs}) > 1:  # one seed for every level
            import dataclasses

            specs = [dataclasses.replace(s, random_state=specs[0].random_state) for s in specs]
        size = self.calibration_size
        if not (isinstance(size, float) and 0 < size < 1
                or isinstance(size, int | np.integer) and not isinstance(size, bool)
                and size >= 0):
            raise ValueError(f"calibration_size must be a float in (0, 1) or an int >= 0 "
                             f"(0: train on all of fit's data, then calibrate(X_cal, y_cal)), "
                             f"got {size!r}")
        self.alphas_ = np.array([s.alpha for s in specs])
        self.multi_alpha_ = multi
        return specs

    def _calibration_deferred(self) -> bool:
        size = self.calibration_size
        return not self.prefit and not isinstance(size, float) and int(size) == 0

    def _split(self, X, y, groups=None):
        """(X_train, y_train, X_cal, y_cal, groups_cal); with prefit all is calibration data."""
        if self.prefit:
            return None, None, X, y, groups
        if self._calibration_deferred():  # train on everything; calibrate() comes later
            return X, y, None, None, None
        n = X.shape[0]
        size = self.calibration_size
        n_cal = int(round(size * n)) if isinstance(size, float) else int(size)
        if n < 2 or n_cal < 1 or n_cal >= n:
            raise ValueError(f"cannot split {n} sample(s) into a training part and a calibration "
                             f"part of size {size!r}; pass more data or prefit=True")
        arrays = (X, y) if groups is None else (X, y, groups)
        parts = train_test_split(*arrays, test_size=n_cal, random_state=self.random_state)
        return parts[0], parts[2], parts[1], parts[3], (None if groups is None else parts[5])

    def _calibrate_scores(self, scores, spec: RuleSpec, groups=None, values=None) -> None:
        scores = np.asarray(scores, dtype=float)
        self.n_calibration_ = int(scores.size)
        if groups is None:
            self.groups_ = None
            self.calibration_ = calibrate_scores_spec(scores, spec, stacklevel=6)
            self.lambda_ = self.calibration_.lambda_
            self.risk_posterior_ = self.calibration_.posterior
            return
        values = np.unique(groups) if values is None else values
        self.groups_ = values
        self.calibration_, self.risk_posterior_ = {}, {}
        lam = np.full(values.size, math.inf)
        sizes = np.zeros(values.size, dtype=int)
        weak = []
        for j, g in enumerate(values):
            s = scores[groups == g]
            sizes[j] = s.size
            key = _plain(g)
            if s.size == 0:
                self.calibration_[key] = self.risk_posterior_[key] = None
                weak.append(j)
                continue
            res = calibrate_scores_spec(s, spec, warn=False)
            self.calibration_[key], self.risk_posterior_[key] = res, res.posterior
            lam[j] = res.lambda_
            if not res.feasible:
                weak.append(j)
        self.lambda_, self.group_sizes_ = lam, sizes
        if weak:
            level = f" with credibility beta={spec.beta:g}" if spec.rule.uses_beta else ""
            listed = ", ".join(f"{_plain(values[j])!r} (n={sizes[j]})" for j in weak[:10])
            more = f" and {len(weak) - 10} more" if len(weak) > 10 else ""
            warnings.warn(
                f"Mondrian calibration: {len(weak)} of {values.size} groups cannot certify "
                f"risk <= alpha={spec.alpha:g}{level} with method {spec.method!r}; a group needs "
                f"at least n={spec.min_n} calibration points even if every loss were 0. "
                f"Groups {listed}{more} get the trivial predictor (infinite intervals / the "
                f"label always in the set). Merge small groups or collect more calibration data.",
                InfeasibleRiskWarning, stacklevel=4)

    def _calibrate_levels(self, scores, specs: list[RuleSpec], groups=None,
                          values=None) -> None:
        """:meth:`_calibrate_scores` once per alpha level; with several levels ``lambda_``
        gains a last axis (one column per level) and ``calibration_`` / ``risk_posterior_``
        become lists in the order of ``alphas_``."""
        if not self.multi_alpha_:
            self._calibrate_scores(scores, specs[0], groups, values)
            return
        lams, cals, posts = [], [], []
        for spec in specs:
            self._calibrate_scores(scores, spec, groups, values)
            lams.append(np.asarray(self.lambda_, dtype=float))
            cals.append(self.calibration_)
            posts.append(self.risk_posterior_)
        self.lambda_ = np.stack(lams, axis=-1)
        self.calibration_, self.risk_posterior_ = cals, posts

    def _check_calibrated(self) -> None:
        if not hasattr(self, "lambda_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"this {type(self).__name__} was fitted with calibration_size=0 and is not "
                "calibrated yet: call calibrate(X_cal, y_cal) on held-out data before "
                "predicting intervals or sets")

    def _row_lambdas(self, groups, n: int):
        """lambda per row (Mondrian) or the single lambda (a last axis per alpha level)."""
        self._check_calibrated()
        if self.groups_ is None or getattr(self, "class_conditional", False):
            if groups is not None:
                raise ValueError("groups were passed to predict but not to fit; calibrate with "
                                 "fit(X, y, groups=...) first (class_conditional=True takes "
                                 "no groups)")
            return self.lambda_
        if groups is None:
            raise ValueError("this estimator was calibrated per group (fit(..., groups=...)); "
                             "pass groups= for the rows to predict")
        g = _check_groups(groups, n, "predict")
        idx = np.clip(np.searchsorted(self.groups_, g), 0, self.groups_.size - 1)
        unknown = self.groups_[idx] != g
        if unknown.any():
            raise ValueError(f"groups {[_plain(v) for v in np.unique(g[unknown])[:5]]} were not "
                             f"seen at calibration (known: "
                             f"{[_plain(v) for v in self.groups_[:10]]}); no lambda is "
                             "calibrated for them")
        return self.lambda_[idx]

    def plot_risk_posterior(self, ax=None, group=None, level: int = 0):
        """Density of the risk posterior L+ at the chosen lambda, alpha and beta marked.

        For a Mondrian (per-group) calibration, name the ``group`` to plot; with several
        alpha levels, ``level`` is the index into ``alphas_``.
        """
        check_is_fitted(self, "risk_posterior_")
        post, lam, tag = self.risk_posterior_, self.lambda_, ""
        alpha = self.alpha
        if isinstance(post, list):
            post, cal = post[level], self.calibration_[level]
            alpha = float(self.alphas_[level])
            lam = cal.lambda_ if not isinstance(cal, dict) else None
            if isinstance(cal, dict):
                if group not in post or post[group] is None:
                    raise ValueError(f"per-group calibration: pass group= one of "
                                     f"{[k for k, v in post.items() if v is not None][:10]}")
                post, lam = post[group], cal[group].lambda_
                tag = f", group {group!r}"
            ax = post.plot(ax, alpha=alpha, beta=self.beta)
            ax.set_title(f"{type(self).__name__} ({self.calibration_method_}{tag}): risk "
                         f"posterior at lambda = {lam:.4g}, alpha = {alpha:g}")
            return ax
        if isinstance(post, dict):
            if group not in post or post[group] is None:
                raise ValueError(f"per-group calibration: pass group= one of "
                                 f"{[k for k, v in post.items() if v is not None][:10]}")
            post, lam = post[group], self.calibration_[group].lambda_
            tag = f", group {group!r}"
        ax = post.plot(ax, alpha=self.alpha, beta=self.beta)
        ax.set_title(f"{type(self).__name__} ({self.calibration_method_}{tag}): risk posterior "
                     f"at lambda = {lam:.4g}")
        return ax

    @property
    def calibration_method_(self) -> str:
        cal = self.calibration_
        if isinstance(cal, list):
            cal = cal[0]
        first = next((c for c in cal.values() if c is not None), None) if isinstance(
            cal, dict) else cal
        return first.method if first is not None else str(self.method)


# --------------------------------------------------------------------------- regression
class ConformalRegressor(_ConformalMixin, RegressorMixin, BaseEstimator):
    """Prediction intervals with a guarantee on miscoverage.

    Parameters
    ----------
    estimator : regressor, pair of regressors, or None
        The point model (default ``LinearRegression``); for ``conformity_score="cqr"`` a
        quantile regressor (its ``quantile`` or, for ``loss="quantile"`` models, ``alpha``
        parameter is set to ``alpha/2`` and ``1-alpha/2``; default ``QuantileRegressor``) or a
        pair (lower, upper).
    method : {"bq", "crc", "rcps", "split"} or Rule
        ``bq``: Pr(coverage >= 1 - alpha | calibration data) >= beta (Snell & Griffiths);
        ``crc``/``split``: marginal coverage >= 1 - alpha; ``rcps``: confidence beta.
    alpha : float in (0, 1) or sequence of them
        Miscoverage level. A sequence gives one interval per level: ``predict_interval``
        returns (n, 2, n_alpha) (MAPIE's shape), ``lambda_`` gains a last axis, and
        ``calibration_`` / ``risk_posterior_`` become lists in the order of ``alphas_``.
    beta : float in (0, 1)
    bound : float
        B for the miscoverage loss (1 is exact; larger is conservative).
    conformity_score : {"absolute", "normalized", "cqr"} or RegressionScore
        ``absolute``: y_hat +- lambda. ``normalized``: y_hat +- lambda * sigma(x), sigma a
        difficulty estimate (``NormalizedResidual(difficulty=...)``: kNN on |residual| by
        default, any regressor, or the kNN spread of the targets). ``cqr``:
        [q_lo - lambda, q_hi + lambda].
    prefit : bool
        The estimator is already fitted; all of ``fit``'s data is used for calibration.
    calibration_size : float or int
        Share (or number) of ``fit``'s data held out for calibration when not prefit.
        ``0``: the model trains on all of ``fit``'s rows and :meth:`calibrate` (X_cal, y_cal)
        must follow — MAPIE's fit -> conformalize.
    concentration : {"hb", "hoeffding"}
        RCPS bound.
    n_draws : int
        Monte Carlo draws when the posterior has no closed form.
    random_state : int, RandomState, Generator or None
        Seed of the train/calibration split and of the Monte Carlo draws.
    cv : None, int or "jackknife+"
        ``None``: split conformal (a held-out calibration set). An int K >= 2: **CV+** — K
        models, each fitted without one fold, every point calibrates out of fold, so no data is
        set aside; ``"jackknife+"``: leave-one-out (n models). Absolute residual score only;
        guarantee 1 - 2 alpha (jackknife+; CV+ slightly less, see
        :mod:`~icml25.conformal.cross`), near 1 - alpha in practice. ``method`` sets the rank
        (``split``/``crc``: the published CV+; ``bq``: a more conservative rank, no theorem).

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> X, y = make_regression(n_samples=600, n_features=4, noise=10, random_state=0)
    >>> reg = ConformalRegressor(alpha=0.1, method="bq", random_state=0).fit(X, y)
    >>> reg.predict_interval(X[:2]).shape
    (2, 2)
    >>> ada = ConformalRegressor(conformity_score="normalized", random_state=0).fit(X, y)
    >>> bool((ada.predict_interval(X[:50]) @ [-1, 1]).std() > 0)   # widths vary with x
    True
    >>> cvp = ConformalRegressor(method="split", cv=5, random_state=0).fit(X, y)   # CV+
    >>> cvp.predict_interval(X[:2]).shape
    (2, 2)
    """

    def __init__(self, estimator=None, *, method="bq", alpha=0.1, beta=0.95, bound=1.0,
                 conformity_score="absolute", prefit=False, calibration_size=0.5,
                 concentration="hb",
                 n_draws=10_000, random_state=None, cv=None):
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
        self.cv = cv

    def fit(self, X, y, groups=None):
        """Fit the regressor (unless prefit) and calibrate lambda on held-out data.

        ``groups``: optional category per row for Mondrian (per-group) calibration.
        With ``cv`` set, fit the fold models and calibrate on out-of-fold residuals (CV+).
        """
        specs = self._check_specs()
        score = get_regression_score(self.conformity_score)
        if self.multi_alpha_ and getattr(score, "name", "") == "cqr":
            raise ValueError("conformity_score='cqr' fits its quantile models at one alpha; "
                             "pass a single alpha (or one ConformalRegressor per level)")
        X, y = validate_data(self, X, y, y_numeric=True)
        if groups is not None:
            groups = _check_groups(groups, X.shape[0], "fit")
        for attr in ("lambda_", "calibration_", "risk_posterior_"):
            self.__dict__.pop(attr, None)
        if self.cv is not None:
            return self._fit_cv(X, y, specs, score, groups)
        self.cv_rank_ = None
        x_tr, y_tr, x_cal, y_cal, g_cal = self._split(X, y, groups)
        self.conformity_score_ = score.fit(self.estimator, x_tr, y_tr, alpha=specs[0].alpha,
                                           prefit=self.prefit)
        models = getattr(score, "models_", None) or [getattr(score, "model_", None)]
        self.estimators_ = [m for m in models if m is not None]
        if x_cal is None:
            if groups is not None:
                raise ValueError("with calibration_size=0 pass groups= to calibrate(), not fit()")
            return self
        return self._calibrate(x_cal, y_cal, specs, g_cal)

    def _fit_cv(self, X, y, specs, score, groups):
        from sklearn.linear_model import LinearRegression
        from sklearn.model_selection import KFold

        from icml25.conformal.cross import cv_plus_rank, resolve_folds
        from icml25.conformal.scores import AbsoluteResidual

        if not isinstance(score, AbsoluteResidual):
            raise ValueError("cv (CV+ / jackknife+) supports conformity_score='absolute' only")
        if self.prefit:
            raise ValueError("cv refits the model on folds; it cannot be combined with "
                             "prefit=True")
        if groups is not None:
            raise ValueError("cv (CV+ / jackknife+) does not support groups=")
        n = X.shape[0]
        k = resolve_folds(self.cv, n)
        est = LinearRegression() if self.estimator is None else self.estimator
        seed = specs[0].random_state
        folds = KFold(k, shuffle=k < n, random_state=seed % 2**32 if k < n else None)
        fold_of = np.empty(n, dtype=np.intp)
        models, resid = [], np.empty(n)
        for j, (tr, te) in enumerate(folds.split(X)):
            model = clone(est).fit(X[tr], y[tr])
            models.append(model)
            fold_of[te] = j
            resid[te] = np.abs(y[te] - np.asarray(model.predict(X[te]), dtype=float).ravel())
        self.fold_models_, self.fold_of_, self.cv_residuals_ = models, fold_of, resid
        ranks = [cv_plus_rank(spec, n) for spec in specs]
        self.cv_rank_ = np.array(ranks) if self.multi_alpha_ else ranks[0]
        self.conformity_score_ = score.fit(est, X, y, alpha=specs[0].alpha, prefit=False)
        self.estimators_ = [*models, self.conformity_score_.model_]
        # lambda_ / calibration_: the rule on the out-of-fold residuals (the split-style
        # radius, for reference; CV+ intervals use the rank cv_rank_).
        self._calibrate_levels(resid, specs)
        return self

    def calibrate(self, X, y, groups=None):
        """Calibrate lambda on held-out data, keeping the fitted model(s).

        The second step of fit -> calibrate -> predict (MAPIE's fit -> conformalize): after
        ``fit`` with ``calibration_size=0`` (the model trained on all of fit's data), or to
        re-calibrate any fitted estimator on new data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Calibration features, not used to train the model.
        y : array-like of shape (n_samples,)
            Calibration targets.
        groups : array-like of shape (n_samples,), default=None
            Category per row for Mondrian (per-group) calibration.

        Returns
        -------
        self : ConformalRegressor

        Raises
        ------
        ValueError
            For a CV+ / jackknife+ regressor (it calibrates out of fold).
        """
        check_is_fitted(self, "conformity_score_")
        if getattr(self, "cv_rank_", None) is not None:
            raise ValueError("a CV+ / jackknife+ regressor calibrates out of fold; refit it")
        specs = self._check_specs()
        X, y = validate_data(self, X, y, y_numeric=True, reset=False)
        if groups is not None:
            groups = _check_groups(groups, X.shape[0], "calibrate")
        return self._calibrate(X, y, specs, groups)

    def _calibrate(self, X, y, specs, groups=None):
        self._calibrate_levels(self.conformity_score_.score(X, y), specs, groups)
        return self

    def predict(self, X):
        """Point prediction (the model's, or the CQR band's midpoint)."""
        check_is_fitted(self, "conformity_score_")
        X = validate_data(self, X, reset=False)
        return self.conformity_score_.predict(X)

    def predict_interval(self, X, groups=None):
        """Prediction intervals; +-inf where the request was infeasible.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        groups : array-like of shape (n_samples,), default=None
            Each row's group, for an estimator calibrated per group.

        Returns
        -------
        intervals : ndarray of shape (n_samples, 2), or (n_samples, 2, n_alpha) when
            ``alpha`` is a sequence (one [lower, upper] per level, in the order of ``alphas_``).
        """
        check_is_fitted(self, "conformity_score_")
        X = validate_data(self, X, reset=False)
        if getattr(self, "cv_rank_", None) is not None:
            from icml25.conformal.cross import cv_plus_interval

            if groups is not None:
                raise ValueError("groups were passed to predict but not to fit")
            fold_pred = np.column_stack([np.asarray(m.predict(X), dtype=float).ravel()
                                         for m in self.fold_models_])
            ranks = np.atleast_1d(self.cv_rank_)
            out = np.stack([np.column_stack(cv_plus_interval(
                fold_pred, self.fold_of_, self.cv_residuals_, int(r))) for r in ranks], axis=-1)
            return out if self.multi_alpha_ else out[:, :, 0]
        lam = np.asarray(self._row_lambdas(groups, X.shape[0]), dtype=float)
        if not self.multi_alpha_:
            return self._interval_at(X, lam)
        return np.stack([self._interval_at(X, lam[..., j]) for j in range(lam.shape[-1])],
                        axis=-1)

    def _interval_at(self, X, lam) -> np.ndarray:
        lam = lam.item() if np.ndim(lam) == 0 else lam
        iv = self.conformity_score_.interval(X, lam)
        inf = ~np.isfinite(np.broadcast_to(lam, (X.shape[0],)))
        iv[inf] = (-np.inf, np.inf)
        return iv


# --------------------------------------------------------------------------- classification
class ConformalClassifier(_ConformalMixin, ClassifierMixin, BaseEstimator):
    """Prediction sets with a guarantee on miscoverage.

    The set is {k : s(x, k) <= lambda} for the ``conformity_score`` s:

    * ``"lac"``: 1 - p_k(x);
    * ``"aps"``: mass of the labels ranked strictly above k, plus u p_y(x) (u ~ U(0, 1),
      seeded by ``random_state``) on the calibration points only; the set is the most likely
      labels up to and including the one whose cumulative mass crosses lambda ("include the
      last label", MAPIE's default): never empty, coverage >= 1 - alpha;
    * ``"aps_randomized"``: APS + u p_k(x) at prediction too (exact coverage 1 - alpha on
      average; sets can be empty);
    * ``"raps"`` / ``"raps_randomized"``: APS + lam (rank - k_reg)^+ (``RAPS(k_reg=...,
      lam=...)``);
    * ``"top_k"``: the rank of k (every set has the same size); ``"top_k_randomized"``;
    * or any :class:`~icml25.conformal.scores.ClassificationScore` instance.

    ``alpha`` may be a sequence: ``predict_set`` then returns (n, n_classes, n_alpha).
    ``calibration_size=0``: fit trains on everything, then :meth:`calibrate` (X_cal, y_cal).

    ``class_conditional=True`` calibrates one lambda per class (coverage holds for every class,
    not only on average over classes); ``fit(X, y, groups=...)`` per group of any taxonomy.
    The default estimator is ``LogisticRegression``. ``predict`` returns the model's label,
    ``predict_set`` the sets.

    Parameters
    ----------
    estimator : classifier with ``predict_proba`` or None, default=None
        The model; None: ``LogisticRegression``.
    conformity_score : str or ClassificationScore, default="lac"
        One of the scores above or an instance.
    class_conditional : bool, default=False
        One threshold per class (per-class coverage).
    method, alpha, beta, bound, prefit, calibration_size, concentration, n_draws, random_state
        As in :class:`ConformalRegressor` (defaults ``"bq"``, 0.1, 0.95, 1.0, False, 0.5,
        ``"hb"``, 10,000, None).

    Attributes
    ----------
    lambda_ : float or ndarray
        The calibrated threshold (one per class or group when grouped).
    risk_posterior_ : RiskPosterior or dict
        The posterior of the miscoverage at ``lambda_``.
    classes_ : ndarray
        The labels seen in ``fit``.

    Raises
    ------
    ValueError
        In ``fit``, for an unknown ``method`` or ``conformity_score`` (the message lists the
        registered ones) or ``alpha``/``beta`` outside (0, 1); in ``predict_set``, for a group
        not seen at calibration.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = ConformalClassifier(alpha=0.1, method="crc", random_state=0).fit(X, y)
    >>> clf.predict_set(X[:3]).shape
    (3, 3)
    >>> aps = ConformalClassifier(conformity_score="aps", method="crc", random_state=0).fit(X, y)
    >>> bool(aps.predict_set(X).any(axis=1).all())                # never an empty set
    True
    """

    def __init__(self, estimator=None, *, method="bq", alpha=0.1, beta=0.95, bound=1.0,
                 conformity_score="lac", class_conditional=False, prefit=False,
                 calibration_size=0.5, concentration="hb", n_draws=10_000, random_state=None):
        self.estimator = estimator
        self.method = method
        self.alpha = alpha
        self.beta = beta
        self.bound = bound
        self.conformity_score = conformity_score
        self.class_conditional = class_conditional
        self.prefit = prefit
        self.calibration_size = calibration_size
        self.concentration = concentration
        self.n_draws = n_draws
        self.random_state = random_state

    def fit(self, X, y, groups=None):
        """Fit the classifier (unless prefit) and calibrate lambda on held-out data.

        ``groups``: optional category per row for Mondrian (per-group) calibration.
        """
        from sklearn.linear_model import LogisticRegression
        from sklearn.utils.multiclass import check_classification_targets

        specs = self._check_specs()
        score = get_classification_score(self.conformity_score)
        self._check_conditional(groups)
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        if groups is not None:
            groups = _check_groups(groups, X.shape[0], "fit")
        est = LogisticRegression() if self.estimator is None else self.estimator
        x_tr, y_tr, x_cal, y_cal, g_cal = self._split(X, y, groups)
        if self.prefit:
            check_is_fitted(est)
            self.estimator_ = est
        else:
            if np.unique(y_tr).size < 2:
                raise ValueError("the training part holds a single class; pass more data")
            self.estimator_ = clone(est).fit(x_tr, y_tr)
        self.classes_ = np.asarray(self.estimator_.classes_)
        self.conformity_score_ = score
        for attr in ("lambda_", "calibration_", "risk_posterior_"):
            self.__dict__.pop(attr, None)
        if x_cal is None:
            if groups is not None:
                raise ValueError("with calibration_size=0 pass groups= to calibrate(), not fit()")
            self.seed_ = specs[0].random_state
            return self
        return self._calibrate(x_cal, y_cal, specs, g_cal)

    def _check_conditional(self, groups) -> None:
        if self.class_conditional not in (True, False):
            raise ValueError(f"class_conditional must be True or False, got "
                             f"{self.class_conditional!r}")
        if self.class_conditional and groups is not None:
            raise ValueError("pass either class_conditional=True or groups=, not both")

    def calibrate(self, X, y, groups=None):
        """Calibrate lambda on held-out data, keeping the fitted classifier.

        The second step of fit -> calibrate -> predict (MAPIE's fit -> conformalize): after
        ``fit`` with ``calibration_size=0``, or to re-calibrate on new data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Calibration features, not used to train the model.
        y : array-like of shape (n_samples,)
            Calibration labels.
        groups : array-like of shape (n_samples,), default=None
            Category per row for Mondrian (per-group) calibration.

        Returns
        -------
        self : ConformalClassifier
        """
        check_is_fitted(self, "estimator_")
        specs = self._check_specs()
        self._check_conditional(groups)
        X, y = validate_data(self, X, y, reset=False)
        if groups is not None:
            groups = _check_groups(groups, X.shape[0], "calibrate")
        return self._calibrate(X, y, specs, groups)

    def _calibrate(self, X, y, specs, groups=None):
        self.seed_ = specs[0].random_state
        score = self.conformity_score_
        all_scores = self._label_scores(X, stream=1, stage="calibrate")
        pos = np.clip(np.searchsorted(self.classes_, y), 0, self.classes_.size - 1)
        known = self.classes_[pos] == y
        # A label the model never saw can only be covered by the full set.
        sentinel = score.max_score(self.classes_.size) + 1.0
        scores = np.where(known, all_scores[np.arange(len(y)), pos], sentinel)
        if self.class_conditional:
            # Points of a class the model never saw can never be covered; they say nothing
            # about the classes it can predict.
            self._calibrate_levels(scores[known], specs, self.classes_[pos[known]],
                                   values=self.classes_)
        else:
            self._calibrate_levels(scores, specs, groups)
        return self

    def _label_scores(self, X, stream: int, stage: str = "predict") -> np.ndarray:
        proba = np.asarray(self.estimator_.predict_proba(X), dtype=float)
        score = self.conformity_score_
        u = (np.random.default_rng([self.seed_, stream]).random(proba.shape[0])
             if score.needs_u(stage) else None)
        return np.asarray(score.label_scores(proba, u), dtype=float)

    def predict(self, X):
        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False)
        return self.estimator_.predict(X)

    def predict_proba(self, X):
        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False)
        return self.estimator_.predict_proba(X)

    def predict_set(self, X, groups=None):
        """Prediction sets as a boolean membership matrix, columns in ``classes_`` order.

        Randomised scores draw their uniforms from ``random_state`` (the same X gives the same
        sets on every call).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        groups : array-like of shape (n_samples,), default=None
            Each row's group, for an estimator calibrated per group.

        Returns
        -------
        sets : ndarray of bool, shape (n_samples, n_classes), or
            (n_samples, n_classes, n_alpha) when ``alpha`` is a sequence (MAPIE's shape).
        """
        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False)
        lam = np.asarray(self._row_lambdas(groups, X.shape[0]), dtype=float)
        s = self._label_scores(X, stream=2, stage="predict")
        if not self.multi_alpha_:
            return self._set_at(s, lam)
        return np.stack([self._set_at(s, lam[..., j]) for j in range(lam.shape[-1])], axis=-1)

    def _set_at(self, s: np.ndarray, lam: np.ndarray) -> np.ndarray:
        lam = lam[None, :] if self.class_conditional else lam.reshape(-1, 1)
        return self.conformity_score_.in_set(s, lam) | ~np.isfinite(lam)


# --------------------------------------------------------------------------- risk control
def false_negative_rate(Y, scores, lam) -> np.ndarray:
    """Per-example share of true labels missed by the set {k : score_k >= lam} (0 if no labels).

    Parameters
    ----------
    Y : array-like of shape (n, K)
        Multilabel indicator of the true labels.
    scores : ndarray of shape (n, K)
        Per-class scores.
    lam : float
        Threshold: the set holds the classes with score >= lam.

    Returns
    -------
    ndarray of shape (n,)
        False-negative rate per example, in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import false_negative_rate
    >>> Y = np.array([[1, 0, 1], [0, 1, 0]])
    >>> scores = np.array([[0.9, 0.1, 0.3], [0.2, 0.8, 0.1]])
    >>> false_negative_rate(Y, scores, 0.5)
    array([0.5, 0. ])
    """
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
    method, alpha, beta, bound, prefit, calibration_size, concentration, n_draws, random_state
        As in :class:`ConformalRegressor`.

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
            x_tr, y_tr, x_cal, y_cal, _ = self._split(X, Y)
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
