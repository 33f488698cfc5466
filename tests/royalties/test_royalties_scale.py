"""Shares for many holders: the coverage utility's closed form is the Shapley value, and the
batched sampler stops at the first round whose every standard error is under the tolerance,
with the same numbers on one process and on two."""

from __future__ import annotations

import numpy as np
import pytest

from icml25.core.cells import CellRunner, ProcessExecutor
from icml25.royalties.errors import RoyaltyInputError
from icml25.royalties.scale import CoverageUtility, coverage_scenario, sampled_shares
from icml25.royalties.shapley import coalition_matrix, shapley_from_table


def test_closed_form_is_the_exact_shapley_value():
    u = coverage_scenario(9, n_features=20, per_holder=4, seed=3)
    table = np.array([u.value(c) for c in coalition_matrix(9)])
    np.testing.assert_allclose(u.exact_shapley(), shapley_from_table(table), atol=1e-9)
    assert np.isclose(u.exact_shapley().sum(), u.grand_total)


def test_stops_at_the_first_round_under_tolerance_and_its_errors_are_honest():
    u = coverage_scenario(60, seed=1)
    kw = dict(tol=0.004, batch_size=8, round_batches=2, min_permutations=16)
    est = sampled_shares(u, **kw)
    assert est.converged and est.max_rel_se <= 0.004
    assert est.n_permutations > 16  # the tolerance, not the minimum, stopped it
    earlier = sampled_shares(u, **dict(kw, max_permutations=est.n_permutations - 16))
    assert not earlier.converged and earlier.max_rel_se > 0.004  # one round before: not yet
    err = np.abs(np.array(est.phi) - u.exact_shapley())
    # ~95% of holders within 2 SE for a normal mean; 60 holders: allow sampling noise
    assert np.mean(err <= 2 * np.array(est.std_errors)) >= 0.8


def test_same_numbers_on_one_and_two_processes(tmp_path):
    u = coverage_scenario(40, seed=2)
    kw = dict(tol=0.01, batch_size=4, round_batches=4, seed=5)
    here = sampled_shares(u, **kw)
    with ProcessExecutor(2) as ex:
        there = sampled_shares(u, runner=CellRunner(ex, cache_root=tmp_path), **kw)
    assert here.phi == there.phi and here.n_permutations == there.n_permutations
    cached = CellRunner(cache_root=tmp_path)
    again = sampled_shares(u, runner=cached, **kw)
    assert again.phi == here.phi and cached.stats["royalties-shares"].cached > 0


def test_bad_input_is_refused():
    with pytest.raises(RoyaltyInputError):
        CoverageUtility([[0, 5]], [1.0, 2.0])
    with pytest.raises(RoyaltyInputError):
        sampled_shares(coverage_scenario(5), tol=0)


def test_docstring_examples():
    import doctest

    from icml25.royalties import scale

    result = doctest.testmod(scale, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
