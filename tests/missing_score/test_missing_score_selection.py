"""Penalty selection (MissingScoreGGMCV), the complete-case warning, the PD projection."""

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")

from icml25.missing_score import (  # noqa: E402
    MissingScoreGGM,
    MissingScoreGGMCV,
    TooFewCompleteRowsWarning,
    held_out_loss,
    mcar_mask,
    sample_gaussian,
    support_refit,
)


def _f1(P, adj, thr):
    iu = np.triu_indices_from(adj, 1)
    est, true = np.abs(P[iu]) > thr, adj[iu]
    tp = int((est & true).sum())
    return 0.0 if tp == 0 else 2 * tp / (est.sum() + true.sum())


def _chain(d=8, n=600, seed=0, p_missing=0.3):
    rng = np.random.default_rng(seed)
    P = np.eye(d) + np.diag([0.4] * (d - 1), 1) + np.diag([0.4] * (d - 1), -1)
    X = sample_gaussian(n, np.zeros(d), P, rng)
    X[mcar_mask(X.shape, p_missing, rng)] = np.nan
    return X, (P != 0) & ~np.eye(d, dtype=bool)


def test_support_refit_is_the_score_matching_minimiser():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    S = A @ A.T / 6 + np.eye(6)
    full = support_refit(S, ~np.eye(6, dtype=bool))
    np.testing.assert_allclose(full, np.linalg.inv(S), atol=1e-10)  # full support: S^-1
    chain = np.eye(6, k=1, dtype=bool) | np.eye(6, k=-1, dtype=bool)
    P = support_refit(S, chain)
    assert np.all(P[~(chain | np.eye(6, dtype=bool))] == 0)
    X = rng.normal(size=(50, 6))
    X[::3, 2] = np.nan
    assert np.isfinite(held_out_loss(P, np.zeros(6), X))
    assert held_out_loss(np.full((6, 6), np.nan), np.zeros(6), X) == np.inf


def test_cv_selects_a_graph_close_to_the_best_penalty_on_the_path():
    """Chain graph, d = 8, n = 600, 30% MCAR: the CV choice recovers the graph nearly as well
    as the best penalty on the same path (oracle), far better than the old fixed default
    (alpha = 0.05: 26 of 28 possible edges in the issue) and than scoring the penalised
    precisions themselves (refit=None picks a nearly full graph; measured in
    docs/missing_score.md, not re-run here to keep the test fast)."""
    X, adj = _chain()
    cv = MissingScoreGGMCV(alphas=12, cv=3, random_state=0).fit(X)
    assert cv.alpha_ in cv.cv_alphas_ and cv.cv_results_["mean_test_loss"].shape == (12,)
    assert cv.best_estimator_.alphas_[-1] == pytest.approx(cv.alpha_)
    thr = cv.best_estimator_.threshold
    f_cv = _f1(cv.precision_ * np.outer(cv.scale_, cv.scale_), adj, thr)
    full = MissingScoreGGM(alpha=cv.cv_alphas_[-1], alpha_max=cv.cv_alphas_[0], n_alphas=12,
                           random_state=0).fit(X)
    oracle = max(_f1(P * np.outer(full.scale_, full.scale_), adj, thr) for P in full.path_)
    fixed = MissingScoreGGM(alpha=0.05, random_state=0).fit(X)
    f_fixed = _f1(fixed.precision_ * np.outer(fixed.scale_, fixed.scale_), adj, thr)
    print(f"F1: cv {f_cv:.3f}, oracle {oracle:.3f}, fixed alpha=0.05 {f_fixed:.3f}")
    assert f_cv >= oracle - 0.15, (f_cv, oracle)
    assert f_cv >= f_fixed + 0.2, (f_cv, f_fixed)


def test_cv_bad_parameters():
    X, _ = _chain(d=4, n=60)
    with pytest.raises(ValueError, match="cv must be >= 2"):
        MissingScoreGGMCV(cv=1).fit(X)
    with pytest.raises(ValueError, match="log-spaced"):
        MissingScoreGGMCV(alphas=[1.0, 0.5, 0.1]).fit(X)
    with pytest.raises(ValueError, match="ggm_params may not set"):
        MissingScoreGGMCV(ggm_params={"alpha": 0.1}).fit(X)


def test_complete_case_warning_counts_rows():
    X, _ = _chain(d=8, n=300, seed=1)  # 0.7^8 = 5.8% complete rows: about 17 of 300
    n_complete = int((~np.isnan(X)).all(1).sum())
    with pytest.warns(TooFewCompleteRowsWarning,
                      match=f"the {n_complete} fully observed row\\(s\\) of 300 .* 8 variables"
                            ".*fewer than 10 per variable \\(80\\)"):
        MissingScoreGGM(method="complete", alpha=0.05, n_alphas=3, n_iter_start=20,
                        random_state=0).fit(X)
    X2, _ = _chain(d=4, n=400, seed=1, p_missing=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TooFewCompleteRowsWarning)
        MissingScoreGGM(method="complete", alpha=0.05, n_alphas=3, n_iter_start=20,
                        random_state=0).fit(X2)
        MissingScoreGGM(method="iw", alpha=0.05, n_alphas=3, n_iter_start=20,
                        random_state=0).fit(X)  # only method="complete" warns


def test_positive_definite_projection():
    X, adj = _chain(d=6, n=200, seed=2)
    kw = dict(alpha=0.0, n_alphas=2, n_iter_start=50, lr=0.3, random_state=0)
    base = MissingScoreGGM(**kw).fit(X)
    for how in ("shift", "eigen"):
        est = MissingScoreGGM(positive_definite=how, **kw).fit(X)
        w = np.linalg.eigvalsh(est.precision_)
        assert w.min() > 0
        floor = 1e-3 * np.abs(np.diag(base.precision_)).mean()
        if np.linalg.eigvalsh(base.precision_).min() > floor:
            assert est.pd_shift_ == 0.0
            np.testing.assert_allclose(est.precision_, base.precision_)
    P = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    from icml25.missing_score.estimator import _project_pd

    shifted, s = _project_pd(P, "shift", 1e-3)
    assert s == pytest.approx(1.001) and shifted[0, 1] == 2.0  # graph kept
    clipped, _ = _project_pd(P, "eigen", 1e-3)
    assert np.linalg.eigvalsh(clipped).min() == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="positive_definite must be"):
        MissingScoreGGM(positive_definite="yes").fit(X)


def _issue28_targets(graph: str, seeds=range(5), d=20, n=500, p_missing=0.3):
    """Per seed: (best F1 on the full-data path, F1 of MissingScoreGGMCV, F1 of sklearn's
    GraphicalLassoCV on mean-imputed standardised data)."""
    from sklearn.covariance import GraphicalLassoCV

    from icml25.missing_score import dense_precision, star_precision

    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        if graph == "star":
            P, adj = star_precision(d, rng)
        else:
            P, adj = dense_precision(d, rng, p_edge=0.1)
        X = sample_gaussian(n, np.zeros(d), P, rng)
        X[mcar_mask(X.shape, p_missing, rng)] = np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cv = MissingScoreGGMCV(random_state=seed).fit(X)
            full = MissingScoreGGM(alpha=cv.cv_alphas_[-1], alpha_max=cv.cv_alphas_[0],
                                   n_alphas=cv.cv_alphas_.size, random_state=seed).fit(X)
            Xm = np.where(np.isnan(X), np.nanmean(X, 0), X)
            Xm = (Xm - Xm.mean(0)) / Xm.std(0)
            g = GraphicalLassoCV().fit(Xm)
        thr = full.threshold
        oracle = max(_f1(Pk * np.outer(full.scale_, full.scale_), adj, thr) for Pk in full.path_)
        out.append((oracle, _f1(cv.precision_ * np.outer(cv.scale_, cv.scale_), adj, thr),
                    _f1(g.precision_, adj, 1e-4)))
    return np.array(out)


@pytest.mark.slow
def test_issue28_selection_targets():
    """d = 20, n = 500, 30% MCAR, 5 seeds (docs/missing_score.md, 'Choosing the penalty').
    Measured: star mean F1 CV 0.889 vs best-on-path 0.695 vs GraphicalLassoCV 0.353; random
    sparse 0.475 vs 0.610 vs 0.385. The star target (within 0.05 of the path's best) holds;
    on the random sparse graph CV beats GraphicalLassoCV but trails the path's best by 0.135
    (one seed picks the empty graph), so that target is NOT met and not asserted."""
    star = _issue28_targets("star").mean(0)
    sparse = _issue28_targets("sparse").mean(0)
    assert star[1] >= star[0] - 0.05 and star[1] > star[2] + 0.2, star
    assert sparse[1] > sparse[2], sparse
