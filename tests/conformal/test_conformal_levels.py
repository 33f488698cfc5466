"""Several alpha levels in one call (MAPIE's shapes) and fit -> calibrate -> predict."""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, LogisticRegression

from icml25.conformal import ConformalClassifier, ConformalRegressor

ALPHAS = [0.05, 0.1, 0.2]


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    perm = np.random.default_rng(0).permutation(y.size)
    return X[perm], y[perm]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    perm = np.random.default_rng(0).permutation(y.size)
    return X[perm], y[perm]


@pytest.mark.parametrize("method", ["split", "bq"])
@pytest.mark.parametrize("score", ["absolute", "normalized"])
def test_a_sequence_of_alphas_gives_one_interval_per_level(diabetes, method, score):
    X, y = diabetes
    multi = ConformalRegressor(method=method, alpha=ALPHAS, conformity_score=score,
                               random_state=0).fit(X[:300], y[:300])
    iv = multi.predict_interval(X[300:])
    assert iv.shape == (X.shape[0] - 300, 2, len(ALPHAS))
    assert multi.lambda_.shape == (3,) and isinstance(multi.calibration_, list)
    for j, a in enumerate(ALPHAS):  # each level equals a single-alpha fit on the same split
        one = ConformalRegressor(method=method, alpha=a, conformity_score=score,
                                 random_state=0).fit(X[:300], y[:300])
        np.testing.assert_allclose(iv[:, :, j], one.predict_interval(X[300:]))
    width = iv[:, 1, :] - iv[:, 0, :]
    assert np.all(width[:, 0] >= width[:, 1]) and np.all(width[:, 1] >= width[:, 2])


def test_levels_with_groups_and_cv_plus(diabetes):
    X, y = diabetes
    g = (X[:, 1] > 0).astype(int)
    reg = ConformalRegressor(method="split", alpha=ALPHAS, random_state=0).fit(
        X[:300], y[:300], groups=g[:300])
    assert reg.lambda_.shape == (2, 3)
    assert reg.predict_interval(X[300:], groups=g[300:]).shape == (142, 2, 3)
    cvp = ConformalRegressor(method="split", alpha=ALPHAS, cv=5, random_state=0).fit(
        X[:300], y[:300])
    iv = cvp.predict_interval(X[300:])
    one = ConformalRegressor(method="split", alpha=0.1, cv=5, random_state=0).fit(
        X[:300], y[:300])
    np.testing.assert_allclose(iv[:, :, 1], one.predict_interval(X[300:]))
    with pytest.raises(ValueError, match="one alpha"):
        ConformalRegressor(conformity_score="cqr", alpha=ALPHAS).fit(X[:300], y[:300])
    for bad in ([], [0.1, 0.1], [[0.1, 0.2]], [0.1, 1.5]):
        with pytest.raises(ValueError, match="alpha"):
            ConformalRegressor(alpha=bad).fit(X[:300], y[:300])


@pytest.mark.filterwarnings("ignore::icml25.conformal.InfeasibleRiskWarning")
@pytest.mark.parametrize("kw", [{"conformity_score": "aps"}, {"class_conditional": True},
                                {"conformity_score": "lac"}])
def test_a_sequence_of_alphas_gives_one_set_per_level(iris, kw):
    X, y = iris
    multi = ConformalClassifier(LogisticRegression(max_iter=500), method="split",
                                alpha=ALPHAS, random_state=0, **kw).fit(X[:100], y[:100])
    sets = multi.predict_set(X[100:])
    assert sets.shape == (50, 3, 3) and sets.dtype == bool
    for j, a in enumerate(ALPHAS):
        one = ConformalClassifier(LogisticRegression(max_iter=500), method="split", alpha=a,
                                  random_state=0, **kw).fit(X[:100], y[:100])
        np.testing.assert_array_equal(sets[:, :, j], one.predict_set(X[100:]))
    assert np.all(sets[:, :, 0] >= sets[:, :, 2])  # nested: a smaller alpha, a larger set


def test_fit_then_calibrate_trains_on_all_of_fit_data(diabetes):
    """MAPIE's fit -> conformalize: calibration_size=0 keeps every training row for the model,
    and a clear error says what is missing until calibrate() is called."""
    X, y = diabetes
    reg = ConformalRegressor(method="split", alpha=0.1, calibration_size=0).fit(X[:250], y[:250])
    np.testing.assert_allclose(reg.estimators_[0].coef_,
                               LinearRegression().fit(X[:250], y[:250]).coef_)
    with pytest.raises(NotFittedError, match=r"calibrate\(X_cal, y_cal\)"):
        reg.predict_interval(X[400:])
    reg.calibrate(X[250:400], y[250:400])
    prefit = ConformalRegressor(LinearRegression().fit(X[:250], y[:250]), method="split",
                                alpha=0.1, prefit=True).fit(X[250:400], y[250:400])
    np.testing.assert_allclose(reg.predict_interval(X[400:]), prefit.predict_interval(X[400:]))
    # a default fit (50% held out) can be re-calibrated on a set of one's own, too
    again = ConformalRegressor(method="split").fit(X[:250], y[:250]).calibrate(X[250:400],
                                                                               y[250:400])
    assert again.n_calibration_ == 150


def test_classifier_fit_then_calibrate(iris):
    X, y = iris
    clf = ConformalClassifier(LogisticRegression(max_iter=500), method="split",
                              conformity_score="aps", calibration_size=0, random_state=0)
    clf.fit(X[:90], y[:90])
    with pytest.raises(NotFittedError, match="calibrate"):
        clf.predict_set(X[120:])
    sets = clf.calibrate(X[90:120], y[90:120]).predict_set(X[120:])
    assert sets.shape == (30, 3) and sets.any(axis=1).all()
    with pytest.raises(ValueError, match="calibration_size"):
        ConformalClassifier(calibration_size=-1).fit(X, y)
