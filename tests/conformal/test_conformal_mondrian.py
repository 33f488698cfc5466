"""Mondrian (per-group) and class-conditional calibration: coverage within every group.

Checked over 200 random calibration/test splits of a fixed pool around one fitted model; the
tolerances are 3 standard errors of the mean (estimated from the splits) or the issue's 0.02.
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LinearRegression, LogisticRegression

from icml25.conformal import ConformalClassifier, ConformalRegressor, InfeasibleRiskWarning

ALPHA = 0.1
REPS = 200


def _splits(pool, n_cal, reps, seed):
    rng = np.random.default_rng(seed)
    for _ in range(reps):
        p = rng.permutation(pool)
        yield p[:n_cal], p[n_cal:]


def se(v, axis=0):
    v = np.asarray(v)
    return v.std(axis=axis, ddof=1) / np.sqrt(v.shape[axis])


@pytest.fixture(scope="module")
def imbalanced():
    X, y = make_classification(n_samples=8_000, n_features=6, n_informative=3, n_redundant=0,
                               n_classes=3, n_clusters_per_class=1, weights=[0.75, 0.2, 0.05],
                               class_sep=0.8, flip_y=0.0, random_state=3)
    model = LogisticRegression(max_iter=1_000).fit(X[:3_000], y[:3_000])
    return model, X, y, np.arange(3_000, 8_000)


def per_class_coverage(model, X, y, pool, **kw):
    cov = []
    for r, (cal, te) in enumerate(_splits(pool, 1_500, REPS, 0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleRiskWarning)
            clf = ConformalClassifier(model, alpha=ALPHA, prefit=True, random_state=r, **kw)
            clf.fit(X[cal], y[cal])
        hit = clf.predict_set(X[te])[np.arange(te.size), y[te]]
        cov.append([hit[y[te] == k].mean() for k in range(3)])
    return np.asarray(cov)


def test_class_conditional_covers_the_worst_class_where_marginal_does_not(imbalanced):
    model, X, y, pool = imbalanced
    marginal = per_class_coverage(model, X, y, pool, method="split")
    cond = per_class_coverage(model, X, y, pool, method="split", class_conditional=True)
    # marginal split conformal: valid on average, but the rare class is left behind
    worst = marginal.mean(0).argmin()
    assert marginal.mean(0)[worst] + 3 * se(marginal)[worst] < 1 - ALPHA - 0.02
    # class-conditional: every class at 1 - alpha
    assert cond.mean(0).min() >= 1 - ALPHA - 0.02
    assert (cond.mean(0) >= 1 - ALPHA - 3 * se(cond)).all()


def test_class_conditional_bq_holds_per_class_given_the_calibration_set(imbalanced):
    model, X, y, pool = imbalanced
    cond = per_class_coverage(model, X, y, pool, method="bq", beta=0.9,
                              class_conditional=True)
    fails = (cond < 1 - ALPHA).mean(0)  # per class: share of calibration sets that fail
    # 1 - beta plus 3 binomial SE, plus slack for the finite test set of the rare class
    assert (fails <= 0.1 + 3 * math.sqrt(0.09 / REPS) + 0.03).all()


def test_class_conditional_exposes_a_posterior_per_class(imbalanced):
    model, X, y, pool = imbalanced
    clf = ConformalClassifier(model, method="bq", class_conditional=True, prefit=True).fit(
        X[pool[:1_500]], y[pool[:1_500]])
    assert clf.lambda_.shape == (3,) and set(clf.risk_posterior_) == {0, 1, 2}
    for k in range(3):
        assert clf.risk_posterior_[k].cdf(ALPHA) >= 0.95
    assert clf.group_sizes_.sum() == 1_500
    ax = clf.plot_risk_posterior(group=2)
    assert "group 2" in ax.get_title()
    with pytest.raises(ValueError, match="group="):
        clf.plot_risk_posterior()


def test_a_class_too_small_warns_and_is_always_in_the_set(imbalanced):
    model, X, y, pool = imbalanced
    cal = pool[:400]  # ~20 points of the rare class: below bq's n = 29
    with pytest.warns(InfeasibleRiskWarning, match=r"groups cannot certify.*at least n=29"):
        clf = ConformalClassifier(model, method="bq", class_conditional=True,
                                  prefit=True).fit(X[cal], y[cal])
    rare = int(np.argmin(clf.group_sizes_))
    assert np.isinf(clf.lambda_[rare])
    assert clf.predict_set(X[pool[400:]])[:, rare].all()


# --------------------------------------------------------------------------- groups=
def grouped_regression(n, rng):
    g = rng.choice(np.array(["calm", "mid", "wild"]), size=n, p=[0.6, 0.3, 0.1])
    X = rng.normal(size=(n, 3))
    noise = np.select([g == "calm", g == "mid"], [0.5, 1.0], 4.0)
    y = X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=n) * noise
    return X, y, g


def test_mondrian_regression_covers_every_group():
    rng = np.random.default_rng(21)
    X, y, g = grouped_regression(6_000, rng)
    model = LinearRegression().fit(X[:1_000], y[:1_000])
    pool = np.arange(1_000, 6_000)
    names = np.array(["calm", "mid", "wild"])
    mond = ConformalRegressor(model, method="split", prefit=True)
    flat = ConformalRegressor(model, method="split", prefit=True)
    cov_m, cov_f = [], []
    for cal, te in _splits(pool, 1_500, REPS, 2):
        mond.fit(X[cal], y[cal], groups=g[cal])
        flat.fit(X[cal], y[cal])
        for store, est, kw in ((cov_m, mond, {"groups": g[te]}), (cov_f, flat, {})):
            iv = est.predict_interval(X[te], **kw)
            hit = (y[te] >= iv[:, 0]) & (y[te] <= iv[:, 1])
            store.append([hit[g[te] == k].mean() for k in names])
    cov_m, cov_f = np.asarray(cov_m), np.asarray(cov_f)
    assert (cov_m.mean(0) >= 1 - ALPHA - 3 * se(cov_m)).all()
    assert (cov_m.mean(0) <= 1 - ALPHA + 1 / 150 + 3 * se(cov_m)).all()  # not wasteful
    assert cov_f.mean(0)[2] + 3 * se(cov_f)[2] < 1 - ALPHA - 0.02  # marginal misses "wild"
    assert list(mond.groups_) == list(names)
    lam = dict(zip(mond.groups_, mond.lambda_, strict=True))
    assert lam["calm"] < lam["mid"] < lam["wild"]


def test_mondrian_fit_splits_groups_with_the_data_and_checks_them():
    rng = np.random.default_rng(22)
    X, y, g = grouped_regression(3_000, rng)
    reg = ConformalRegressor(method="bq", random_state=0).fit(X, y, groups=g)
    assert reg.group_sizes_.sum() == reg.n_calibration_ == 1_500
    assert set(reg.risk_posterior_) == {"calm", "mid", "wild"}
    iv = reg.predict_interval(X[:10], groups=g[:10])
    assert iv.shape == (10, 2)
    with pytest.raises(ValueError, match="pass groups="):
        reg.predict_interval(X[:10])
    with pytest.raises(ValueError, match="not seen at calibration"):
        reg.predict_interval(X[:2], groups=["calm", "other"])
    with pytest.raises(ValueError, match="one value per row"):
        ConformalRegressor().fit(X, y, groups=g[:10])
    with pytest.raises(ValueError, match="NaN"):
        ConformalRegressor().fit(X, y, groups=np.where(g == "calm", 0.0, np.nan))
    flat = ConformalRegressor(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="not to fit"):
        flat.predict_interval(X[:3], groups=g[:3])
    with pytest.raises(ValueError, match="not both"):
        ConformalClassifier(class_conditional=True).fit(X, (y > 0).astype(int), groups=g)


def test_a_small_group_warns_once_and_gets_an_infinite_interval():
    rng = np.random.default_rng(23)
    X, y, g = grouped_regression(2_000, rng)
    g = g.copy()
    g[:10] = "tiny"
    model = LinearRegression().fit(X[1_000:], y[1_000:])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = ConformalRegressor(model, method="bq", prefit=True).fit(X[:1_000], y[:1_000],
                                                                     groups=g[:1_000])
    msgs = [str(w.message) for w in caught if issubclass(w.category, InfeasibleRiskWarning)]
    assert len(msgs) == 1 and "'tiny' (n=10)" in msgs[0] and "at least n=29" in msgs[0]
    iv = reg.predict_interval(X[:12], groups=g[:12])
    assert np.isinf(iv[:10]).all() and np.isfinite(iv[10:]).all()


def test_class_conditional_lac_matches_crepes_class_conditional(imbalanced):
    crepes = pytest.importorskip("crepes")
    model, X, y, pool = imbalanced
    cal, te = pool[:1_000], pool[1_000:]
    alpha = 0.11  # (n_k + 1) alpha not an integer for any class: crepes counts p = alpha in
    ours = ConformalClassifier(model, method="split", alpha=alpha, class_conditional=True,
                               prefit=True).fit(X[cal], y[cal])
    assert not any(float((n + 1) * alpha).is_integer() for n in ours.group_sizes_)
    proba = model.predict_proba(X[cal])
    cc = crepes.ConformalClassifier().fit(1 - proba[np.arange(cal.size), y[cal]], bins=y[cal])
    pt = model.predict_proba(X[te])
    theirs = np.column_stack([
        cc.predict_set(1 - pt, bins=np.full(te.size, k), confidence=1 - alpha,
                       smoothing=False)[:, k] for k in range(3)]).astype(bool)
    np.testing.assert_array_equal(ours.predict_set(X[te]), theirs)
