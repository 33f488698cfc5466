"""RiskPosterior: closed forms, exact vs Monte Carlo, common random numbers, input checks."""

import numpy as np
import pytest
from scipy import stats

from icml25.conformal import RiskPosterior
from icml25.conformal.posterior import (
    mc_prob_below,
    mc_samples,
    support_values,
    uniform_order_statistics,
)


def dirichlet_reference(losses, bound, size, seed):
    """Independent sampler straight from the definition: Dir(1,...,1) weights on (l_1..l_n, B)."""
    x = np.append(np.asarray(losses, float), bound)
    w = np.random.default_rng(seed).dirichlet(np.ones(x.size), size=size)
    return w @ x


def test_mean_and_variance_match_closed_forms_and_definition():
    rng = np.random.default_rng(1)
    losses = rng.uniform(0, 2, size=15)
    post = RiskPosterior(losses, bound=2.0)
    x = np.append(losses, 2.0)
    assert post.mean == pytest.approx((losses.sum() + 2.0) / 16, rel=1e-12)
    assert post.var == pytest.approx(((x - x.mean()) ** 2).sum() / (16 * 17), rel=1e-12)
    ref = dirichlet_reference(losses, 2.0, 200_000, 2)
    se_mean = ref.std() / np.sqrt(ref.size)
    assert abs(ref.mean() - post.mean) < 4 * se_mean
    # SE of a sample variance ~ var * sqrt(2 / N) (close to normal here); 5 SE of slack
    assert abs(ref.var() - post.var) < 5 * post.var * np.sqrt(2 / ref.size)


def test_zero_one_losses_are_exact_beta():
    losses = np.array([0] * 17 + [1] * 3, float)
    post = RiskPosterior(losses)
    assert post.is_exact
    beta = stats.beta(3 + 1, 20 - 3)
    grid = np.linspace(0.01, 0.6, 25)
    np.testing.assert_allclose(post.cdf(grid), beta.cdf(grid), atol=1e-12)
    np.testing.assert_allclose(post.quantile([0.05, 0.5, 0.95]), beta.ppf([0.05, 0.5, 0.95]),
                               atol=1e-10)
    assert post.mean == pytest.approx(beta.mean())
    assert post.var == pytest.approx(beta.var())


def test_exact_and_monte_carlo_agree_within_sampling_error():
    losses = np.array([0] * 40 + [1] * 6, float)
    exact = RiskPosterior(losses)
    mc = RiskPosterior(losses, exact=False, n_draws=20_000, random_state=3)
    assert not mc.is_exact
    grid = np.linspace(0.05, 0.35, 13)
    p = exact.cdf(grid)
    tol = 4 * np.sqrt(p * (1 - p) / 20_000) + 1e-9
    assert np.all(np.abs(mc.cdf(grid) - p) <= tol)
    # Quantiles: the MC quantile's CDF level should be within the same band of q.
    for q in (0.1, 0.5, 0.95):
        level = exact.cdf(mc.quantile(q))
        assert abs(level - q) <= 4 * np.sqrt(q * (1 - q) / 20_000) + 1e-4
    # KS test of fresh draws against the Beta law
    draws = mc.sample(5_000, rng=4)
    assert stats.kstest(draws, stats.beta(7, 40).cdf).pvalue > 1e-3


def test_two_valued_losses_with_top_at_bound_are_exact():
    losses = np.full(12, 0.3)
    post = RiskPosterior(losses)
    assert post.is_exact
    # L+ = 0.3 + 0.7 * Beta(1, 12)
    ref = stats.beta(1, 12)
    assert post.cdf(0.4) == pytest.approx(ref.cdf(0.1 / 0.7), abs=1e-12)
    mc = RiskPosterior(losses, exact=False, n_draws=40_000)
    assert abs(mc.cdf(0.4) - post.cdf(0.4)) < 4 * np.sqrt(0.25 / 40_000)


def test_general_losses_monte_carlo_matches_definition_ks():
    rng = np.random.default_rng(5)
    losses = rng.integers(0, 5, size=10) / 4  # few distinct values: aggregated path
    post = RiskPosterior(losses, n_draws=20_000, random_state=6)
    ref = dirichlet_reference(losses, 1.0, 20_000, 7)
    assert stats.ks_2samp(post.sample(20_000, rng=8), ref).pvalue > 1e-3
    # The CRN cdf agrees with the reference's empirical cdf within two-sample error
    for a in (0.3, 0.5, 0.7):
        p = (ref <= a).mean()
        assert abs(post.cdf(a) - p) < 4 * np.sqrt(2 * p * (1 - p) / 20_000) + 1e-9


def test_gather_and_dense_paths_give_identical_draws():
    rng = np.random.default_rng(9)
    losses = rng.integers(0, 3, size=(4, 200)) / 2  # 3 values -> gather path
    t = uniform_order_statistics(200, 500, 0)
    x = support_values(losses, 1.0)
    dense = x[:, -1:] - np.diff(x, axis=1) @ t.T
    np.testing.assert_allclose(mc_samples(x, t), dense, atol=1e-12)
    np.testing.assert_allclose(mc_prob_below(x, t, 0.6), (dense <= 0.6).mean(axis=1))
    single = (rng.random((5, 200)) < 0.1).astype(float)  # one jump: binary-search path
    xs = support_values(single, 1.0)
    brute = (mc_samples(xs, t) <= 0.12).mean(axis=1)
    np.testing.assert_allclose(mc_prob_below(xs, t, 0.12), brute)


def test_common_random_numbers_make_quantiles_monotone_in_lambda():
    rng = np.random.default_rng(10)
    scores = rng.uniform(size=(30, 4))
    lambdas = np.linspace(0, 1, 41)
    losses = np.stack([(scores > lam).mean(axis=1) for lam in lambdas])  # (L, n), decreasing
    # Monte Carlo for every row: an all-zero row would otherwise take the closed form
    post = RiskPosterior(losses, n_draws=2_000, random_state=0, exact=False)
    q = post.quantile(0.95)
    assert np.all(np.diff(q) <= 1e-12)
    assert np.all(np.diff(post.cdf(0.4)) >= -1e-12)


def test_quantile_and_cdf_are_consistent_for_monte_carlo():
    losses = np.random.default_rng(11).uniform(size=25)
    post = RiskPosterior(losses, n_draws=3_000)
    for a in np.linspace(0.3, 0.8, 11):
        for b in (0.5, 0.9, 0.95):
            assert (post.quantile(b) <= a) == (post.cdf(a) >= b)


def test_official_indexing_keeps_the_mean_and_widens_the_spread():
    losses = np.random.default_rng(12).uniform(size=20)
    paper = RiskPosterior(losses)
    official = RiskPosterior(losses, variant="official")
    assert official.mean == pytest.approx(paper.mean)
    assert official.var > paper.var


def test_two_dimensional_losses_give_arrays():
    losses = np.random.default_rng(13).integers(0, 2, size=(6, 30)).astype(float)
    post = RiskPosterior(losses)
    assert post.mean.shape == (6,)
    assert post.cdf(0.5).shape == (6,)
    assert post.cdf(np.full(6, 0.5)).shape == (6,)
    assert post.quantile(0.9).shape == (6,)
    assert post.sample(10, rng=0).shape == (6, 10)
    assert post[2].mean == pytest.approx(post.mean[2])
    with pytest.raises(ValueError, match="points must be"):
        post.cdf(np.zeros(4))


@pytest.mark.parametrize(("losses", "bound", "match"), [
    ([0.1, np.nan], 1.0, "NaN"),
    ([0.1, 1.5], 1.0, r"\[0, B\]"),
    ([-0.1, 0.5], 1.0, r"\[0, B\]"),
    (np.zeros((2, 2, 2)), 1.0, "dimension"),
    ([], 1.0, "empty"),
    ([0.1], 0.0, "positive"),
    ([0.1], float("inf"), "positive"),
])
def test_bad_input_is_rejected(losses, bound, match):
    with pytest.raises(ValueError, match=match):
        RiskPosterior(losses, bound=bound)


def test_quantile_levels_must_be_probabilities():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        RiskPosterior([0.0, 1.0]).quantile(1.5)


def test_exact_true_refuses_general_losses():
    with pytest.raises(ValueError, match="exact=True"):
        RiskPosterior([0.2, 0.5, 0.0], exact=True)


def test_plot_returns_axes():
    ax = RiskPosterior([0, 0, 1, 0, 0, 0, 0, 0]).plot(alpha=0.4, beta=0.95)
    assert ax.get_xlabel() == "risk"
