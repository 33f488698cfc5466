"""MissingScoreGGM and the glasso baselines."""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from sklearn.metrics import roc_auc_score  # noqa: E402

from icml25.missing_score import (  # noqa: E402
    MissingScoreGGM,
    em_gaussian,
    em_glasso,
    glasso_mean_impute,
    glasso_pairwise,
    mcar_mask,
    pairwise_covariance,
    sample_gaussian,
    star_precision,
)

FAST = dict(n_alphas=15, n_iter_start=150, n_iter_per_alpha=10)


def _chain(d=6, rho=0.4):
    P = np.eye(d)
    for i in range(d - 1):
        P[i, i + 1] = P[i + 1, i] = rho
    return P, (np.abs(P) > 0) & ~np.eye(d, dtype=bool)


def _data(P, n, p_miss, seed):
    rng = np.random.default_rng(seed)
    X = sample_gaussian(n, np.full(len(P), 2.0), P, rng)
    return np.where(mcar_mask(X.shape, p_miss, rng), np.nan, X)


def _auc(adj, scores):
    iu = np.triu_indices_from(adj, 1)
    return roc_auc_score(adj[iu], scores[iu])


@pytest.mark.parametrize("method", ["iw", "em"])
def test_recovers_a_small_graph(method):
    P, adj = _chain()
    X = _data(P, 2000, 0.3, seed=0)
    est = MissingScoreGGM(method=method, alpha=1e-4, random_state=0, lr=0.05, **FAST).fit(X)
    assert _auc(adj, est.edge_scores_) == 1.0
    # at a small penalty the precision (data units: unit variances) is close to the truth
    err = np.linalg.norm(est.precision_ - P) / np.linalg.norm(P)
    assert err < 0.15, err
    assert est.path_.shape == (len(est.alphas_), 6, 6)
    assert np.all(np.diff(est.alphas_) < 0)
    assert np.allclose(est.edge_scores_, est.edge_scores_.T)
    assert np.allclose(est.covariance_ @ est.precision_, np.eye(6), atol=1e-8)
    assert est.edges()[0][2] >= est.edges()[-1][2]


def test_variational_runs_and_finds_the_graph():
    P, adj = _chain(d=5, rho=0.45)
    X = _data(P, 600, 0.3, seed=1)
    est = MissingScoreGGM(method="variational", alpha=1e-3, n_alphas=8, n_iter_start=60,
                          n_iter_per_alpha=10, var_steps=2, var_hidden=(16,), lr=0.05,
                          random_state=0).fit(X)
    assert _auc(adj, est.edge_scores_) > 0.9


@pytest.mark.parametrize("method", ["iw", "variational", "em", "zeroed"])
def test_no_nan_leaks_under_heavy_missingness(method):
    P, _ = star_precision(8, np.random.default_rng(2))
    X = _data(P, 150, 0.8, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropped empty rows, indefinite precision
        est = MissingScoreGGM(method=method, n_alphas=4, n_iter_start=20, n_iter_per_alpha=5,
                              var_steps=1, var_hidden=(8,), random_state=0).fit(X)
    for name in ("precision_", "covariance_", "edge_scores_", "path_", "alphas_"):
        assert np.all(np.isfinite(getattr(est, name))), name


def test_same_seed_same_answer():
    X = _data(_chain()[0], 300, 0.3, seed=3)
    kw = dict(n_alphas=4, n_iter_start=20, n_iter_per_alpha=5, random_state=7)
    a, b = MissingScoreGGM(**kw).fit(X), MissingScoreGGM(**kw).fit(X)
    assert np.array_equal(a.path_, b.path_)


def test_clear_errors():
    X = _data(_chain()[0], 50, 0.2, seed=4)
    fast = dict(n_alphas=2, n_iter_start=2, n_iter_per_alpha=2)
    bad = X.copy()
    bad[:, 3] = np.nan
    with pytest.raises(ValueError, match=r"no observed value: \[3\]"):
        MissingScoreGGM(**fast).fit(bad)
    rows = X.copy()
    rows[[0, 5]] = np.nan
    with pytest.warns(UserWarning, match="2 row\\(s\\) of X have no observed value"):
        est = MissingScoreGGM(**fast).fit(rows)
    assert np.all(np.isfinite(est.precision_))
    with pytest.raises(TypeError, match="must be numeric"):
        MissingScoreGGM(**fast).fit(np.array([["a", "b"], ["c", "d"]], dtype=object))
    with pytest.raises(ValueError, match="infinity"):
        MissingScoreGGM(**fast).fit(np.where(np.isnan(X), np.inf, X))
    with pytest.raises(ValueError, match="method must be one of"):
        MissingScoreGGM(method="mice", **fast).fit(X)
    with pytest.raises(ValueError, match="alpha must be"):
        MissingScoreGGM(alpha=-1, **fast).fit(X)
    with pytest.raises(ValueError, match="2D|2-D|Expected 2D"):
        MissingScoreGGM(**fast).fit(X[:, 0])


def test_sklearn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check_estimator(MissingScoreGGM(n_alphas=3, n_iter_start=10, n_iter_per_alpha=5),
                              on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in res
              if r["status"] == "failed"]
    assert not failed, failed
    assert sum(r["status"] == "passed" for r in res) >= 30


def test_em_gaussian_matches_sample_moments_on_complete_data_and_recovers_under_mcar():
    P, _ = _chain()
    rng = np.random.default_rng(5)
    X = sample_gaussian(4000, np.zeros(6), P, rng)
    mu, S, _ = em_gaussian(X)
    assert np.allclose(mu, X.mean(0)) and np.allclose(S, np.cov(X.T, bias=True))
    assert np.allclose(pairwise_covariance(X), np.cov(X.T, bias=True))
    Xn = np.where(mcar_mask(X.shape, 0.4, rng), np.nan, X)
    mu2, S2, _ = em_gaussian(Xn)
    # the EM estimate stays within a few complete-data standard errors of the truth
    se = np.sqrt((np.linalg.inv(P) ** 2 + np.outer(*[np.diag(np.linalg.inv(P))] * 2)) / 2400)
    assert np.all(np.abs(S2 - np.linalg.inv(P)) < 5 * se)


def _em_one_step_by_rows(X, mu, S):
    """One EM step written row by row from the textbook conditional-Gaussian formulas."""
    n, d = X.shape
    Xhat, C = X.copy(), np.zeros((d, d))
    for i in range(n):
        m = np.isnan(X[i])
        if not m.any():
            continue
        o = ~m
        B = S[np.ix_(m, o)] @ np.linalg.inv(S[np.ix_(o, o)])
        Xhat[i, m] = mu[m] + B @ (X[i, o] - mu[o])
        C[np.ix_(m, m)] += S[np.ix_(m, m)] - B @ S[np.ix_(o, m)]
    mu_new = Xhat.mean(0)
    return mu_new, ((Xhat - mu_new).T @ (Xhat - mu_new) + C) / n


@pytest.mark.parametrize("p_missing", [0.2, 0.7])
def test_batched_em_step_and_pairwise_covariance_match_row_by_row_formulas(p_missing):
    """The batched E-step (k x k blocks of P, or S_oo when most entries are missing) and the
    all-pairs covariance equal their one-row-at-a-time / one-pair-at-a-time definitions."""
    rng = np.random.default_rng(7)
    P, _ = _chain(d=7)
    d = P.shape[0]
    X = sample_gaussian(60, np.zeros(d), P, rng)
    X[mcar_mask(X.shape, p_missing, rng)] = np.nan
    X = X[~np.isnan(X).all(1)]
    obs = ~np.isnan(X)
    mu0 = np.array([X[obs[:, j], j].mean() for j in range(d)])
    S0 = np.diag([X[obs[:, j], j].var() + 1e-6 for j in range(d)])
    want_mu, want_S = _em_one_step_by_rows(X, mu0, S0)
    mu1, S1, it = em_gaussian(X, max_iter=1)
    assert it == 1
    np.testing.assert_allclose(mu1, want_mu, atol=1e-12)
    np.testing.assert_allclose(S1, 0.5 * (want_S + want_S.T), atol=1e-12)
    pair = np.zeros((d, d))
    for i in range(d):
        for j in range(d):
            both = obs[:, i] & obs[:, j]
            a, b = X[both, i], X[both, j]
            pair[i, j] = np.mean((a - a.mean()) * (b - b.mean())) if both.sum() >= 2 else 0.0
    np.testing.assert_allclose(pairwise_covariance(X), pair, atol=1e-12)


@pytest.mark.parametrize("baseline", [glasso_mean_impute, glasso_pairwise, em_glasso])
def test_glasso_baselines_find_an_easy_graph(baseline):
    P, adj = _chain()
    res = baseline(_data(P, 1000, 0.3, seed=6))
    assert _auc(adj, res.edge_scores) > 0.95
    assert res.precision.shape == (6, 6)


@pytest.mark.slow
def test_speed_target_iw_path_d100_under_60s():
    """The 100-penalty IW path at d = 100, n = 1000, 50% missing in under 60 s of CPU time on
    one thread. CPU time (``time.process_time``), not wall clock: on a shared machine the
    process waits for a core, which wall clock counts and CPU time does not (docs/missing_score
    .md: 8.7 s CPU against 87.7 s wall at load 13-24). Every pool is held to one thread so the
    CPU time is that of one core; a fit 7x slower than today's still fails."""
    import time

    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    P, adj = star_precision(100, rng)
    X = sample_gaussian(1000, np.zeros(100), P, rng)
    X[mcar_mask(X.shape, 0.5, rng)] = np.nan
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu, wall = time.process_time(), time.perf_counter()
            est = MissingScoreGGM(method="iw", alpha=1e-4, n_alphas=100, random_state=0).fit(X)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        torch.set_num_threads(threads)
    print(f"IW path d=100: {cpu:.1f} s CPU, {wall:.1f} s wall")
    assert cpu < 60, (cpu, wall)
    assert _auc(adj, est.edge_scores_) > 0.75
