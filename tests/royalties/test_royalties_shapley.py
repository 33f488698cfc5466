"""Shapley axioms on the exact path, sampled values vs exact within their standard errors,
shares, ownership groups (Owen values), the utility cache and its errors."""

import itertools
import math

import numpy as np
import pytest

from icml25.royalties import (
    CachedUtility,
    FunctionUtility,
    KneserNeyCoalitionLM,
    NgramLogRatioUtility,
    RoyaltyInputError,
    coalition_matrix,
    exact_shapley,
    make_scenario,
    royalty_shares,
    sampled_shapley,
    shapley_from_table,
    shapley_values,
)


class TableUtility:
    """A game given by its 2^n table (coalition bitmask -> value)."""

    def __init__(self, table):
        self.table = np.asarray(table, dtype=float)
        n = int(round(math.log2(len(self.table))))
        self.players = [f"p{i}" for i in range(n)]
        self.bits = 1 << np.arange(n)

    def __call__(self, coalitions):
        return self.table[np.asarray(coalitions, dtype=np.int64) @ self.bits]


def brute_force_shapley(table, n):
    """Average marginal contribution over all n! orderings."""
    phi = np.zeros(n)
    for order in itertools.permutations(range(n)):
        mask = 0
        for i in order:
            phi[i] += table[mask | (1 << i)] - table[mask]
            mask |= 1 << i
    return phi / math.factorial(n)


@pytest.fixture(scope="module")
def scenario_lm():
    sc = make_scenario(3, n_holders=6, docs_per_holder=3, sentences_per_doc=12,
                       baseline_docs=6, artifacts_per_holder=1)
    lm = KneserNeyCoalitionLM(order=4).fit(sc.corpora, sc.baseline)
    return sc, lm


def test_exact_matches_enumerating_all_orderings():
    rng = np.random.default_rng(0)
    table = rng.normal(size=2**5)
    assert shapley_from_table(table) == pytest.approx(brute_force_shapley(table, 5), abs=1e-12)


def test_efficiency_on_the_ngram_utility(scenario_lm):
    sc, lm = scenario_lm
    for text in list(sc.artifacts.values())[:3]:
        res = exact_shapley(NgramLogRatioUtility(lm, text))
        util = NgramLogRatioUtility(lm, text)
        full = util(np.ones((1, len(lm.holders_)), bool))[0]
        assert sum(res.values) == pytest.approx(full, rel=1e-10)
        assert res.grand_value == pytest.approx(full, rel=1e-12)
        assert res.n_evaluations == 2 ** len(lm.holders_)


def test_symmetry_for_identical_holders():
    corpora = {"ann": ["the cat sat on the mat. the cat ran."],
               "ann-copy": ["the cat sat on the mat. the cat ran."],
               "bob": ["a dog barked at the moon. the dog slept."]}
    lm = KneserNeyCoalitionLM(order=3).fit(corpora, baseline="the end. a start.")
    res = exact_shapley(NgramLogRatioUtility(lm, "the cat sat at the moon."))
    assert res.values[0] == pytest.approx(res.values[1], abs=1e-10)
    assert res.values[0] != pytest.approx(res.values[2], abs=1e-3)


def test_null_player_is_exactly_zero():
    # "colours" holds a copy of a public document on another subject: it adds no n-gram type
    # and none of its contexts occurs in the artifact, so no coalition's model changes.
    public = ["red green blue red green blue green", "the cat sat on the mat"]
    corpora = {"cats": ["the cat sat on the mat and the cat sat"],
               "colours": ["red green blue red green blue green"],
               "dogs": ["the dog sat on the rug"]}
    lm = KneserNeyCoalitionLM(order=2, tokenizer="word").fit(corpora, baseline=public)
    util = NgramLogRatioUtility(lm, "the cat sat on the rug")
    table = util(coalition_matrix(3))
    with_c = table[[m | 2 for m in range(8) if not m & 2]]
    without_c = table[[m for m in range(8) if not m & 2]]
    assert np.array_equal(with_c, without_c)  # the definition of a null player
    res = exact_shapley(util)
    assert res.values[1] == 0.0
    assert res.values[0] > 0


def test_holder_with_unrelated_data_gets_no_share():
    # Disjoint data still moves the smoothing mass a little (it can only lower p(x)), so its
    # Shapley value is <= 0 and its royalty share is exactly 0.
    corpora = {"cats": ["the cat sat on the mat"], "numbers": ["123 456 789 0 12 34"]}
    lm = KneserNeyCoalitionLM(order=3).fit(corpora, baseline="the end")
    res = exact_shapley(NgramLogRatioUtility(lm, "the cat sat"))
    assert res.values[1] <= 0
    shares = res.shares()
    assert shares[1] == 0.0 and shares[0] == 1.0


def test_additivity_over_artifacts(scenario_lm):
    sc, lm = scenario_lm
    texts = list(sc.artifacts.values())[:3]
    separate = sum(exact_shapley(NgramLogRatioUtility(lm, t)).phi for t in texts)
    joint = exact_shapley(NgramLogRatioUtility(lm, texts)).phi
    assert joint == pytest.approx(separate, rel=1e-10, abs=1e-9)


def test_shares_are_nonnegative_and_sum_to_one():
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(1, 7))
        table = rng.normal(size=2**n) * rng.exponential()
        shares, allocated = royalty_shares(exact_shapley(TableUtility(table)).values)
        assert (shares >= 0).all()
        if allocated:
            assert shares.sum() == pytest.approx(1.0, abs=1e-12)
        else:
            assert shares.sum() == 0.0
    shares, allocated = royalty_shares([-1.0, -0.5])
    assert not allocated and shares.tolist() == [0.0, 0.0]
    assert royalty_shares([2.0, -1.0, 2.0])[0].tolist() == [0.5, 0.0, 0.5]


def test_sampled_values_lie_within_their_reported_standard_errors(scenario_lm):
    sc, lm = scenario_lm
    text = list(sc.artifacts.values())[1]
    exact = exact_shapley(NgramLogRatioUtility(lm, text)).phi
    res = sampled_shapley(NgramLogRatioUtility(lm, text), seed=11, rel_se_tol=0.005)
    se = np.asarray(res.std_errors)
    assert res.converged and se.max() <= res.se_target
    assert (np.abs(res.phi - exact) <= 4 * se).all()
    assert sum(res.values) == pytest.approx(res.grand_value, rel=1e-10)  # also efficient


@pytest.mark.parametrize("antithetic", [True, False])
def test_reported_standard_errors_are_calibrated(antithetic):
    rng = np.random.default_rng(5)
    n = 7
    weights = rng.exponential(size=n)
    members = coalition_matrix(n)
    table = np.log1p(members @ weights) + 0.3 * rng.normal(size=2**n)  # diminishing returns
    exact = shapley_from_table(table)
    hits = []
    for seed in range(40):
        res = sampled_shapley(TableUtility(table), seed=seed, antithetic=antithetic,
                              min_permutations=40, max_permutations=40)
        hits.extend(np.abs(res.phi - exact) <= 2 * np.asarray(res.std_errors))
    # nominal ~95 %; 280 correlated draws, so allow a generous margin below
    assert np.mean(hits) >= 0.85


def test_antithetic_sampling_reduces_error_on_a_dominant_holder_game(scenario_lm):
    sc, lm = scenario_lm
    table = NgramLogRatioUtility(lm, list(sc.artifacts.values())[0])(coalition_matrix(6))
    exact = shapley_from_table(table)
    err = {True: [], False: []}
    for seed in range(30):
        for anti in (True, False):
            res = sampled_shapley(TableUtility(table), seed=seed, antithetic=anti,
                                  min_permutations=20, max_permutations=20)
            err[anti].append(np.sum((res.phi - exact) ** 2))
    assert np.mean(err[True]) < np.mean(err[False])


def test_stopping_rule_reports_non_convergence():
    rng = np.random.default_rng(2)
    util = TableUtility(rng.normal(size=2**6))
    res = sampled_shapley(util, seed=0, se_tol=1e-9, min_permutations=10, max_permutations=30,
                          batch_permutations=10)
    assert not res.converged and res.n_permutations == 30
    res = sampled_shapley(util, seed=0, se_tol=10.0, min_permutations=10)
    assert res.converged and res.n_permutations == 20  # first batch of 20 already meets it


def test_owen_values_with_singleton_groups_equal_shapley():
    rng = np.random.default_rng(3)
    util = TableUtility(rng.normal(size=2**5))
    plain = exact_shapley(util).phi
    grouped = exact_shapley(util, groups=[["p0"], ["p1"], ["p2"], ["p3"], ["p4"]]).phi
    assert grouped == pytest.approx(plain, abs=1e-12)


def test_group_total_is_the_shapley_value_between_groups():
    rng = np.random.default_rng(4)
    table = rng.normal(size=2**5)
    groups = [["p0", "p3"], ["p1"], ["p2", "p4"]]
    owen = exact_shapley(TableUtility(table), groups=groups).phi
    # quotient game: player g is the union of group g
    gmask = [0b01001, 0b00010, 0b10100]
    quotient = np.array([table[sum(m for k, m in enumerate(gmask) if s >> k & 1)]
                         for s in range(8)])
    between = brute_force_shapley(quotient, 3)
    assert [owen[0] + owen[3], owen[1], owen[2] + owen[4]] == pytest.approx(between, abs=1e-12)
    sampled = sampled_shapley(TableUtility(table), groups=groups, seed=0, se_tol=0.01,
                              max_permutations=20000)
    assert (np.abs(sampled.phi - owen) <= 4 * np.asarray(sampled.std_errors) + 1e-12).all()


def test_cache_evaluates_each_coalition_once():
    calls = []

    def fn(members):
        calls.append(members)
        return float(len(members) ** 2)

    util = CachedUtility(FunctionUtility(["a", "b", "c"], fn))
    exact_shapley(util)
    assert len(calls) == 8 and util.n_evaluations == 8
    sampled_shapley(util, seed=0, max_permutations=40)
    assert len(calls) == 8  # every coalition was cached
    assert util.n_requests > 8


def test_dispatch_and_errors():
    util = TableUtility(np.arange(2**3, dtype=float))
    assert shapley_values(util, method="auto").method == "exact"
    assert shapley_values(util, method="auto", exact_limit=2).method == "antithetic"
    with pytest.raises(RoyaltyInputError, match="method"):
        shapley_values(util, method="magic")
    big = FunctionUtility([f"h{i}" for i in range(21)], lambda s: float(len(s)))
    with pytest.raises(RoyaltyInputError, match="sampled"):
        exact_shapley(big)
    with pytest.raises(RoyaltyInputError, match="not a holder"):
        exact_shapley(util, groups=[["p0", "zz"]])
    with pytest.raises(RoyaltyInputError, match="more than one"):
        exact_shapley(util, groups=[["p0"], ["p0", "p1"]])
    bad = FunctionUtility(["a"], lambda s: float("nan"))
    with pytest.raises(RoyaltyInputError, match="nan"):
        exact_shapley(bad)
    with pytest.raises(RoyaltyInputError, match="unique"):
        FunctionUtility(["a", "a"], len)
    with pytest.raises(RoyaltyInputError, match="max_permutations"):
        sampled_shapley(util, min_permutations=50, max_permutations=10)


def test_many_holders_use_sampling_with_few_evaluations():
    n = 30
    w = np.linspace(0.1, 3.0, n)
    util = FunctionUtility([f"h{i}" for i in range(n)],
                           lambda s: float(np.log1p(sum(w[int(p[1:])] for p in s))))
    cached = CachedUtility(util)
    res = shapley_values(cached, seed=0, rel_se_tol=0.02)
    assert res.method == "antithetic" and res.converged
    assert res.n_evaluations == cached.n_evaluations < 2**n
    assert np.corrcoef(res.phi, w)[0, 1] > 0.95  # bigger catalogues, bigger values
