"""Threshold rules: bq / crc / rcps / split against independent formulas; infeasible requests."""

import math
import warnings

import numpy as np
import pytest
from scipy import special, stats

from icml25.conformal import (
    InfeasibleRiskWarning,
    RiskPosterior,
    calibrate,
    calibrate_many,
    calibrate_scores,
    hoeffding_bentkus_pvalue,
    minimum_calibration_size,
    rcps_upper_bound,
)


def fnr_family(n=60, k=6, seed=0, lambdas=None):
    """Multilabel-style losses in [0, 1], non-decreasing in lambda (set = scores >= lambda)."""
    rng = np.random.default_rng(seed)
    scores = rng.uniform(size=(n, k))
    labels = rng.random((n, k)) < 0.4
    labels[np.arange(n), rng.integers(0, k, n)] = True
    lambdas = np.linspace(0, 1, 51) if lambdas is None else lambdas
    losses = np.stack([((scores < lam) & labels).sum(1) / labels.sum(1) for lam in lambdas],
                      axis=1)
    return losses, lambdas


def test_crc_equals_angelopoulos_formula():
    losses, lambdas = fnr_family()
    n = losses.shape[0]
    for alpha in (0.1, 0.2, 0.3):
        res = calibrate(losses, lambdas, alpha, method="crc")
        # CRC for a risk rising in lambda: the largest lambda with n/(n+1) Rhat + B/(n+1) <= alpha
        ok = n / (n + 1) * losses.mean(axis=0) + 1 / (n + 1) <= alpha
        expected = lambdas[np.flatnonzero(ok).max()]
        assert res.lambda_ == expected
        assert res.direction == "increasing"
        assert res.statistic == pytest.approx(res.posterior.mean)


def test_split_is_the_ceil_quantile_rule_and_equals_crc_for_miscoverage():
    rng = np.random.default_rng(1)
    for n in (19, 50, 99, 200):
        scores = rng.exponential(size=n)
        for alpha in (0.05, 0.1, 0.2):
            k = math.ceil((n + 1) * (1 - alpha))
            res = calibrate_scores(scores, alpha, method="split", warn=False)
            expected = np.sort(scores)[k - 1] if k <= n else math.inf
            assert res.lambda_ == expected
            crc = calibrate_scores(scores, alpha, method="crc", warn=False)
            assert crc.lambda_ == expected


def test_bq_is_the_smallest_lambda_with_credibility_beta():
    rng = np.random.default_rng(2)
    scores = rng.uniform(size=(40, 4))
    lambdas = np.linspace(0, 1, 81)
    losses = np.stack([(scores > lam).mean(1) for lam in lambdas], axis=1)  # decreasing
    res = calibrate(losses, lambdas, alpha=0.4, beta=0.9, n_draws=4_000, random_state=5)
    # Brute force with the same common random numbers, every lambda evaluated
    post = RiskPosterior(losses.T, n_draws=4_000, random_state=5, exact=False)
    ok = post.cdf(0.4) >= 0.9
    assert res.lambda_ == lambdas[np.flatnonzero(ok).min()]
    assert res.posterior.cdf(0.4) >= 0.9
    assert res.statistic <= 0.4


def test_bq_on_miscoverage_is_the_exact_beta_rule():
    rng = np.random.default_rng(3)
    n, alpha, beta = 200, 0.1, 0.95
    scores = rng.normal(size=n)
    res = calibrate_scores(scores, alpha, beta, method="bq")
    k_star = max(k for k in range(n) if special.betainc(k + 1, n - k, alpha) >= beta)
    assert res.lambda_ == np.sort(scores)[n - k_star - 1]
    assert res.posterior.is_exact


def test_continuous_bisection_agrees_with_the_grid():
    rng = np.random.default_rng(4)
    scores = rng.exponential(size=150)
    grid = np.sort(scores)
    losses = (scores[:, None] > grid[None, :]).astype(float)
    on_grid = calibrate(losses, grid, 0.1, method="bq")
    cont = calibrate(lambda lam: (scores > lam).astype(float), (0.0, float(grid[-1]) + 1), 0.1,
                     tol=1e-9)
    assert cont.lambda_ == pytest.approx(on_grid.lambda_, abs=1e-8)
    assert cont.lambda_ >= on_grid.lambda_ - 1e-12  # admissible side of the jump


def test_direction_is_detected_both_ways():
    losses, lambdas = fnr_family(seed=5)
    up = calibrate(losses, lambdas, 0.2, method="crc")
    flipped = calibrate(losses[:, ::-1], -lambdas[::-1], 0.2, method="crc")
    assert flipped.direction == "decreasing"
    assert flipped.lambda_ == -up.lambda_


def test_calibrate_many_matches_calibrate_per_row():
    rng = np.random.default_rng(6)
    lambdas = np.linspace(0, 1, 33)
    data = rng.uniform(size=(12, 25, 3))
    table = np.stack([(data > lam).mean(2) for lam in lambdas], axis=2)  # (T, n, L)

    def loss_fn(rows, idx):
        return table[rows, :, idx]

    for method, kw in (("bq", {"n_draws": 2_000}), ("crc", {}), ("rcps", {})):
        batch = calibrate_many(loss_fn, lambdas, 12, 0.45, 0.9, method, exact=False, **kw)
        for t in range(12):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InfeasibleRiskWarning)
                one = calibrate(table[t], lambdas, 0.45, 0.9, method, exact=False, **kw)
            assert batch.lambdas[t] == one.lambda_


def test_hoeffding_bentkus_matches_its_definition_and_beats_hoeffding():
    n, alpha = 100, 0.2
    for mean in (0.0, 0.05, 0.1, 0.15):
        h = math.exp(-n * (special.xlogy(mean, mean / alpha)
                           + special.xlogy(1 - mean, (1 - mean) / (1 - alpha))))
        b = math.e * stats.binom.cdf(math.ceil(n * mean), n, alpha)
        assert hoeffding_bentkus_pvalue(mean, alpha, n) == pytest.approx(min(h, b))
    losses = np.random.default_rng(7).uniform(0, 0.3, size=(3, n))
    hb = rcps_upper_bound(losses, 0.95, concentration="hb")
    hoeff = rcps_upper_bound(losses, 0.95, concentration="hoeffding")
    np.testing.assert_allclose(hoeff, losses.mean(1) + math.sqrt(math.log(20) / (2 * n)))
    assert np.all(hb < hoeff)
    assert np.all(hb > losses.mean(1))


def test_minimum_calibration_sizes():
    assert minimum_calibration_size(0.1, 0.95, "bq") == 29
    assert minimum_calibration_size(0.4, 0.95, "bq") == 6
    assert minimum_calibration_size(0.05, 0.95, "bq") == 59
    assert minimum_calibration_size(0.1, method="crc") == 9
    assert minimum_calibration_size(0.1, method="split") == 9
    n = minimum_calibration_size(0.1, 0.95, "rcps", concentration="hoeffding")
    assert math.sqrt(math.log(20) / (2 * n)) <= 0.1 < math.sqrt(math.log(20) / (2 * (n - 1)))


@pytest.mark.parametrize(("method", "n_min"), [("bq", 29), ("crc", 9), ("rcps", 29)])
def test_too_small_n_returns_trivial_predictor_with_warning(method, n_min):
    for n, feasible in ((n_min - 1, False), (n_min, True)):
        scores = np.linspace(0, 1, n)
        grid = np.append(scores, 2.0)  # at lambda=2 every loss is 0
        losses = (scores[:, None] > grid[None, :]).astype(float)
        if feasible:
            with warnings.catch_warnings():
                warnings.simplefilter("error", InfeasibleRiskWarning)
                res = calibrate(losses, grid, 0.1, 0.95, method)
            assert res.feasible and np.isfinite(res.lambda_)
        else:
            with pytest.warns(InfeasibleRiskWarning, match=f"at least n={n_min}"):
                res = calibrate(losses, grid, 0.1, 0.95, method)
            assert not res.feasible
            assert res.lambda_ == math.inf


def test_infeasible_increasing_risk_returns_minus_infinity():
    losses, lambdas = fnr_family(n=5)
    with pytest.warns(InfeasibleRiskWarning, match="at least n="):
        res = calibrate(losses, lambdas, 0.1, method="bq")
    assert res.lambda_ == -math.inf


def test_infeasible_with_enough_points_names_the_minimum_too():
    losses = np.ones((100, 3))  # risk never small enough
    with pytest.warns(InfeasibleRiskWarning, match="minimum n for this request is 29"):
        res = calibrate(losses, [0.0, 1.0, 2.0], 0.1)
    assert not res.feasible


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"alpha": 0.0}, "alpha"), ({"alpha": 1.0}, "alpha"), ({"beta": 1.2}, "beta"),
    ({"beta": 0.0}, "beta"), ({"method": "hpd"}, "method"), ({"bound": -1.0}, "bound"),
    ({"direction": "up"}, "direction"),
])
def test_bad_arguments_are_rejected(kwargs, match):
    losses, lambdas = fnr_family(n=40)
    args = {"alpha": 0.2} | kwargs
    with pytest.raises(ValueError, match=match):
        calibrate(losses, lambdas, **args)


def test_bad_losses_are_rejected():
    losses, lambdas = fnr_family(n=40)
    bad = losses.copy()
    bad[3, 7] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        calibrate(bad, lambdas, 0.2)
    with pytest.raises(ValueError, match=r"\[0, B\]"):
        calibrate(losses * 2, lambdas, 0.2)
    with pytest.raises(ValueError, match="one value per column"):
        calibrate(losses, lambdas[:-1], 0.2)
    with pytest.raises(ValueError, match="strictly increasing"):
        calibrate(losses, lambdas[::-1], 0.2)
    with pytest.raises(ValueError, match="dimension"):
        calibrate(losses[:, 0], lambdas, 0.2)


def test_non_monotone_losses_are_rejected():
    losses, lambdas = fnr_family(n=40)
    bad = losses.copy()
    bad[0] = bad[0, ::-1]
    with pytest.raises(ValueError, match="not monotone"):
        calibrate(bad, lambdas, 0.2)
    with pytest.raises(ValueError, match="declared decreasing"):
        calibrate(losses, lambdas, 0.2, direction="decreasing")


def test_split_needs_zero_one_losses():
    losses, lambdas = fnr_family(n=40)
    with pytest.raises(ValueError, match="0/1"):
        calibrate(losses, lambdas, 0.2, method="split")


def test_continuous_search_for_a_rising_risk_and_when_infeasible():
    rng = np.random.default_rng(8)
    scores = rng.uniform(size=(80, 5))
    labels = rng.random((80, 5)) < 0.5
    labels[:, 0] = True

    def fnr(lam):
        return ((scores < lam) & labels).sum(1) / labels.sum(1)

    grid = np.linspace(0, 1, 2001)
    on_grid = calibrate(np.stack([fnr(g) for g in grid], 1), grid, 0.2, method="crc")
    cont = calibrate(fnr, (0.0, 1.0), 0.2, method="crc", tol=1e-7)
    assert cont.direction == "increasing"
    assert abs(cont.lambda_ - on_grid.lambda_) <= 1 / 2000 + 1e-7
    with pytest.warns(InfeasibleRiskWarning):
        bad = calibrate(fnr, (0.0, 1.0), 0.001, method="bq")
    assert bad.lambda_ == -math.inf
