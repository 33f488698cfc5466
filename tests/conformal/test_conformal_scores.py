"""Conformity scores as strategies: APS fixed, randomised APS, RAPS, top-k, normalised residuals.

Coverage claims are checked over >= 200 random calibration/test splits of a fixed pool around one
fitted model; tolerances are 3 standard errors of the mean coverage over the splits (estimated
from the splits themselves), plus the 1/(n+1) by which split conformal may over-cover.
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_digits, make_classification
from sklearn.linear_model import LinearRegression, LogisticRegression

from icml25.conformal import ConformalClassifier, ConformalRegressor, InfeasibleRiskWarning
from icml25.conformal.scores import (
    APS,
    CLASSIFICATION_SCORES,
    LAC,
    RAPS,
    ClassificationScore,
    NormalizedResidual,
    TopK,
    get_classification_score,
)

ALPHA = 0.1
REPS = 200


def _splits(pool: np.ndarray, n_cal: int, reps: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(reps):
        p = rng.permutation(pool)
        yield p[:n_cal], p[n_cal:]


def run_sets(model, X, y, pool, n_cal, score, *, reps=REPS, method="split", seed=0, **kw):
    """Per split: coverage, mean size, share of empty sets, per-class coverage (reps, K)."""
    out = {"cov": [], "size": [], "empty": [], "per_class": []}
    classes = np.unique(y)
    for r, (cal, te) in enumerate(_splits(pool, n_cal, reps, seed)):
        clf = ConformalClassifier(model, method=method, alpha=ALPHA, conformity_score=score,
                                  prefit=True, random_state=r, **kw).fit(X[cal], y[cal])
        sets = clf.predict_set(X[te])
        hit = sets[np.arange(te.size), y[te]]
        out["cov"].append(hit.mean())
        out["size"].append(sets.sum(1).mean())
        out["empty"].append((sets.sum(1) == 0).mean())
        out["per_class"].append([hit[y[te] == k].mean() for k in classes])
    return {k: np.asarray(v) for k, v in out.items()}


def se(v) -> float:
    return float(np.std(v, ddof=1) / np.sqrt(len(v)))


class FixedProba(ClassifierMixin, BaseEstimator):
    """A classifier whose probabilities are precomputed: X holds row indices into ``proba``.

    The estimators run unchanged; only the model's own cost is taken out of the 200-split loops.
    """

    def __init__(self, proba=None, classes=None):
        self.proba = proba
        self.classes = classes

    def fit(self, X=None, y=None):
        self.classes_ = np.asarray(self.classes)
        self.proba_ = np.asarray(self.proba)
        return self

    def predict_proba(self, X):
        return self.proba_[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(1)]


def fixed(model, X):
    return FixedProba(model.predict_proba(X), model.classes_).fit()


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(y.size)
    model = LogisticRegression(max_iter=2_000).fit(X[perm[:600]], y[perm[:600]])
    return fixed(model, X), np.arange(y.size, dtype=float)[:, None], y, perm[600:]


@pytest.fixture(scope="module")
def hard():
    """20 classes, a model that is right 40% of the time: sets of ~7 labels."""
    X, y = make_classification(n_samples=5_500, n_features=30, n_informative=10, n_classes=20,
                               n_clusters_per_class=1, class_sep=1.0, random_state=0)
    model = LogisticRegression(max_iter=1_000).fit(X[:3_000], y[:3_000])
    return fixed(model, X), np.arange(y.size, dtype=float)[:, None], y, np.arange(3_000,
                                                                                     5_500)


def reference_aps_sizes(proba_cal, y_cal, proba_te, alpha, rng):
    """APS with the U term and "include the last label", written independently: sort,
    accumulate, calibrate on mass-above + u * p_y, stop on the label whose mass crosses q."""
    srt = -np.sort(-proba_cal, axis=1)
    rank = (proba_cal > proba_cal[np.arange(y_cal.size), y_cal][:, None]).sum(1)
    above = np.cumsum(srt, axis=1)[np.arange(y_cal.size), rank] - srt[np.arange(y_cal.size), rank]
    score = above + rng.uniform(size=y_cal.size) * proba_cal[np.arange(y_cal.size), y_cal]
    n = y_cal.size
    q = np.sort(score)[math.ceil((n + 1) * (1 - alpha)) - 1]
    cum = np.cumsum(-np.sort(-proba_te, axis=1), axis=1)
    # a label is in while the mass ranked above it is below q (the crossing one included)
    return 1 + (cum[:, :-1] < q).sum(1)


def test_aps_default_has_no_empty_sets_and_matches_the_crossing_label_reference(digits):
    model, X, y, pool = digits
    res = run_sets(model, X, y, pool, 500, "aps")
    assert res["empty"].max() == 0.0
    ref, rng = [], np.random.default_rng(12)
    for cal, te in _splits(pool, 500, REPS, 0):
        ref.append(reference_aps_sizes(model.predict_proba(X[cal]), y[cal],
                                       model.predict_proba(X[te]), ALPHA, rng).mean())
    assert abs(res["size"].mean() / np.mean(ref) - 1) <= 0.05
    assert res["cov"].mean() >= 1 - ALPHA - 3 * se(res["cov"])
    # The old inclusive score on the same splits: empty sets on a confident model.
    old = run_sets(model, X, y, pool, 500, OldInclusiveAPS(), reps=30)
    assert old["empty"].mean() > 0.03 and old["size"].mean() > 1.5 * res["size"].mean()


@pytest.mark.parametrize("score", [APS(tie_break=False), RAPS(tie_break=False),
                                   TopK()])
def test_deterministic_scores_collapse_to_the_top_label_on_a_confident_model(digits, score):
    """Without the U term every correctly classified calibration point scores 0 (APS, RAPS)
    or 1 (top-k): a model right more often than 1 - alpha gets top-1 sets, coverage = accuracy.
    The default APS / RAPS (U term + the last label included) do not collapse."""
    model, X, y, pool = digits
    det = run_sets(model, X, y, pool, 500, score, reps=30)
    assert np.all(det["size"] == 1.0)
    default = get_classification_score("raps" if isinstance(score, RAPS) else "aps")
    if isinstance(score, TopK):
        default = TopK(randomized=True)  # a fixed k cannot do better: randomise it
    new = run_sets(model, X, y, pool, 500, default, reps=30)
    assert new["size"].mean() != 1.0
    if isinstance(score, TopK):  # exact coverage on average
        assert abs(new["cov"].mean() - (1 - ALPHA)) <= 3 * se(new["cov"]) + 1 / 501
    else:  # larger sets, still conservative
        assert new["size"].mean() > 1.05 and new["cov"].mean() > det["cov"].mean()


class OldInclusiveAPS(ClassificationScore):
    def label_scores(self, proba, u):
        order = np.argsort(-proba, axis=1, kind="stable")
        cum = np.cumsum(np.take_along_axis(proba, order, axis=1), axis=1)
        out = np.empty_like(proba)
        np.put_along_axis(out, order, cum, axis=1)
        return out


def test_randomized_aps_covers_one_minus_alpha_within_the_binomial_se(digits):
    model, X, y, pool = digits
    res = run_sets(model, X, y, pool, 500, "aps_randomized")
    tol = 3 * se(res["cov"])
    assert 1 - ALPHA - tol <= res["cov"].mean() <= 1 - ALPHA + 1 / 501 + tol
    # the deterministic variant over-covers on this confident model: the check has teeth
    det = run_sets(model, X, y, pool, 500, "aps", reps=50)
    assert det["cov"].mean() > 1 - ALPHA + 1 / 501 + 3 * se(det["cov"])


def test_randomized_sets_are_seeded(digits):
    model, X, y, pool = digits
    cal, te = pool[:500], pool[500:]
    a = ConformalClassifier(model, method="split", conformity_score="aps_randomized",
                            prefit=True, random_state=3).fit(X[cal], y[cal])
    b = ConformalClassifier(model, method="split", conformity_score="aps_randomized",
                            prefit=True, random_state=3).fit(X[cal], y[cal])
    c = ConformalClassifier(model, method="split", conformity_score="aps_randomized",
                            prefit=True, random_state=4).fit(X[cal], y[cal])
    assert a.lambda_ == b.lambda_ and np.array_equal(a.predict_set(X[te]), b.predict_set(X[te]))
    assert np.array_equal(a.predict_set(X[te]), a.predict_set(X[te]))
    assert a.lambda_ != c.lambda_


@pytest.mark.parametrize("mode", [{"tie_break": False}, {"randomized": True}, {}])
def test_raps_is_smaller_than_aps_at_equal_coverage(hard, mode):
    model, X, y, pool = hard
    aps = run_sets(model, X, y, pool, 1_000, APS(**mode))
    raps = run_sets(model, X, y, pool, 1_000, RAPS(k_reg=2, lam=0.05, **mode))
    for res in (aps, raps):  # both at 1 - alpha (exact up to 1/(n+1) and the SE)
        tol = 3 * se(res["cov"])
        assert 1 - ALPHA - tol <= res["cov"].mean()
        if mode:  # the default (U term, last label included) is conservative by design
            assert res["cov"].mean() <= 1 - ALPHA + 1 / 1_001 + tol
    diff = aps["size"] - raps["size"]  # paired: same splits
    assert diff.mean() > 3 * se(diff)
    assert raps["size"].mean() < 0.97 * aps["size"].mean()


@pytest.mark.parametrize("score", ["lac", "top_k", "raps"])
def test_every_score_covers_over_random_splits(hard, score):
    model, X, y, pool = hard
    res = run_sets(model, X, y, pool, 1_000, score)
    assert res["cov"].mean() >= 1 - ALPHA - 3 * se(res["cov"])
    if score == "lac":  # continuous scores: not conservative either
        assert res["cov"].mean() <= 1 - ALPHA + 1 / 1_001 + 3 * se(res["cov"])


def test_bq_with_aps_holds_given_the_calibration_set(hard):
    model, X, y, pool = hard
    res = run_sets(model, X, y, pool, 500, "aps_randomized", method="bq", reps=REPS)
    fails = (res["cov"] < 1 - ALPHA).mean()
    # test sets of 2,000 blur the true coverage a little; 1 - beta = 5% plus 3 binomial SE
    assert fails <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / REPS)


def test_top_k_sets_have_one_size_and_scores_are_registered(hard):
    model, X, y, pool = hard
    clf = ConformalClassifier(model, method="split", conformity_score=TopK(),
                              prefit=True).fit(X[pool[:1_000]], y[pool[:1_000]])
    sizes = clf.predict_set(X[pool[1_000:]]).sum(1)
    assert np.unique(sizes).size == 1 and sizes[0] == clf.lambda_
    assert set(CLASSIFICATION_SCORES) == {"lac", "aps", "aps_randomized", "raps",
                                          "raps_randomized", "top_k", "top_k_randomized"}
    assert isinstance(get_classification_score("lac"), LAC)
    with pytest.raises(ValueError, match="conformity_score"):
        get_classification_score("hinge")
    with pytest.raises(ValueError, match="k_reg"):
        ConformalClassifier(model, conformity_score=RAPS(k_reg=-1), method="crc",
                            prefit=True).fit(X[pool[:300]], y[pool[:300]])


# --------------------------------------------------------------------------- regression
def hetero_data(n, rng):
    X = rng.uniform(0, 4, size=(n, 2))
    y = 2 * X[:, 0] + rng.normal(size=n) * (0.2 + X[:, 0])
    return X, y


@pytest.mark.parametrize("difficulty", ["knn", "knn_spread", "regressor"])
def test_normalized_residuals_cover_and_adapt(difficulty):
    rng = np.random.default_rng(7)
    X, y = hetero_data(5_000, rng)
    diff = LinearRegression() if difficulty == "regressor" else difficulty
    base = ConformalRegressor(conformity_score=NormalizedResidual(difficulty=diff), method="split",
                              alpha=ALPHA, random_state=0, calibration_size=0.5)
    base.fit(X[:2_000], y[:2_000])
    flat = ConformalRegressor(method="split", alpha=ALPHA, random_state=0).fit(X[:2_000],
                                                                                y[:2_000])
    pool = np.arange(2_000, 4_000)
    cov, width, flat_width = [], [], []
    for cal, te in _splits(pool, 500, REPS, 1):
        base.calibrate(X[cal], y[cal])
        iv = base.predict_interval(X[te])
        cov.append(((y[te] >= iv[:, 0]) & (y[te] <= iv[:, 1])).mean())
        width.append((iv[:, 1] - iv[:, 0]).mean())
        flat.calibrate(X[cal], y[cal])
        fv = flat.predict_interval(X[te])
        flat_width.append((fv[:, 1] - fv[:, 0]).mean())
    cov = np.asarray(cov)
    tol = 3 * se(cov)
    assert 1 - ALPHA - tol <= cov.mean() <= 1 - ALPHA + 1 / 501 + tol
    assert np.mean(width) < np.mean(flat_width)  # adaptive: shorter on average here
    iv = base.predict_interval(X[pool])
    w = iv[:, 1] - iv[:, 0]
    if difficulty != "knn_spread":  # the target spread also reflects the slope in x
        assert w[X[pool, 0] > 3].mean() > 2 * w[X[pool, 0] < 1].mean()


def test_normalized_with_prefit_needs_a_fitted_difficulty_estimator():
    rng = np.random.default_rng(8)
    X, y = hetero_data(1_000, rng)
    model = LinearRegression().fit(X[:500], y[:500])
    with pytest.raises(ValueError, match="fitted regressor"):
        ConformalRegressor(model, conformity_score="normalized", prefit=True).fit(X[500:],
                                                                                  y[500:])
    spread = LinearRegression().fit(X[:500], np.abs(y[:500] - model.predict(X[:500])))
    reg = ConformalRegressor(model, conformity_score=NormalizedResidual(difficulty=spread),
                             prefit=True, method="crc").fit(X[500:], y[500:])
    assert np.isfinite(reg.lambda_)


def test_infeasible_score_calibration_still_gives_full_sets(digits):
    model, X, y, pool = digits
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfeasibleRiskWarning)
        with pytest.raises(InfeasibleRiskWarning):
            ConformalClassifier(model, conformity_score="raps", method="bq", prefit=True).fit(
                X[pool[:20]], y[pool[:20]])
    with pytest.warns(InfeasibleRiskWarning):
        clf = ConformalClassifier(model, conformity_score="raps", method="bq", prefit=True).fit(
            X[pool[:20]], y[pool[:20]])
    assert clf.predict_set(X[:5]).all()
