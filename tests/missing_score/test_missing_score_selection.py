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
from icml25.missing_score.selection import (  # noqa: E402
    ebic_path,
    extended_bic,
    gaussian_support_refit,
    observed_loglik,
    one_se_index,
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


def test_preconditioned_held_out_loss_is_invariant_to_rescaling_the_coordinates():
    """metric=None is the plain loss (the identity metric); with the covariance as metric the
    loss does not change when the coordinates are rescaled (x -> D x, K -> D^-1 K D^-1,
    A -> D A D), while the plain loss does: the selection then cannot depend on units."""
    rng = np.random.default_rng(4)
    B = rng.normal(size=(5, 5))
    S = B @ B.T / 5 + 0.5 * np.eye(5)
    K = np.linalg.inv(S) + 0.05 * np.eye(5)
    X = rng.multivariate_normal(np.zeros(5), S, size=80)
    X[rng.random(X.shape) < 0.3] = np.nan
    plain = held_out_loss(K, np.zeros(5), X)
    assert held_out_loss(K, np.zeros(5), X, np.eye(5)) == pytest.approx(plain, rel=1e-12)
    dd = np.array([0.1, 1.0, 3.0, 10.0, 0.5])
    D = np.diag(dd)
    Di = np.linalg.inv(D)
    pre = held_out_loss(K, np.zeros(5), X, S)
    assert held_out_loss(Di @ K @ Di, np.zeros(5), X * dd, D @ S @ D) == pytest.approx(pre,
                                                                                     rel=1e-9)
    assert abs(held_out_loss(Di @ K @ Di, np.zeros(5), X * dd) - plain) > 1.0
    # population version: the expected loss tr(A K S K) - 2 tr(A K) is minimised at K = S^-1
    # for a fixed positive-definite A (a proper scoring rule), here on one observed pattern
    big = rng.multivariate_normal(np.zeros(5), S, size=200_000)
    at_truth = held_out_loss(np.linalg.inv(S), np.zeros(5), big, S)
    for _ in range(3):
        E = rng.normal(size=(5, 5)) * 0.05
        assert held_out_loss(np.linalg.inv(S) + E + E.T, np.zeros(5), big, S) > at_truth


def test_cv_selects_a_graph_close_to_the_best_penalty_on_the_path():
    """Chain graph, d = 8, n = 600, 30% MCAR: the CV choice recovers the graph nearly as well
    as the best penalty on the same (path-polished) path (oracle; the CV estimate is one of
    its points, so it cannot exceed it), far better than the old fixed default
    (alpha = 0.05: 26 of 28 possible edges in the issue) and than scoring the penalised
    precisions themselves (refit=None picks a nearly full graph; measured in
    docs/missing_score.md, not re-run here to keep the test fast)."""
    X, adj = _chain()
    cv = MissingScoreGGMCV(alphas=12, cv=3, selection="cv", random_state=0).fit(X)
    assert cv.alpha_ in cv.cv_alphas_ and cv.cv_results_["mean_test_loss"].shape == (12,)
    assert cv.best_estimator_.alphas_[-1] == pytest.approx(cv.alpha_)
    thr = cv.best_estimator_.threshold
    f_cv = _f1(cv.precision_ * np.outer(cv.scale_, cv.scale_), adj, thr)
    full = MissingScoreGGM(alpha=cv.cv_alphas_[-1], alpha_max=cv.cv_alphas_[0], n_alphas=12,
                           n_iter_polish=0, n_iter_path_polish=cv.path_polish,
                           random_state=0).fit(X)
    oracle = max(_f1(P * np.outer(full.scale_, full.scale_), adj, thr) for P in full.path_)
    fixed = MissingScoreGGM(alpha=0.05, random_state=0).fit(X)
    f_fixed = _f1(fixed.precision_ * np.outer(fixed.scale_, fixed.scale_), adj, thr)
    print(f"F1: cv {f_cv:.3f}, oracle {oracle:.3f}, fixed alpha=0.05 {f_fixed:.3f}")
    assert f_cv >= oracle - 0.15, (f_cv, oracle)
    assert f_cv >= f_fixed + 0.2, (f_cv, f_fixed)


def test_cv_on_the_all_rows_path_scores_its_own_edge_sets_with_one_path_fit(monkeypatch):
    """candidates="path" (default): the CV scores the edge sets of the path fitted on all
    rows, refitted on each fold's training rows: one path fit instead of K (counted); the
    estimate is the all-rows path point at alpha_ and recovers the chain as well as the best
    point on that path."""
    X, adj = _chain()
    fits = []
    real_fit = MissingScoreGGM.fit
    monkeypatch.setattr(MissingScoreGGM, "fit",
                        lambda self, X, y=None: fits.append(len(X)) or real_fit(self, X))
    cheap = dict(alphas=3, cv=3, ggm_params={"n_iter_start": 20, "n_iter_per_alpha": 2},
                 selection="cv", random_state=0)
    MissingScoreGGMCV(**cheap).fit(X)  # five splits (the default), still one path fit
    MissingScoreGGMCV(candidates="fold", scheme="kfold", n_repeats=1, **cheap).fit(X)
    # path: grid fit, the shared all-rows path (the estimate is its point at alpha_, no
    # second fit); fold: grid fit, 3 fold paths, final
    assert fits == [600, 600, 600, 400, 400, 400, 600], fits
    fits.clear()
    MissingScoreGGMCV(candidates="fold", n_repeats=1, **cheap).fit(X)  # Shao: one fold each
    assert fits == [600, 200, 200, 200, 600], fits
    fits.clear()
    MissingScoreGGMCV(candidates="fold", n_repeats=2, **cheap).fit(X)  # a path per split
    assert fits == [600] + [200] * 6 + [600], fits
    kw = dict(alphas=12, cv=3, selection="cv", random_state=0)
    path = MissingScoreGGMCV(**kw).fit(X)
    full = real_fit(MissingScoreGGM(alpha=path.cv_alphas_[-1], alpha_max=path.cv_alphas_[0],
                                    n_alphas=12, n_iter_polish=0,
                                    n_iter_path_polish=path.path_polish, random_state=0), X)
    k = int(np.flatnonzero(path.cv_alphas_ == path.alpha_)[0])
    np.testing.assert_allclose(path.precision_, full.path_[k])
    thr = full.threshold
    f = [_f1(P * np.outer(full.scale_, full.scale_), adj, thr) for P in full.path_]
    f_path = _f1(path.precision_ * np.outer(path.scale_, path.scale_), adj, thr)
    print(f"F1 path-CV {f_path:.3f}, oracle {max(f):.3f}")  # fold-CV here: 0.824
    assert f_path >= max(f) - 0.15
    with pytest.raises(ValueError, match="candidates='path' needs a refit"):
        MissingScoreGGMCV(refit=None, **kw).fit(X)
    with pytest.raises(ValueError, match="candidates must be one of"):
        MissingScoreGGMCV(candidates="folds", **kw).fit(X)


def test_shao_scheme_refits_on_one_fold_and_scores_on_the_rest():
    """scheme="shao" (default) swaps K-fold's roles: each split's loss is the held-out loss on
    the other K - 1 folds of the edge set refitted on one fold (recomputed here by hand), with
    the training fold's covariance as the preconditioner; "kfold" is the classical split."""
    from sklearn.model_selection import KFold

    from icml25.missing_score.baselines import pairwise_covariance
    from icml25.missing_score.selection import lift_pd

    X, _ = _chain(d=6, n=300, seed=5)
    kw = dict(alphas=4, cv=3, ggm_params={"n_iter_start": 30, "n_iter_per_alpha": 3},
              selection="cv", random_state=0)
    for scheme, pre in (("shao", "covariance"), ("kfold", "identity"), ("shao", "identity")):
        cv = MissingScoreGGMCV(scheme=scheme, preconditioner=pre, **kw).fit(X)
        path = cv._ggm(alpha=float(cv.cv_alphas_[-1]), alpha_max=float(cv.cv_alphas_[0]),
                       n_alphas=4, n_iter_polish=0).fit(X)
        Z = (X - path.location_) / path.scale_
        sc = np.outer(path.scale_, path.scale_)
        for i, (tr, te) in enumerate(KFold(3, shuffle=True,
                                           random_state=cv._fold_seed()).split(X)):
            if scheme == "shao":
                tr, te = te, tr
            S = pairwise_covariance(Z[tr])
            A = lift_pd(S) if pre == "covariance" else None
            want = [held_out_loss(gaussian_support_refit(S, np.abs(P * sc) > path.threshold),
                                  np.zeros(6), Z[te], A) for P in path.path_]
            np.testing.assert_allclose(cv.cv_results_[f"split{i}_test_loss"], want,
                                       rtol=1e-10)
    with pytest.raises(ValueError, match="scheme must be one of"):
        MissingScoreGGMCV(scheme="loo", **kw).fit(X)
    with pytest.raises(ValueError, match="preconditioner must be one of"):
        MissingScoreGGMCV(preconditioner="none", **kw).fit(X)
    with pytest.raises(ValueError, match="refits on one fold of 5 rows, fewer than d \\+ 1"):
        MissingScoreGGMCV(**{**kw, "cv": 60}).fit(X)


def test_n_repeats_averages_fresh_splits_and_keeps_the_first():
    """n_repeats=R scores R K-fold splits: the first is the n_repeats=1 split (same losses),
    the others are different shuffles of the rows, and the mean is over all K x R splits."""
    X, _ = _chain(d=6, n=300, seed=5)
    kw = dict(alphas=4, cv=3, ggm_params={"n_iter_start": 30, "n_iter_per_alpha": 3},
              selection="cv", random_state=0)
    one = MissingScoreGGMCV(n_repeats=1, **kw).fit(X)
    three = MissingScoreGGMCV(n_repeats=3, **kw).fit(X)
    assert "split2_test_loss" in one.cv_results_ and "split3_test_loss" not in one.cv_results_
    r1, r3 = one.cv_results_, three.cv_results_
    for i in range(3):
        np.testing.assert_array_equal(r3[f"split{i}_test_loss"], r1[f"split{i}_test_loss"])
    splits = np.array([r3[f"split{i}_test_loss"] for i in range(9)])
    assert "split9_test_loss" not in r3
    assert not np.allclose(splits[3:6], splits[:3])  # a fresh shuffle, not the same split
    np.testing.assert_allclose(r3["mean_test_loss"], splits.mean(axis=0))
    assert three.alpha_ == three.cv_alphas_[np.argmin(r3["mean_test_loss"])]
    folds = list(three._splits(X, 3))
    assert len(folds) == 9 and all(np.sort(np.concatenate([te for _, te in folds[3 * r:3 * r + 3]]))
                                   .tolist() == list(range(300)) for r in range(3))
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="n_repeats must be an integer >= 1"):
            MissingScoreGGMCV(n_repeats=bad, **kw).fit(X)


def test_observed_loglik_is_the_gaussian_marginal_likelihood():
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(3)
    A = rng.normal(size=(5, 5))
    P = A @ A.T + np.eye(5)
    mu = rng.normal(size=5)
    X = rng.normal(size=(40, 5))
    X[rng.random(X.shape) < 0.3] = np.nan
    S = np.linalg.inv(P)
    want = 0.0
    for x in X:
        o = ~np.isnan(x)
        if o.any():
            want += multivariate_normal(mu[o], S[np.ix_(o, o)]).logpdf(x[o])
    assert observed_loglik(P, mu, X) == pytest.approx(want, rel=1e-10)
    assert observed_loglik(-P, mu, X) == -np.inf  # not positive definite
    assert extended_bic(-np.inf, 3, 100, 5) == np.inf
    assert extended_bic(-10.0, 2, 100, 5, gamma=0.0) == pytest.approx(20 + 2 * np.log(100))
    assert extended_bic(-10.0, 2, 100, 5, gamma=1.0) == pytest.approx(
        20 + 2 * np.log(100) + 8 * np.log(5))


def test_gaussian_support_refit_is_the_covariance_selection_mle():
    """The MLE with a zero pattern matches S on the support and the diagonal, has exact zeros
    elsewhere, is the inverse of S with the full support, and its likelihood never falls as
    edges are added (nested supports)."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(7, 7))
    S = A @ A.T / 7 + np.eye(7)
    chain = np.eye(7, k=1, dtype=bool) | np.eye(7, k=-1, dtype=bool)
    P = gaussian_support_refit(S, chain)
    on = chain | np.eye(7, dtype=bool)
    np.testing.assert_allclose(np.linalg.inv(P)[on], S[on], atol=1e-8)
    assert np.all(P[~on] == 0) and np.linalg.eigvalsh(P).min() > 0
    np.testing.assert_allclose(gaussian_support_refit(S, ~np.eye(7, dtype=bool)),
                               np.linalg.inv(S), atol=1e-8)

    def loglik(P):
        return np.linalg.slogdet(P)[1] - np.trace(S @ P)

    order = np.argsort(-np.abs(np.linalg.inv(S))[np.triu_indices(7, 1)])
    iu = np.triu_indices(7, 1)
    values, sup = [], np.zeros((7, 7), bool)
    for k in order:
        sup[iu[0][k], iu[1][k]] = sup[iu[1][k], iu[0][k]] = True
        values.append(loglik(gaussian_support_refit(S, sup)))
    assert np.all(np.diff(values) >= -1e-9)
    # an indefinite pairwise covariance is lifted, not failed on
    bad = np.array([[1.0, 0.99, -0.99], [0.99, 1.0, 0.99], [-0.99, 0.99, 1.0]])
    assert np.linalg.eigvalsh(bad).min() < 0
    assert np.linalg.eigvalsh(gaussian_support_refit(bad, ~np.eye(3, dtype=bool))).min() > 0


def test_one_se_rule_moves_to_the_sparsest_point_within_one_standard_error():
    mean = np.array([5.0, 3.0, 2.2, 2.0, 2.1])  # index 0 = largest penalty
    std = np.full(5, 0.6)  # s.e. with 4 folds: 0.3
    assert one_se_index(mean, std, 4) == 2
    assert one_se_index(mean, np.zeros(5), 4) == 3
    assert one_se_index(np.array([np.inf, 1.0, 2.0]), np.ones(3), 4) == 1


def test_ebic_selects_the_chain_and_the_estimate_is_the_scored_path_point():
    """Chain graph, d = 8, n = 600, 30% MCAR: the extended-BIC choice is the best penalty on
    the path (oracle) up to 0.1 F1, the returned precision is exactly the full-data path
    point it scored, and a larger gamma never picks a denser graph."""
    X, adj = _chain()
    est = MissingScoreGGMCV(alphas=12, selection="ebic", random_state=0).fit(X)
    r = est.ebic_results_
    k = int(np.argmin(r["ebic"]))
    assert est.alpha_ == pytest.approx(est.cv_alphas_[k]) and not hasattr(est, "cv_results_")
    full = MissingScoreGGM(alpha=est.cv_alphas_[-1], alpha_max=est.cv_alphas_[0], n_alphas=12,
                           n_iter_polish=0, n_iter_path_polish=est.path_polish,
                           random_state=0).fit(X)
    np.testing.assert_allclose(est.precision_, full.path_[k], rtol=1e-5, atol=1e-7)
    sc = np.outer(full.scale_, full.scale_)
    f = [_f1(P * sc, adj, full.threshold) for P in full.path_]
    f_sel = _f1(est.precision_ * sc, adj, full.threshold)
    print(f"F1: ebic {f_sel:.3f}, oracle {max(f):.3f}, path {np.round(f, 2)}")
    assert f_sel >= max(f) - 0.1, (f_sel, max(f))
    e0, e1 = ebic_path(full, X, 0.0), ebic_path(full, X, 2.0)
    assert e1["n_edges"][np.argmin(e1["ebic"])] <= e0["n_edges"][np.argmin(e0["ebic"])]


def test_cv_bad_parameters():
    X, _ = _chain(d=4, n=60)
    with pytest.raises(ValueError, match="cv must be >= 2"):
        MissingScoreGGMCV(cv=1).fit(X)
    with pytest.raises(ValueError, match="log-spaced"):
        MissingScoreGGMCV(alphas=[1.0, 0.5, 0.1]).fit(X)
    with pytest.raises(ValueError, match="ggm_params may not set"):
        MissingScoreGGMCV(ggm_params={"alpha": 0.1}).fit(X)
    with pytest.raises(ValueError, match="selection must be one of"):
        MissingScoreGGMCV(selection="aic").fit(X)
    with pytest.raises(ValueError, match="ebic_gamma"):
        MissingScoreGGMCV(selection="ebic", ebic_gamma=-1).fit(X)


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
    # the generic density fit warns the same way
    from icml25.missing_score import GaussianModel, fit_density

    with pytest.warns(TooFewCompleteRowsWarning, match=f"the {n_complete} fully observed"):
        fit_density(GaussianModel(8), X, "complete", n_iter=2, seed=0)
    with pytest.raises(ValueError, match="at least one fully observed row"):
        fit_density(GaussianModel(2), np.array([[1.0, np.nan], [np.nan, 2.0]]), "complete",
                    n_iter=1)


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


def _selection_targets(graph: str, seeds, d=20, n=500, p_missing=0.3, selection="ebic"):
    """Per seed: (best F1 on the full-data path = the oracle, F1 of MissingScoreGGMCV's
    estimate, F1 of sklearn's GraphicalLassoCV on mean-imputed standardised data). With
    path polishing the estimate is exactly the full-data path point at alpha_, so the oracle is
    the best the rule could have picked (benchmarks/missing_score_selection.py, all rules)."""
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
            est = MissingScoreGGMCV(selection=selection, random_state=seed).fit(X)
            full = MissingScoreGGM(alpha=est.cv_alphas_[-1], alpha_max=est.cv_alphas_[0],
                                   n_alphas=est.cv_alphas_.size, n_iter_polish=0,
                                   n_iter_path_polish=est.path_polish, random_state=seed).fit(X)
            Xm = np.where(np.isnan(X), np.nanmean(X, 0), X)
            Xm = (Xm - Xm.mean(0)) / Xm.std(0)
            g = GraphicalLassoCV().fit(Xm)
        thr = full.threshold
        sc = np.outer(full.scale_, full.scale_)
        oracle = max(_f1(Pk * sc, adj, thr) for Pk in full.path_)
        out.append((oracle, _f1(est.precision_ * sc, adj, thr), _f1(g.precision_, adj, 1e-4)))
    return np.array(out)


@pytest.mark.slow
@pytest.mark.timeout(5400)  # 20 data sets, three or four path fits each
def test_selection_rules_reach_their_f1_targets():
    """d = 20, n = 500, 30% MCAR. The CLI's default, extended BIC (gamma 0.5), on its
    validation seeds 5-9 (its settings were chosen on seeds 0-4), and the class default,
    Shao's CV with the covariance-preconditioned loss and its minimum, on the seeds 10-14 that
    no choice looked at (chosen on seeds 0-4; docs/missing_score.md, 'Choosing the penalty'):
    each comes within 0.05 of the best penalty on the path on both graphs and beats
    GraphicalLassoCV on mean-imputed data on the random sparse graph."""
    star = _selection_targets("star", range(5, 10))
    sparse = _selection_targets("sparse", range(5, 10))
    print("ebic: star (oracle, ebic, glassoCV):", star.mean(0).round(3),
          "sparse:", sparse.mean(0).round(3))
    s, r = star.mean(0), sparse.mean(0)
    assert s[1] >= s[0] - 0.05 and r[1] >= r[0] - 0.05, (s, r)
    assert r[1] > r[2], r
    cv_star = _selection_targets("star", range(10, 15), selection="cv").mean(0)
    cv_sparse = _selection_targets("sparse", range(10, 15), selection="cv").mean(0)
    print("cv (shao, covariance, minimum): star (oracle, cv, glassoCV):", cv_star.round(3),
          "sparse:", cv_sparse.round(3))
    assert cv_star[1] >= cv_star[0] - 0.05, cv_star
    assert cv_sparse[1] >= cv_sparse[0] - 0.05, cv_sparse
    assert cv_sparse[1] > cv_sparse[2], cv_sparse
