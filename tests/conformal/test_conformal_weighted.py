"""Weighted conformal prediction under covariate shift (Tibshirani et al. 2019)."""

import math

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression

from icml25.conformal import calibrate_scores
from icml25.conformal.weighted import (
    DomainClassifierRatio,
    WeightedConformalRegressor,
    effective_sample_size,
    weighted_thresholds,
)


def reference_weighted_quantile(s, w, wt, alpha):
    """By the definition: the 1 - alpha quantile of sum p_i delta_{s_i} + p_{n+1} delta_inf."""
    vals = np.r_[s, np.inf]
    p = np.r_[w, wt] / (w.sum() + wt)
    order = np.argsort(vals, kind="stable")
    cum = np.cumsum(p[order])
    return vals[order][np.searchsorted(cum, 1 - alpha - 1e-12)]


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3])
def test_equal_weights_give_split_conformal_and_bq(alpha):
    rng = np.random.default_rng(0)
    s = np.round(rng.exponential(size=200), 1)  # ties on purpose
    for method in ("split", "bq"):
        ref = calibrate_scores(s, alpha, 0.95, method, warn=False).lambda_
        got = weighted_thresholds(s, np.full(200, 2.5), np.array([2.5]), alpha,
                                  method=method)[0]
        assert got == ref


def test_weighted_quantile_matches_its_definition():
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(5, 60))
        s, w = rng.normal(size=n), rng.exponential(size=n)
        wt = rng.exponential(size=4) * 3
        alpha = float(rng.uniform(0.05, 0.5))
        got = weighted_thresholds(s, w, wt, alpha)
        ref = [reference_weighted_quantile(s, w, t, alpha) for t in wt]
        np.testing.assert_array_equal(got, ref)


def test_bad_weights_and_methods_are_refused():
    s = np.arange(10.0)
    with pytest.raises(ValueError, match="non-negative"):
        weighted_thresholds(s, -np.ones(10), np.ones(1), 0.1)
    with pytest.raises(ValueError, match="one weight per row"):
        weighted_thresholds(s, np.ones(9), np.ones(1), 0.1)
    with pytest.raises(ValueError, match="method"):
        weighted_thresholds(s, np.ones(10), np.ones(1), 0.1, method="cqr")
    with pytest.raises(ValueError, match="carry no information"):
        weighted_thresholds(s, np.zeros(10), np.ones(1), 0.1)
    assert effective_sample_size(np.ones(7)) == 7.0


def _diabetes_shift(reps: int):
    """The benchmark's shift: test patients drawn with probability proportional to a bump
    around +0.5 sd of (bmi + s5) / sqrt(2), where the linear model errs most."""
    X, y = load_diabetes(return_X_y=True)
    mu, sd = X.mean(0), X.std(0)

    def ratio(A):
        z = ((A[:, 2] - mu[2]) / sd[2] + (A[:, 8] - mu[8]) / sd[8]) / math.sqrt(2)
        return np.exp(-(z - 0.5) ** 2 / (2 * 0.3 ** 2))

    for r in range(reps):
        rng = np.random.default_rng(r)
        p = rng.permutation(y.size)
        tr, cal, pool = p[:200], p[200:321], p[321:]
        prob = ratio(X[pool]) / ratio(X[pool]).sum()
        te = rng.choice(pool, size=pool.size, replace=True, p=prob)
        yield X, y, tr, cal, te, ratio


def test_weighting_restores_coverage_on_shifted_diabetes():
    """Unweighted split conformal loses >= 0.05 of coverage under the shift; weighting with the
    known likelihood ratio brings it back within 0.02 of 0.9 (150 random splits)."""
    unweighted, weighted = [], []
    for X, y, tr, cal, te, ratio in _diabetes_shift(150):
        model = LinearRegression().fit(X[tr], y[tr])
        s = np.abs(y[cal] - model.predict(X[cal]))
        r_te = np.abs(y[te] - model.predict(X[te]))
        q = calibrate_scores(s, 0.1, method="split", warn=False).lambda_
        unweighted.append(np.mean(r_te <= q))
        lam = weighted_thresholds(s, ratio(X[cal]), ratio(X[te]), 0.1)
        weighted.append(np.mean(r_te <= lam))
    se = np.std(weighted, ddof=1) / math.sqrt(len(weighted))
    assert np.mean(unweighted) <= 0.85
    assert abs(np.mean(weighted) - 0.9) <= 0.02 and se < 0.006


def test_estimator_with_known_ratio_and_with_a_domain_classifier():
    X, y, tr, cal, te, ratio = next(_diabetes_shift(1))
    model = LinearRegression().fit(X[tr], y[tr])
    known = WeightedConformalRegressor(model, likelihood_ratio=ratio, prefit=True)
    known.fit(X[cal], y[cal])
    lam = weighted_thresholds(np.abs(y[cal] - model.predict(X[cal])), ratio(X[cal]),
                              ratio(X[te]), 0.1)
    iv = known.predict_interval(X[te])
    np.testing.assert_allclose(iv[:, 1] - model.predict(X[te]), lam)
    assert known.effective_size_ < 0.5 * cal.size  # the shift is strong
    with pytest.raises(ValueError, match="X_test"):
        WeightedConformalRegressor(model, prefit=True).fit(X[cal], y[cal])
    est = WeightedConformalRegressor(model, prefit=True).fit(X[cal], y[cal], X_test=X[te])
    assert isinstance(est.ratio_, DomainClassifierRatio)
    w = est.calibration_weights_
    # the estimated ratio ranks calibration points like the true one
    assert np.corrcoef(np.argsort(np.argsort(w)), np.argsort(np.argsort(ratio(X[cal]))))[
        0, 1] > 0.5
    # fit -> calibrate, with the model trained on all of fit's rows
    two = WeightedConformalRegressor(likelihood_ratio=ratio, calibration_size=0)
    two.fit(X[tr], y[tr]).calibrate(X[cal], y[cal])
    np.testing.assert_allclose(two.predict_interval(X[te]), iv)
