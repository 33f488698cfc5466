"""Empirical tools, the Monte Carlo check and the log-normal variant."""

import numpy as np
import pytest

from icml25.worstoff import (
    capacity_needed,
    delta_alpha_star,
    empirical_par,
    empirical_par_at_r2,
    empirical_value,
    improve_predictions,
    lognormal_r2_level,
    lognormal_r2_log,
    lognormal_value,
    monte_carlo_value,
    par,
    predictions_at_r2,
    r2_score,
    recalibrate,
    simulate_gaussian,
    value,
)


def test_monte_carlo_matches_closed_form_within_sampling_error():
    alphas = np.array([0.05, 0.2, 0.4])
    for r2 in (0.25, 0.6):
        mc, se = monte_carlo_value(alphas, 0.2, r2, n=40_000, reps=12, rng=7)
        z = (mc - value(alphas, 0.2, r2)) / se
        assert np.all(np.abs(z) < 4.0), z  # 4 standard errors: a false alarm is ~1e-4 per check


def test_monte_carlo_detects_a_wrong_r2():
    mc, se = monte_carlo_value(0.2, 0.2, 0.25, n=40_000, reps=12, rng=3)
    assert abs(mc - value(0.2, 0.2, 0.30)) > 4 * se  # the check has power


def test_empirical_value_definition_and_ties():
    y = np.arange(10.0)
    assert empirical_value(y, y, 0.2, 0.2) == 1.0
    assert empirical_value(y, -y, 0.2, 0.2) == 0.0
    # a constant predictor ties everybody: expected recall under random tie-breaking is alpha
    assert np.allclose(empirical_value(y, np.zeros(10), [0.1, 0.35, 0.8], 0.3), [0.1, 0.35, 0.8])
    # higher-is-worse flips both sides
    assert empirical_value(y, y, 0.2, 0.2, lower_is_worse=False) == 1.0
    # brute force against random tie-breaking on a coarse predictor
    rng = np.random.default_rng(0)
    y = rng.normal(size=200)
    yhat = np.round(y + rng.normal(size=200), 0)
    k = 40
    worst = y <= np.sort(y)[39]
    sims = [worst[np.lexsort((rng.random(200), yhat))[:k]].sum() / 40 for _ in range(4000)]
    assert empirical_value(y, yhat, 0.2, 0.2) == pytest.approx(np.mean(sims), abs=4 * np.std(
        sims) / np.sqrt(4000))


def test_capacity_needed_inverts_the_recall_curve():
    y, yhat = simulate_gaussian(5000, 0.3, np.random.default_rng(1))
    targets = np.array([0.25, 0.5, 0.75, 0.9])
    caps = capacity_needed(y, yhat, 0.15, targets)
    assert np.allclose(empirical_value(y, yhat, caps, 0.15), targets, atol=1e-9)
    assert np.all(empirical_value(y, yhat, caps - 1e-3, 0.15) < targets)


def test_residual_scaling_hits_target_r2_exactly():
    rng = np.random.default_rng(2)
    y = rng.lognormal(4, 1, 3000)
    yhat = y.mean() + 0.4 * (y - y.mean()) + rng.normal(0, 30, 3000)
    r0 = r2_score(y, yhat)
    for d in (0.001, 0.05, 0.1, 0.3):
        assert r2_score(y, improve_predictions(y, yhat, d)) - r0 == pytest.approx(d, abs=1e-9)
    mask = rng.random(3000) < 0.5  # uneven improvement: only one subgroup gets better
    better = improve_predictions(y, yhat, 0.05, mask=mask)
    assert r2_score(y, better) - r0 == pytest.approx(0.05, abs=1e-9)
    assert np.array_equal(better[~mask], yhat[~mask])
    with pytest.raises(ValueError, match="cannot raise"):
        improve_predictions(y, yhat, 1.0 - r0 + 0.01)


def test_predictions_at_r2_path():
    y, yhat = simulate_gaussian(4000, 0.4, np.random.default_rng(3))
    for target in (0.0, 0.1, 0.25, 0.6, 0.95):
        assert r2_score(y, predictions_at_r2(y, yhat, target)) == pytest.approx(target, abs=1e-9)


def test_empirical_par_tracks_theory_on_gaussian_data():
    y, yhat = simulate_gaussian(200_000, 0.2, np.random.default_rng(4))
    alphas = np.array([0.1, 0.2, 0.3])
    emp = empirical_par(y, yhat, alphas, 0.2, 0.1, 0.1)
    # Residual scaling raises 1 - SSE/SST by 0.1, but the scaled predictor is not calibrated, so
    # its squared correlation with y (what ranks people in the Gaussian model) rises a bit more.
    r0 = r2_score(y, yhat)
    rho2 = np.corrcoef(improve_predictions(y, yhat, 0.1), y)[0, 1] ** 2
    assert 0.3 < rho2 < 0.32
    theory = (value(alphas + 0.1, 0.2, r0) - value(alphas, 0.2, r0)) / (
        value(alphas, 0.2, rho2) - value(alphas, 0.2, r0))
    assert np.allclose(emp, theory, rtol=0.05)
    assert np.all(emp < par(alphas, 0.2, r0, 0.1, 0.1))  # hence below the calibrated PAR
    # at the model's own R2 the regime version is the same quantity
    own = r2_score(y, recalibrate(y, yhat))  # empirical_par recalibrates by default
    assert np.allclose(empirical_par_at_r2(y, yhat, alphas, 0.2, own), emp)


def test_delta_alpha_star():
    rng = np.random.default_rng(5)
    y, yhat = simulate_gaussian(20_000, 0.4, rng)
    worse = yhat + rng.normal(0, 0.6, y.size)
    alphas = np.array([0.1, 0.2, 0.3])
    d = delta_alpha_star(y, yhat, worse, alphas, 0.2)
    assert np.all(d > 0)
    assert np.allclose(empirical_value(y, worse, alphas + d, 0.2),
                       empirical_value(y, yhat, alphas, 0.2), atol=1e-9)
    assert np.all(delta_alpha_star(y, yhat, yhat, alphas, 0.2) == 0)


def test_lognormal_variant():
    s = 0.8  # variance of log outcome
    r2_log = 0.35
    r2_level = lognormal_r2_level(r2_log, s)
    assert r2_level < r2_log
    assert lognormal_r2_log(r2_level, s) == pytest.approx(r2_log, abs=1e-12)
    rng = np.random.default_rng(6)
    n = 400_000
    log_hat = 3.0 + np.sqrt(r2_log * s) * rng.standard_normal(n)
    gamma2 = (1 - r2_log) * s
    y = np.exp(log_hat + np.sqrt(gamma2) * rng.standard_normal(n))
    best = np.exp(log_hat + gamma2 / 2)  # E[Y | X]
    assert r2_score(y, best) == pytest.approx(r2_level, abs=0.02)
    v = empirical_value(y, best, 0.2, 0.1)
    assert v == pytest.approx(lognormal_value(0.2, 0.1, r2_level, s), abs=0.01)
    assert v > value(0.2, 0.1, r2_level) + 0.02  # the naive Gaussian V understates it


@pytest.mark.parametrize("call,match", [
    (lambda: empirical_value([1, 2, 3], [1, 2], 0.2, 0.2), "different lengths"),
    (lambda: empirical_value([1, np.nan, 3], [1, 2, 3], 0.2, 0.2), "NaN"),
    (lambda: empirical_value([1, 1, 1], [1, 2, 3], 0.2, 0.2), "constant"),
    (lambda: empirical_value([1, 2, 3], [1, 2, 3], 0.2, 1.5), "beta"),
    (lambda: empirical_value([[1, 2]], [[1, 2]], 0.2, 0.2), "one-dimensional"),
    (lambda: empirical_par([1, 2, 3, 4], [1, 2, 4, 3], 0.95, 0.2, 0.1, 0.01), "alpha"),
    (lambda: capacity_needed([1, 2, 3], [1, 2, 3], 0.2, 1.2), "recall"),
])
def test_empirical_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
