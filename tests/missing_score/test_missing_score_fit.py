"""Fitting density models: the zeroed baseline's bias, truncated score matching, recovery."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from icml25.missing_score import (  # noqa: E402
    Box,
    GaussianModel,
    fisher_divergence,
    fit_density,
    mcar_mask,
    sample_gaussian,
    zeroed_population_minimiser,
)

S3 = np.array([[1, .8, .6], [.8, 1, .7], [.6, .7, 1.]])


def _fit(X, method, seed=0, n_iter=250, **kw):
    m = GaussianModel(X.shape[1], learn_mean=kw.pop("learn_mean", True))
    fit_density(m, X, method, n_iter=n_iter, lr=0.05, batch_size=300, seed=seed, lr_decay=True,
                **kw)
    return m.precision().detach().numpy(), m.mean.detach().numpy()


def test_zeroed_converges_to_the_schur_complement_not_the_precision():
    rng = np.random.default_rng(5)
    X = rng.multivariate_normal(np.zeros(3), S3, size=3000)
    X[1:, 2] = np.nan  # coordinate 2 observed once (an all-NaN column is rejected)
    Ph, _ = _fit(X, "zeroed", n_iter=400, learn_mean=False)
    Xo = X[1:, :2]
    schur_sample = np.linalg.inv(Xo.T @ Xo / len(Xo))  # minimiser of the sample zeroed loss
    assert np.allclose(zeroed_population_minimiser(S3, [0, 1]),
                       np.linalg.inv(S3)[:2, :2] - np.outer(np.linalg.inv(S3)[:2, 2],
                                                            np.linalg.inv(S3)[2, :2])
                       / np.linalg.inv(S3)[2, 2])
    assert np.abs(Ph[:2, :2] - schur_sample).max() < 0.05
    # and far from the true block (true P_oo - Schur complement has entries ~1)
    assert np.abs(Ph[:2, :2] - np.linalg.inv(S3)[:2, :2]).max() > 0.5


def test_zeroed_is_biased_under_mcar_while_marginal_methods_are_not():
    rng = np.random.default_rng(1)
    P = np.linalg.inv(S3)
    X = rng.multivariate_normal(np.zeros(3), S3, size=3000)
    Xn = np.where(mcar_mask(X.shape, 0.4, rng), np.nan, X)
    fd = {m: fisher_divergence(*_fit(Xn, m), P, np.zeros(3))
          for m in ("zeroed", "iw", "em", "exact")}
    # zeroed converges to a wrong answer: its error is several times the others'
    assert fd["zeroed"] > 3 * max(fd["iw"], fd["em"], fd["exact"]), fd
    assert fd["exact"] < 0.3, fd


def test_truncated_score_matching_recovers_a_box_truncated_gaussian():
    rng = np.random.default_rng(2)
    P = np.linalg.inv(np.array([[1.0, 0.5], [0.5, 1.0]]))
    mu = np.array([0.3, 0.0])
    box = Box([0.0, -np.inf], [np.inf, np.inf])  # cuts about 40% of the mass
    X = sample_gaussian(3000, mu, P, rng, domain=box)
    fd_trunc = fisher_divergence(*_fit(X, "complete", n_iter=400, domain=box), P, mu)
    fd_plain = fisher_divergence(*_fit(X, "complete", n_iter=400), P, mu)
    assert fd_trunc < 0.15, fd_trunc
    assert fd_plain > 3 * fd_trunc, (fd_plain, fd_trunc)


def test_iw_on_truncated_data_with_missing_entries():
    rng = np.random.default_rng(3)
    P = np.linalg.inv(S3)
    mu = np.full(3, 0.5)
    box = Box([-0.5, -np.inf, -np.inf])
    X = sample_gaussian(3000, mu, P, rng, domain=box)
    Xn = np.where(mcar_mask(X.shape, 0.2, rng), np.nan, X)
    fd_iw = fisher_divergence(*_fit(Xn, "iw", domain=box, proposal_scale=2.0), P, mu)
    fd_zero = fisher_divergence(*_fit(Xn, "zeroed", domain=box), P, mu)
    assert np.isfinite(fd_iw) and fd_iw < 0.5 * fd_zero, (fd_iw, fd_zero)


def test_fit_density_rejects_bad_input():
    m = GaussianModel(3)
    with pytest.raises(ValueError, match="3 features|features"):
        fit_density(m, np.zeros((10, 2)), "iw", n_iter=1)
    with pytest.raises(ValueError, match="method must be one of"):
        fit_density(m, np.zeros((10, 3)), "magic", n_iter=1)


@pytest.mark.parametrize("method", ["iw", "em", "variational", "zeroed", "complete"])
def test_non_gaussian_models_train_through_every_objective(method):
    from icml25.missing_score import EnergyModel, ICAModel

    rng = np.random.default_rng(4)
    X = rng.standard_t(5, size=(200, 3)) * 0.5
    X[mcar_mask(X.shape, 0.3, rng)] = np.nan
    w = torch.nn.Parameter(torch.tensor(0.5, dtype=torch.float64))
    user = EnergyModel(lambda x: -(x**2).sum(-1) - torch.nn.functional.softplus(w) * (x**4).sum(-1),
                       dim=3, params=[w])
    for model in (ICAModel(3), user):
        before = [p.detach().clone() for p in model.parameters()]
        hist = fit_density(model, X, method, n_iter=15, lr=0.05, batch_size=64, seed=0,
                           var_hidden=(8,), var_steps=1)
        assert np.all(np.isfinite(hist))
        assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
