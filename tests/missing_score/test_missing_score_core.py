"""Models, domains and objectives against closed forms (Gaussian oracle, autograd, finite
differences)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from icml25.missing_score import (  # noqa: E402
    Box,
    EnergyModel,
    GaussianModel,
    HalfSpace,
    ICAModel,
    Objective,
    exact_conditional_sampler,
    exact_marginal_loss,
    fisher_divergence,
    iw_loss,
    marginal_precision,
    mcar_mask,
    zeroed_loss,
)
from icml25.missing_score.fitting import to_tensors  # noqa: E402
from icml25.missing_score.objectives import draw_proposal  # noqa: E402


def _problem(seed=0, d=4, n=400, p_miss=0.3):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    P = A @ A.T / d + np.eye(d)
    mu = rng.normal(scale=0.3, size=d)
    X = rng.multivariate_normal(mu, np.linalg.inv(P), size=n)
    Xn = np.where(mcar_mask(X.shape, p_miss, rng), np.nan, X)
    return P, mu, Xn


def _torch_exact_marginal_loss(model, Xn):
    """The closed-form marginal loss as a differentiable torch function (test reference)."""
    obs = ~np.isnan(Xn)
    P, mu = model.precision(), model.mean
    total = 0.0
    for pat in np.unique(obs, axis=0):
        rows = torch.as_tensor(Xn[(obs == pat).all(1)][:, pat])
        o, m = torch.as_tensor(pat), torch.as_tensor(~pat)
        K = P[o][:, o]
        if m.any():
            K = K - P[o][:, m] @ torch.linalg.solve(P[m][:, m], P[m][:, o])
        z = (rows - mu[o]) @ K
        total = total + (z * z).sum() - 2 * torch.trace(K) * rows.shape[0]
    return total / Xn.shape[0]


@pytest.mark.parametrize("param", ["cholesky", "symmetric"])
def test_gaussian_analytic_matches_autograd(param):
    P, mu, _ = _problem()
    x = torch.as_tensor(np.random.default_rng(1).normal(size=(7, 4)))
    a = GaussianModel(4, precision=P, mean=mu, parametrization=param)
    b = GaussianModel(4, precision=P, mean=mu, parametrization=param, analytic=False)
    for u, v in zip(a.score_and_hess_diag(x), b.score_and_hess_diag(x), strict=True):
        assert torch.allclose(u, v, atol=1e-10)
    assert np.allclose(a.precision().detach().numpy(), P, atol=1e-10)


def test_ica_analytic_matches_autograd():
    P, _, _ = _problem()
    x = torch.as_tensor(np.random.default_rng(2).normal(size=(5, 4)))
    a, b = ICAModel(4, theta=P), ICAModel(4, theta=P, analytic=False)
    for u, v in zip(a.score_and_hess_diag(x), b.score_and_hess_diag(x), strict=True):
        assert torch.allclose(u, v, atol=1e-10)


def test_user_energy_plugs_in():
    w = torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64))
    m = EnergyModel(lambda x: -(w * x**4).sum(-1), dim=2, params=[w])
    x = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    _, s, h = m.score_and_hess_diag(x)
    assert torch.allclose(s, torch.tensor([[-4.0, 8.0]], dtype=torch.float64))
    assert torch.allclose(h, torch.tensor([[-12.0, -24.0]], dtype=torch.float64))
    assert list(m.parameters())[0] is w  # the user's parameters are trainable
    with pytest.raises(ValueError, match="energy must return shape"):
        EnergyModel(lambda x: x, dim=2).log_q(x)


@pytest.mark.parametrize("domain", [Box([-1.0, -np.inf, 0.0], [np.inf, 2.0, 1.0]),
                                    HalfSpace([1.0, -2.0, 0.5], 0.7)])
def test_domain_weights_vanish_on_boundary_and_derivative_is_right(domain):
    rng = np.random.default_rng(3)
    x = torch.as_tensor(rng.uniform(-0.5, 0.9, size=(200, 3)))
    x = x[domain.contains(x)]
    obs = torch.ones_like(x)
    g, dg = domain.weights(x, obs)
    assert torch.all(g >= 0)
    eps = 1e-6
    for j in range(3):
        xp = x.clone()
        xp[:, j] += eps
        fd = (domain.weights(xp, obs)[0][:, j] - g[:, j]) / eps
        near_kink = (g[:, j] - domain.cap).abs() < 1e-5
        assert torch.allclose(fd[~near_kink], dg[~near_kink, j], atol=1e-4)
    # on the boundary the weight is zero
    if isinstance(domain, Box):
        xb = torch.tensor([[-1.0, 0.0, 0.5]], dtype=torch.float64)
        assert domain.weights(xb, torch.ones_like(xb))[0][0, 0] == 0
    else:
        a = domain.normal
        xb = (domain.offset * a).unsqueeze(0)
        assert domain.weights(xb, torch.ones_like(xb))[0].abs().max() < 1e-12
        # rows with a missing entry use g = 1 (the marginal of a half-space is unbounded)
        g2, dg2 = domain.weights(xb, torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64))
        assert torch.all(g2 == 1) and torch.all(dg2 == 0)


def test_marginal_precision_is_schur_complement_of_marginal_covariance():
    P, _, _ = _problem()
    S = np.linalg.inv(P)
    o = np.array([True, False, True, True])
    assert np.allclose(marginal_precision(P, o), np.linalg.inv(S[np.ix_(o, o)]))


def test_iw_with_large_r_approaches_exact_marginal_loss():
    P, mu, Xn = _problem(n=300)
    Pm, mum = P + 0.3 * np.eye(4), mu + 0.1  # evaluate away from the truth
    oracle = exact_marginal_loss(Pm, mum, Xn)
    model = GaussianModel(4, precision=Pm, mean=mum)
    x0, ob = to_tensors(np.nan_to_num(Xn), ~np.isnan(Xn))
    gaps = {}
    for r in (5, 3000):
        vals = [float(iw_loss(model, x0, ob, r, torch.full((4,), 1.5),
                              generator=torch.Generator().manual_seed(s))[1].mean())
                for s in range(3)]
        gaps[r] = abs(np.mean(vals) - oracle)
    # finite-r bias is O(1/r); at r = 3000 the estimate is within 0.2% of the closed form
    assert gaps[3000] < 2e-3 * abs(oracle)
    assert gaps[3000] < gaps[5]


def test_exact_conditional_sampling_matches_oracle_value_and_gradient():
    P, mu, Xn = _problem(n=200)
    model = GaussianModel(4, precision=P + 0.2 * np.eye(4), mean=mu - 0.1)
    x0, ob = to_tensors(np.nan_to_num(Xn), ~np.isnan(Xn))
    obj = Objective("exact", 4, n_draws=4000, generator=torch.Generator().manual_seed(0))
    loss, val = obj(model, x0, ob)
    ref = _torch_exact_marginal_loss(model, Xn)
    assert abs(val - float(ref.detach())) < 5e-3 * abs(float(ref.detach()))
    params = [model.diag_raw, model.off, model.mean]
    g_s = torch.cat([g.ravel() for g in torch.autograd.grad(loss, params)])
    g_r = torch.cat([g.ravel() for g in torch.autograd.grad(ref, params)])
    # the surrogate's gradient is the gradient of the marginal loss (Lemma 4.8)
    assert torch.linalg.norm(g_s - g_r) < 0.03 * torch.linalg.norm(g_r)


def test_exact_sampler_draws_the_model_conditional():
    P, mu, _ = _problem()
    model = GaussianModel(4, precision=P, mean=mu)
    x0 = torch.tensor([[0.5, 0.0, -0.3, 0.0]], dtype=torch.float64)
    ob = torch.tensor([[1.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    draws = exact_conditional_sampler(model)(x0, ob, 40000, torch.Generator().manual_seed(1))
    m, o = np.array([1, 3]), np.array([0, 2])
    S = np.linalg.inv(P)
    cm = mu[m] + S[np.ix_(m, o)] @ np.linalg.solve(S[np.ix_(o, o)], x0.numpy()[0, o] - mu[o])
    cc = S[np.ix_(m, m)] - S[np.ix_(m, o)] @ np.linalg.solve(S[np.ix_(o, o)], S[np.ix_(o, m)])
    got = draws[0][:, m].numpy()
    se = np.sqrt(np.diag(cc) / 40000)
    assert np.all(np.abs(got.mean(0) - cm) < 5 * se)
    assert np.allclose(np.cov(got.T), cc, atol=0.03)
    assert np.all(draws[0][:, o].numpy() == x0.numpy()[0, o])  # observed entries untouched


def test_iw_surrogate_gradient_equals_gradient_through_weights():
    P, mu, Xn = _problem(n=100)
    model = GaussianModel(4, precision=P, mean=mu)
    x0, ob = to_tensors(np.nan_to_num(Xn), ~np.isnan(Xn))
    scale = torch.full((4,), 1.2)
    surr, val = iw_loss(model, x0, ob, 15, scale, generator=torch.Generator().manual_seed(4))
    xk, logp = draw_proposal(x0, ob, 15, scale, None, torch.Generator().manual_seed(4))
    N, r, d = xk.shape
    lq, s, h = model.score_and_hess_diag(xk.reshape(N * r, d))
    w = torch.softmax(lq.reshape(N, r) - logp, -1).unsqueeze(-1)  # NOT detached
    s, h = s.reshape(N, r, d), h.reshape(N, r, d)
    m = (w * s).sum(1)
    direct = (ob * (-m * m + 2 * (w * s * s).sum(1) + 2 * (w * h).sum(1))).sum(-1)
    assert torch.allclose(direct.detach(), val, atol=1e-10)
    params = [model.diag_raw, model.off, model.mean]
    for a, b in zip(torch.autograd.grad(surr.mean(), params),
                    torch.autograd.grad(direct.mean(), params), strict=True):
        assert torch.allclose(a, b, atol=1e-10)


def test_zeroed_loss_is_the_schur_complement_objective():
    # a centred model; the last coordinate always missing: the zeroed loss is
    # ||P_oo x_o||^2 - 2 tr P_oo, minimised at Sigma_oo^{-1} (the Schur complement), not P_oo.
    rng = np.random.default_rng(5)
    S = np.array([[1, .8, .6], [.8, 1, .7], [.6, .7, 1.]])
    X = rng.multivariate_normal(np.zeros(3), S, size=3000)
    X[:, 2] = np.nan
    x0, ob = to_tensors(np.nan_to_num(X), ~np.isnan(X))
    P = np.linalg.inv(S)
    model = GaussianModel(3, precision=P, learn_mean=False)
    val = float(zeroed_loss(model, x0, ob)[1].mean())
    Xo = X[:, :2]
    expect = np.mean(np.sum((Xo @ P[:2, :2]) ** 2, 1)) - 2 * np.trace(P[:2, :2])
    assert abs(val - expect) < 1e-9


def test_fisher_divergence_closed_form():
    P, mu, _ = _problem()
    assert abs(fisher_divergence(P, mu, P, mu)) < 1e-10
    rng = np.random.default_rng(6)
    Ph, muh = P + 0.3 * np.eye(4), mu + 0.2
    X = rng.multivariate_normal(mu, np.linalg.inv(P), size=200000)
    mc = np.sum(((X - mu) @ P - (X - muh) @ Ph) ** 2, 1)
    assert abs(fisher_divergence(Ph, muh, P, mu) - mc.mean()) < 5 * mc.std() / np.sqrt(len(mc))


@pytest.mark.parametrize("kind", ["fisher", "kl"])
def test_variational_family_learns_the_exact_gaussian_conditional(kind):
    from icml25.missing_score import VariationalImputer

    rng = np.random.default_rng(7)
    S = np.array([[1, .6, .5], [.6, 1, .4], [.5, .4, 1.]])
    P = np.linalg.inv(S)
    X = rng.multivariate_normal(np.zeros(3), S, size=512)
    obs = np.ones_like(X, dtype=bool)
    obs[:, 2] = False  # coordinate 2 missing: its conditional is linear in x_0, x_1
    x0, ob = to_tensors(np.where(obs, X, 0.0), obs)
    model = GaussianModel(3, precision=P, learn_mean=False)
    torch.manual_seed(0)
    q = VariationalImputer(3, hidden=(16,))
    opt = torch.optim.Adam(q.parameters(), lr=0.02)
    gen = torch.Generator().manual_seed(0)
    for _ in range(600):
        loss = q.inner_loss(model, x0, ob, kind, r=4, generator=gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        mean = q.net(x0 * ob)[:, 2].numpy()
    exact = -(X[:, :2] @ P[2, :2]) / P[2, 2]
    assert np.sqrt(np.mean((mean - exact) ** 2)) < 0.1 * exact.std()
    assert abs(float(q.std().detach()[2]) - np.sqrt(1 / P[2, 2])) < 0.05
    assert all(p.grad is None or torch.all(p.grad == 0) for p in model.parameters())
