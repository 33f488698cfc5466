"""Exact failure rates for a fixed pool; the fast simulation paths must equal the search."""

import math

import numpy as np
import pytest
from scipy import stats

from icml25.conformal.data import binomial_pool, heteroskedastic_pool, random_subsets
from icml25.conformal.exact import (
    histogram_pmf,
    histograms,
    max_allowed_misses,
    order_statistic_failure,
    order_statistic_pmf,
    rank_threshold,
)
from icml25.conformal.rules import RuleSpec
from icml25.conformal.simulate import MethodSpec, run_binomial, run_heteroskedastic


def test_issue_values_for_the_papers_heteroskedastic_pool():
    # n = 200 from 5,200, alpha 0.1: CRC allows 19 misses, BQ (beta 0.95) 12.
    out = {}
    for method in ("crc", "bq"):
        spec = RuleSpec.make(method, 0.1, 0.95)
        k = max_allowed_misses(spec.admissible, 200)
        out[method] = order_statistic_failure(5_200, 200, 200 - k,
                                              rank_threshold(5_200, 200, k, 0.1))
    assert round(100 * out["crc"], 2) == 46.39
    assert round(100 * out["bq"], 2) == 3.40


def test_order_statistic_pmf_matches_brute_force():
    rng = np.random.default_rng(3)
    n_pool, n, r = 30, 6, 4
    pmf = order_statistic_pmf(n_pool, n, r)
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-12)
    draws = np.sort(np.argsort(rng.random((200_000, n_pool)), axis=1)[:, :n], axis=1)[:, r - 1]
    freq = np.bincount(draws + 1, minlength=n_pool + 1)[1:] / draws.size
    assert np.abs(freq - pmf).max() < 4 * math.sqrt(pmf.max() / draws.size)


def test_histogram_pmf_sums_to_one_and_matches_hypergeometric_margin():
    hists = histograms(5, 3)
    assert len(hists) == math.comb(7, 2)
    sizes = np.array([7, 4, 9])
    pmf = histogram_pmf(sizes, hists)
    assert math.isclose(pmf.sum(), 1.0, rel_tol=1e-12)
    margin = np.bincount(hists[:, 1], weights=pmf, minlength=6)
    assert np.allclose(margin, stats.hypergeom.pmf(np.arange(6), 20, 4, 5))


def test_random_subsets_are_uniform_and_distinct():
    rng = np.random.default_rng(0)
    n_pool, size, trials = 40, 6, 60_000
    sets = random_subsets(n_pool, size, trials, rng)
    assert all(len(set(row)) == size for row in sets[:5_000])
    counts = np.bincount(sets.ravel(), minlength=n_pool)
    expected = trials * size / n_pool
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < stats.chi2.ppf(0.999, n_pool - 1)
    # pairs: inclusion of {0, 1} together has probability size(size-1)/(N(N-1))
    both = np.mean((sets == 0).any(1) & (sets == 1).any(1))
    p = size * (size - 1) / (n_pool * (n_pool - 1))
    assert abs(both - p) < 4 * math.sqrt(p * (1 - p) / trials)


@pytest.fixture(scope="module")
def hetero():
    _, y = heteroskedastic_pool(1_200, np.random.default_rng(1))
    return y


HETERO_METHODS = (MethodSpec("CRC", "crc"), MethodSpec("RCPS", "rcps"), MethodSpec("BQ", "bq"),
                  MethodSpec("BQ-MC", "bq", n_draws=2_000, exact=False),
                  MethodSpec("OFF", "bq", n_draws=500, exact=False, variant="official"))


def _same(fast, slow, methods):
    for m in methods:
        assert np.array_equal(fast[m.label]["lambda"], slow[m.label]["lambda"]), m.label
        assert np.allclose(fast[m.label]["risk"], slow[m.label]["risk"])


def test_heteroskedastic_rank_path_equals_the_search(hetero):
    cal_idx = random_subsets(hetero.size, 100, 400, np.random.default_rng(2))
    args = (hetero, 100, 400, 0.1, 0.95, HETERO_METHODS)
    _same(run_heteroskedastic(*args, cal_idx=cal_idx),
          run_heteroskedastic(*args, cal_idx=cal_idx, exact_path=False), HETERO_METHODS)


def test_heteroskedastic_simulation_agrees_with_the_exact_rates(hetero):
    trials = 20_000
    out = run_heteroskedastic(hetero, 100, trials, 0.1, 0.95, HETERO_METHODS[:3],
                              rng=np.random.default_rng(4))
    for key in ("CRC", "BQ"):
        p = out[key]["exact"]["failure_rate"]
        sim = out[key]["summary"].failure_rate
        assert abs(sim - p) <= 4 * math.sqrt(p * (1 - p) / trials), (key, sim, p)
        se_len = np.std(2 * out[key]["lambda"]) / math.sqrt(trials)
        assert abs(out[key]["summary"].mean_size - out[key]["exact"]["mean_length"]) < 4 * se_len


BINOM_METHODS = (MethodSpec("CRC", "crc"), MethodSpec("RCPS", "rcps"),
                 MethodSpec("HB", "rcps", concentration="hb"),
                 MethodSpec("BQ", "bq", n_draws=1_000),
                 MethodSpec("OFF", "bq", n_draws=500, variant="official", random_state=7))


@pytest.fixture(scope="module")
def pool():
    return binomial_pool(2_010, 4, np.random.default_rng(5))


def test_binomial_table_path_equals_the_search(pool):
    cal_idx = random_subsets(pool.shape[0], 10, 600, np.random.default_rng(6))
    args = (pool, 10, 600, 0.4, 0.95, BINOM_METHODS)
    _same(run_binomial(*args, cal_idx=cal_idx),
          run_binomial(*args, cal_idx=cal_idx, exact_path=False), BINOM_METHODS)


def test_binomial_simulation_agrees_with_the_exact_rates(pool):
    trials = 20_000
    out = run_binomial(pool, 10, trials, 0.4, 0.95, BINOM_METHODS[:4],
                       rng=np.random.default_rng(8))
    crc = out["CRC"]["exact"]
    assert crc["exact"]
    p = crc["failure_rate"]
    assert abs(out["CRC"]["summary"].failure_rate - p) <= 4 * math.sqrt(p * (1 - p) / trials)
    bq = out["BQ"]["exact"]
    assert bq["low"] <= bq["high"] < 0.02
    hi = bq["high"]
    assert out["BQ"]["summary"].failure_rate <= hi + 4 * math.sqrt(hi / trials)


def test_official_indexing_depends_on_the_first_loss_and_dedup_keeps_it():
    # Official indexing: B is added to the first loss, so (1, 0, ...) and (0, ..., 1) differ.
    spec = RuleSpec.make("bq", 0.3, 0.9, n_draws=2_000, exact=False, variant="official")
    a = np.zeros((100, 12))
    a[:50, 0] = 1.0
    a[50:, -1] = 1.0
    together = spec.prob_below(a)
    alone = np.concatenate([spec.prob_below(a[:1]), spec.prob_below(a[50:51])])
    assert together[0] == alone[0] and together[50] == alone[1]
    assert together[0] != together[50]


def test_binomial_with_many_histograms_falls_back_to_the_search(pool):
    # n = 30 rows of 4 values: C(34, 4) = 46,376 histograms, more than the table is built for
    cal_idx = random_subsets(pool.shape[0], 30, 50, np.random.default_rng(9))
    methods = BINOM_METHODS[:1] + BINOM_METHODS[3:4]
    out = run_binomial(pool, 30, 50, 0.2, 0.9, methods, cal_idx=cal_idx)
    assert all(out[m.label]["exact"] is None for m in methods)
    _same(out, run_binomial(pool, 30, 50, 0.2, 0.9, methods, cal_idx=cal_idx, exact_path=False),
          methods)
