"""CV+ and jackknife+: the published construction, and coverage over 200 random data sets."""

import math

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from icml25.conformal import ConformalRegressor, InfeasibleRiskWarning
from icml25.conformal.cross import cv_plus_interval, cv_plus_rank
from icml25.conformal.rules import RuleSpec

ALPHA = 0.1


def _data(rng, n):
    X = rng.normal(size=(n, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.standard_t(5, size=n)
    return X, y


def test_split_rank_is_the_published_cv_plus_rank():
    for n in (9, 19, 50, 99, 200):
        spec = RuleSpec.make("split", ALPHA)
        assert cv_plus_rank(spec, n) == math.ceil((1 - ALPHA) * (n + 1)) or (
            math.ceil((1 - ALPHA) * (n + 1)) > n and cv_plus_rank(spec, n) == n + 1)


def test_jackknife_plus_matches_its_definition():
    rng = np.random.default_rng(0)
    X, y = _data(rng, 25)
    x_new = rng.normal(size=(4, 3))
    reg = ConformalRegressor(method="split", alpha=0.2, cv="jackknife+").fit(X, y)
    lo_ref, hi_ref = [], []
    for x in x_new:
        lows, highs = [], []
        for i in range(25):
            keep = np.arange(25) != i
            m = LinearRegression().fit(X[keep], y[keep])
            r = abs(y[i] - m.predict(X[i:i + 1])[0])
            mu = m.predict(x[None])[0]
            lows.append(mu - r)
            highs.append(mu + r)
        k = math.floor(0.2 * 26)  # the floor(alpha (n+1))-th smallest / ceil((1-alpha)(n+1))-th
        lo_ref.append(np.sort(lows)[k - 1])
        hi_ref.append(np.sort(highs)[math.ceil(0.8 * 26) - 1])
    iv = reg.predict_interval(x_new)
    np.testing.assert_allclose(iv[:, 0], lo_ref, rtol=1e-10)
    np.testing.assert_allclose(iv[:, 1], hi_ref, rtol=1e-10)


def test_too_few_points_give_infinite_intervals():
    lo, hi = cv_plus_interval(np.zeros((2, 2)), np.array([0, 1, 0]), np.ones(3), rank=4)
    assert np.isinf(lo).all() and np.isinf(hi).all()
    rng = np.random.default_rng(1)
    X, y = _data(rng, 8)  # ceil(0.9 * 9) = 9 > 8
    with pytest.warns(InfeasibleRiskWarning, match="at least n=9"):
        reg = ConformalRegressor(method="split", cv="jackknife+").fit(X, y)
    iv = reg.predict_interval(X[:2])
    assert np.isinf(iv).all()


@pytest.mark.parametrize("cv", [5, "jackknife+"])
def test_coverage_over_200_random_data_sets(cv):
    rng = np.random.default_rng(42)
    n, n_test, splits = 40, 200, 200
    bq_rank = cv_plus_rank(RuleSpec.make("bq", ALPHA), n)
    cover = {"split": [], "bq": []}
    for _ in range(splits):
        X, y = _data(rng, n + n_test)
        reg = ConformalRegressor(method="split", alpha=ALPHA, cv=cv, random_state=0)
        iv = reg.fit(X[:n], y[:n]).predict_interval(X[n:])
        cover["split"].append(np.mean((iv[:, 0] <= y[n:]) & (y[n:] <= iv[:, 1])))
        # the same fold models with the bq rule's rank
        pred = np.column_stack([m.predict(X[n:]) for m in reg.fold_models_])
        lo, hi = cv_plus_interval(pred, reg.fold_of_, reg.cv_residuals_, bq_rank)
        cover["bq"].append(np.mean((lo <= y[n:]) & (y[n:] <= hi)))
    split = np.array(cover["split"])
    se = split.std(ddof=1) / math.sqrt(splits)
    # Theorem: >= 1 - 2 alpha; in practice near 1 - alpha: within 3 SE below it.
    assert split.mean() >= 1 - 2 * ALPHA
    assert split.mean() >= 1 - ALPHA - 3 * se, (split.mean(), se)
    assert split.mean() <= 1 - ALPHA + 0.04, split.mean()  # not trivially wide
    # The bq rank is more conservative: fewer data sets with coverage below 1 - alpha.
    bq = np.array(cover["bq"])
    assert bq_rank > math.ceil((1 - ALPHA) * (n + 1))
    assert bq.mean() > split.mean()
    assert np.mean(bq < 1 - ALPHA) < np.mean(split < 1 - ALPHA)


def test_cv_errors_are_clear():
    rng = np.random.default_rng(2)
    X, y = _data(rng, 30)
    with pytest.raises(ValueError, match="cv must be"):
        ConformalRegressor(cv=1).fit(X, y)
    with pytest.raises(ValueError, match="cv must be"):
        ConformalRegressor(cv="loo").fit(X, y)
    with pytest.raises(ValueError, match="absolute"):
        ConformalRegressor(cv=5, conformity_score="normalized").fit(X, y)
    with pytest.raises(ValueError, match="prefit"):
        ConformalRegressor(LinearRegression().fit(X, y), cv=5, prefit=True).fit(X, y)
    reg = ConformalRegressor(cv=5, method="split").fit(X, y)
    with pytest.raises(ValueError, match="refit"):
        reg.calibrate(X, y)
