"""scikit-learn estimators: crepes parity, sets and intervals, risk control, sklearn checks."""

import math
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_iris
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

from icml25.conformal import (
    ConformalClassifier,
    ConformalRegressor,
    InfeasibleRiskWarning,
    RiskController,
    calibrate,
    false_negative_rate,
)
from icml25.conformal.data import make_multilabel_scores


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    x_tr, x_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.6, random_state=0)
    x_cal, x_te, y_cal, y_te = train_test_split(x_rest, y_rest, test_size=0.5, random_state=1)
    model = LinearRegression().fit(x_tr, y_tr)
    return model, x_cal, y_cal, x_te, y_te


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2, 0.5])
def test_split_matches_crepes_interval_widths(diabetes, alpha):
    crepes = pytest.importorskip("crepes")
    model, x_cal, y_cal, x_te, _ = diabetes
    ours = ConformalRegressor(model, method="split", alpha=alpha, prefit=True).fit(x_cal, y_cal)
    cr = crepes.ConformalRegressor()
    cr.fit(y_cal - model.predict(x_cal))
    theirs = cr.predict_int(model.predict(x_te), confidence=1 - alpha)
    mine = ours.predict_interval(x_te)
    np.testing.assert_allclose(mine[:, 1] - mine[:, 0], theirs[:, 1] - theirs[:, 0],
                               rtol=0, atol=1e-9)
    np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-9)


def test_split_and_crc_agree_and_follow_the_quantile_rule(diabetes):
    model, x_cal, y_cal, _, _ = diabetes
    res = np.abs(y_cal - model.predict(x_cal))
    n = res.size
    split = ConformalRegressor(model, method="split", alpha=0.1, prefit=True).fit(x_cal, y_cal)
    crc = ConformalRegressor(model, method="crc", alpha=0.1, prefit=True).fit(x_cal, y_cal)
    assert split.lambda_ == np.sort(res)[math.ceil((n + 1) * 0.9) - 1] == crc.lambda_


def test_bq_is_wider_than_crc_and_rcps_wider_still(diabetes):
    model, x_cal, y_cal, _, _ = diabetes
    lam = {m: ConformalRegressor(model, method=m, alpha=0.1, prefit=True).fit(x_cal, y_cal).lambda_
           for m in ("crc", "bq")}
    assert lam["bq"] > lam["crc"]


def test_regressor_fit_splits_and_covers():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4_000, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=4_000)
    reg = ConformalRegressor(method="bq", alpha=0.1, random_state=0, calibration_size=0.25)
    reg.fit(X[:2_000], y[:2_000])
    assert reg.n_calibration_ == 500
    iv = reg.predict_interval(X[2_000:])
    cover = ((y[2_000:] >= iv[:, 0]) & (y[2_000:] <= iv[:, 1])).mean()
    assert cover >= 0.9 - 3 * np.sqrt(0.09 / 2_000)
    assert reg.risk_posterior_.is_exact
    assert reg.risk_posterior_.cdf(0.1) >= 0.95


def test_cqr_intervals_adapt_to_the_noise():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 4, size=(3_000, 1))
    y = rng.normal(size=3_000) * X[:, 0]
    reg = ConformalRegressor(conformity_score="cqr", method="crc", alpha=0.1, random_state=0)
    reg.fit(X[:2_000], y[:2_000])
    iv = reg.predict_interval(X[2_000:])
    width = iv[:, 1] - iv[:, 0]
    small, large = X[2_000:, 0] < 1, X[2_000:, 0] > 3
    assert width[large].mean() > 2 * width[small].mean()
    cover = ((y[2_000:] >= iv[:, 0]) & (y[2_000:] <= iv[:, 1])).mean()
    assert cover >= 0.9 - 3 * np.sqrt(0.09 / 1_000)


def test_too_small_calibration_set_gives_infinite_intervals(diabetes):
    model, x_cal, y_cal, x_te, _ = diabetes
    with pytest.warns(InfeasibleRiskWarning, match="at least n=29"):
        reg = ConformalRegressor(model, method="bq", prefit=True).fit(x_cal[:20], y_cal[:20])
    iv = reg.predict_interval(x_te)
    assert np.all(np.isneginf(iv[:, 0])) and np.all(np.isposinf(iv[:, 1]))


@pytest.mark.parametrize("score", ["lac", "aps"])
def test_classifier_sets_cover_and_full_set_when_infeasible(score):
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(2)
    X = X + rng.normal(scale=0.8, size=X.shape)  # make it hard enough to need sets
    clf = ConformalClassifier(method="crc", conformity_score=score, alpha=0.1,
                              random_state=0).fit(X, y)
    sets = clf.predict_set(X)
    assert sets.shape == (150, 3)
    assert sets[np.arange(150), y].mean() >= 0.8  # in-sample sanity (loose; n is tiny)
    proba = clf.predict_proba(X)
    if score == "lac":
        np.testing.assert_array_equal(sets, 1 - proba <= clf.lambda_ + 1e-12)
    with pytest.warns(InfeasibleRiskWarning):
        small = ConformalClassifier(clf.estimator_, method="bq", conformity_score=score,
                                    alpha=0.05, prefit=True).fit(X[:30], y[:30])
    assert small.predict_set(X).all()


def test_classifier_coverage_given_calibration_in_repeated_draws():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6_000, 2))
    y = (X[:, 0] + rng.normal(scale=1.0, size=6_000) > 0).astype(int)
    model = LogisticRegression().fit(X[:1_000], y[:1_000])
    x_te, y_te = X[5_000:], y[5_000:]
    fails = 0
    reps = 60
    for _ in range(reps):
        idx = 1_000 + rng.choice(4_000, size=100, replace=False)
        clf = ConformalClassifier(model, method="bq", alpha=0.2, beta=0.9, prefit=True)
        clf.fit(X[idx], y[idx])
        miss = 1 - clf.predict_set(x_te)[np.arange(y_te.size), y_te].mean()
        fails += miss > 0.2
    # failures are Binomial(reps, <= 0.1); 3 SE above the bound is still a failure of the test
    assert fails / reps <= 0.1 + 3 * np.sqrt(0.09 / reps) + 1 / reps


def test_risk_controller_fnr_matches_calibrate_on_explicit_losses():
    scores, labels = make_multilabel_scores(n_samples=600, rng=4)
    rc = RiskController(method="bq", alpha=0.1, n_draws=4_000, random_state=0).fit(scores, labels)
    grid = np.unique(np.concatenate([[0.0], scores[labels.astype(bool)]]))
    losses = np.stack([false_negative_rate(labels, scores, g) for g in grid], axis=1)
    ref = calibrate(losses, grid, 0.1, method="bq", n_draws=4_000)
    assert rc.lambda_ == ref.lambda_
    assert rc.calibration_.direction == "increasing"
    sets = rc.predict_set(scores)
    assert np.array_equal(sets, scores >= rc.lambda_)
    assert rc.predict(scores).shape == scores.shape


def test_risk_controller_with_a_user_loss_and_an_estimator():
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(5)
    X = rng.normal(size=(1_200, 4))
    Y = (X[:, :3] + rng.normal(scale=0.7, size=(1_200, 3)) > 0).astype(int)

    def loss(Y, S, lam):  # miss rate of true labels, as a callable
        return false_negative_rate(Y, S, lam)

    rc = RiskController(KNeighborsClassifier(n_neighbors=15), loss=loss, method="crc",
                        alpha=0.15, random_state=0).fit(X, Y)
    assert rc.predict(X[:5]).shape == (5, 3)
    assert 0 < rc.lambda_ < 1


def test_risk_controller_rejects_bad_labels_and_infeasible_warns():
    scores, labels = make_multilabel_scores(n_samples=300, rng=6)
    with pytest.raises(ValueError, match="0/1 label matrix"):
        RiskController(method="crc").fit(scores, labels[:, 0])
    with pytest.warns(InfeasibleRiskWarning):
        rc = RiskController(method="bq", alpha=0.05).fit(scores[:40], labels[:40])
    assert rc.predict_set(scores).all()  # full sets


@pytest.mark.parametrize(("params", "match"), [
    ({"alpha": 1.5}, "alpha"), ({"beta": 0}, "beta"), ({"method": "cp"}, "method"),
    ({"conformity_score": "hinge"}, "conformity_score"), ({"calibration_size": 1.5}, "calibration"),
])
def test_estimator_parameter_errors(params, match):
    X, y = load_diabetes(return_X_y=True)
    with pytest.raises(ValueError, match=match):
        ConformalRegressor(**params).fit(X, y)


def test_nan_input_is_rejected():
    X, y = load_diabetes(return_X_y=True)
    X = X.copy()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ConformalRegressor().fit(X, y)


def test_posterior_plot_and_pickle():
    X, y = load_diabetes(return_X_y=True)
    reg = ConformalRegressor(random_state=0).fit(X, y)
    ax = reg.plot_risk_posterior()
    assert "ConformalRegressor" in ax.get_title()
    again = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(again.predict_interval(X[:3]), reg.predict_interval(X[:3]))
    assert clone(RiskController(alpha=0.2)).get_params()["alpha"] == 0.2


@parametrize_with_checks([
    ConformalRegressor(method="crc"), ConformalClassifier(method="crc"),
    ConformalRegressor(), ConformalClassifier(),  # bq, the defaults
    ConformalRegressor(method="rcps"), ConformalClassifier(method="rcps"),
    ConformalRegressor(method="crc", conformity_score="cqr"),
    ConformalRegressor(method="split", cv=3), ConformalRegressor(method="crc", cv="jackknife+"),
    ConformalRegressor(method="split", conformity_score="normalized"),
    ConformalClassifier(method="crc", conformity_score="aps"),
    ConformalClassifier(method="split", conformity_score="aps_randomized"),
    ConformalClassifier(method="bq", conformity_score="raps"),
    ConformalClassifier(method="crc", conformity_score="top_k"),
    ConformalClassifier(method="split", class_conditional=True),
])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleRiskWarning)
        check(estimator)
