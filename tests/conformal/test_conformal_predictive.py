"""Conformal predictive distributions, percentiles and p-values; the metrics module."""

import math

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression

from icml25.conformal import ConformalClassifier, ConformalPredictiveSystem, ConformalRegressor
from icml25.conformal import metrics as M


@pytest.fixture(scope="module")
def hetero():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 4, size=(6_000, 1))
    y = 2 * X[:, 0] + rng.normal(size=6_000) * (0.2 + X[:, 0])
    model = LinearRegression().fit(X[:1_000], y[:1_000])
    return model, X[1_000:], y[1_000:]


def test_pit_values_at_the_truth_are_uniform(hetero):
    """Q(y_true, tau) ~ U(0, 1) over many calibration/test splits (the CPS property)."""
    model, X, y = hetero
    pits = []
    for r in range(40):
        p = np.random.default_rng(r).permutation(y.size)
        cal, te = p[:99], p[99:299]
        cps = ConformalPredictiveSystem(model, prefit=True, random_state=r).fit(X[cal], y[cal])
        pits.append(cps.predict_cdf(X[te], y[te]))
    pits = np.concatenate(pits)
    for a in (0.05, 0.25, 0.5, 0.9):  # 8,000 values; splits share nothing but the model
        assert abs(np.mean(pits <= a) - a) < 0.03


@pytest.mark.parametrize("normalized", [False, True])
def test_percentiles_give_valid_intervals_and_pvalues_are_valid(hetero, normalized):
    model, X, y = hetero
    est = None if normalized else model
    cps = ConformalPredictiveSystem(est, normalized=normalized, prefit=not normalized,
                                    random_state=0)
    if normalized:
        cps.fit(np.r_[X[:1_000]], y[:1_000])
    else:
        cps.fit(X[:500], y[:500])
    te = slice(1_000, 5_000)
    pct = cps.predict_percentiles(X[te], [5, 50, 95])
    assert pct.shape == (4_000, 3) and np.all(pct[:, 0] <= pct[:, 1])
    cover = np.mean((pct[:, 0] <= y[te]) & (y[te] <= pct[:, 2]))
    assert abs(cover - 0.9) < 0.03
    if normalized:  # wider where x (the noise) is larger
        width = pct[:, 2] - pct[:, 0]
        assert np.corrcoef(width, X[te][:, 0])[0, 1] > 0.8
    # p-values of a threshold: valid under their null
    t = 2 * X[te][:, 0]  # the conditional median-ish
    for alt, null in (("greater", y[te] <= t), ("less", y[te] >= t)):
        p = cps.predict_pvalue(X[te], t, alternative=alt)
        assert np.all((p >= 0) & (p <= 1))
        # among rows where the null holds, p <= a happens at most a of the time (+ noise)
        assert np.mean(p[null] <= 0.1) <= 0.1 + 3 * math.sqrt(0.09 / null.sum()) + 0.02
    two = cps.predict_pvalue(X[te], t, alternative="two-sided")
    lo, hi = (cps.predict_pvalue(X[te], t, alternative=a) for a in ("less", "greater"))
    np.testing.assert_allclose(two, np.minimum(1, 2 * np.minimum(lo, hi)))
    assert np.all(lo + hi >= 1)  # unsmoothed: conservative on both sides
    with pytest.raises(ValueError, match="alternative"):
        cps.predict_pvalue(X[te], t, alternative="up")


def test_cps_agrees_with_split_conformal_on_signed_residuals():
    X, y = load_diabetes(return_X_y=True)
    model = LinearRegression().fit(X[:200], y[:200])
    cps = ConformalPredictiveSystem(model, prefit=True).fit(X[200:320], y[200:320])
    cpd = cps.predict_cpds(X[320:])
    assert cpd.shape == (122, 120) and np.all(np.diff(cpd, axis=1) >= 0)
    n = 120
    pct = cps.predict_percentiles(X[320:], [5, 95])
    r = np.sort(y[200:320] - model.predict(X[200:320]))
    f = model.predict(X[320:])
    np.testing.assert_allclose(pct[:, 1], f + r[math.ceil(0.95 * (n + 1)) - 1])
    np.testing.assert_allclose(pct[:, 0], f + r[math.floor(0.05 * (n + 1)) - 1])
    assert np.all(np.isinf(cps.predict_percentiles(X[320:], [100.0])))
    q = cps.predict_cdf(X[320:], (cpd[:, 59] + cpd[:, 60]) / 2, smoothing=False)
    np.testing.assert_allclose(q, 61 / 121)  # 60 support points below, then tau = 1
    with pytest.raises(ValueError, match="percentiles"):
        cps.predict_percentiles(X[320:], [120])


def test_regression_metrics_match_hand_counts_and_levels():
    X, y = load_diabetes(return_X_y=True)
    reg = ConformalRegressor(method="split", alpha=[0.1, 0.3], random_state=0).fit(
        X[:300], y[:300])
    iv = reg.predict_interval(X[300:])
    cov = M.regression_coverage_score(y[300:], iv)
    assert cov.shape == (2,) and cov[0] >= cov[1]
    assert cov[0] == np.mean((iv[:, 0, 0] <= y[300:]) & (y[300:] <= iv[:, 1, 0]))
    assert M.regression_coverage_score(y[300:], iv[:, :, 1]) == cov[1]
    width = M.regression_mean_width_score(iv)
    np.testing.assert_allclose(width, (iv[:, 1] - iv[:, 0]).mean(0))
    ssc = M.regression_ssc(y[300:], iv[:, :, 0], num_bins=2)
    assert ssc.shape == (2,) and M.regression_ssc_score(y[300:], iv[:, :, 0], 2) == ssc.min()
    assert M.regression_ssc(y[300:], iv, num_bins=4).shape == (2, 4)
    with pytest.raises(ValueError, match="shape"):
        M.regression_coverage_score(y[300:], iv[:, 0, 0])


def test_classification_metrics_by_group_and_by_set_size():
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    X, y = load_iris(return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    perm = np.random.default_rng(0).permutation(y.size)
    X, labels = X[perm], labels[perm]
    clf = ConformalClassifier(LogisticRegression(max_iter=500), method="split",
                              conformity_score="aps", random_state=0).fit(X[:100], labels[:100])
    sets = clf.predict_set(X[100:])
    with pytest.raises(ValueError, match="classes="):
        M.classification_coverage_score(labels[100:], sets)
    cov = M.classification_coverage_score(labels[100:], sets, classes=clf.classes_)
    hit = sets[np.arange(50), np.searchsorted(clf.classes_, labels[100:])]
    assert cov == hit.mean()
    assert M.classification_mean_width_score(sets) == sets.sum(1).mean()
    ssc = M.classification_ssc(labels[100:], sets, classes=clf.classes_)
    size = sets.sum(1)
    for k in range(4):
        if (size == k).any():
            assert ssc[k] == hit[size == k].mean()
        else:
            assert np.isnan(ssc[k])
    assert M.classification_ssc_score(labels[100:], sets, classes=clf.classes_) == np.nanmin(ssc)
    by = M.coverage_by_group(labels[100:], sets, groups=labels[100:], classes=clf.classes_)
    assert set(by) == set(clf.classes_) and sum(v["n"] for v in by.values()) == 50
    assert by["setosa"]["coverage"] == hit[labels[100:] == "setosa"].mean()
    iv = np.c_[np.zeros(4), np.ones(4)]
    by = M.coverage_by_group(np.array([0.5, 2, 0.2, 3]), iv, groups=[1, 1, 2, 2])
    assert by == {1: {"n": 2, "coverage": 0.5, "size": 1.0},
                  2: {"n": 2, "coverage": 0.5, "size": 1.0}}
