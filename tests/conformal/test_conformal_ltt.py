"""Learn-then-test: the family-wise error is controlled over many calibration sets."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from icml25.conformal import InfeasibleRiskWarning
from icml25.conformal.ltt import LearnThenTest, PrecisionController, fwer_control, ltt_pvalues

GRID = np.linspace(0, 0.98, 50)
FINE = np.linspace(0, 1, 400_001)


def _true_fdr(p1):
    return np.array([1 - p1(FINE[FINE >= lam]).mean() for lam in GRID])


def _bump(s):  # precision high for scores in [0.5, 0.9), low above: FDR is not monotone
    return np.where((s >= 0.5) & (s < 0.9), 0.95, 0.3)


def _rising(s):
    return 0.2 + 0.75 * s


def _fwer(p1, procedure, alpha, delta, n, splits, seed):
    rng = np.random.default_rng(seed)
    tf = _true_fdr(p1)
    bad = naive = found = 0
    for _ in range(splits):
        s = rng.uniform(size=n)
        y = rng.uniform(size=n) < p1(s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleRiskWarning)
            ctl = PrecisionController(alpha, delta, procedure=procedure, lambdas=GRID).fit(s, y)
        valid = ctl.ltt_.valid_
        bad += bool(np.any(tf[valid] > alpha))
        found += bool(valid.any())
        pred = s[:, None] >= GRID[None, :]
        emp = np.array([(~y[pred[:, j]]).mean() if pred[:, j].any() else 0.0
                        for j in range(GRID.size)])
        naive += bool(np.any(tf[emp <= alpha] > alpha))  # "empirical precision >= 1 - alpha"
    return bad / splits, naive / splits, found / splits


@pytest.mark.parametrize("procedure", ["bonferroni", "holm"])
def test_fwer_is_controlled_for_a_non_monotone_precision(procedure):
    alpha, delta, splits = 0.25, 0.1, 300
    fwer, naive, found = _fwer(_bump, procedure, alpha, delta, 2_000, splits, seed=1)
    se = math.sqrt(delta * (1 - delta) / splits)
    assert fwer <= delta + 3 * se, fwer
    assert naive > 0.3, naive  # picking by the empirical precision is not controlled
    assert found >= 0.8, found  # and the test certifies something almost always


def test_fixed_sequence_controls_fwer_when_the_order_is_right():
    alpha, delta, splits = 0.25, 0.1, 300
    fwer, naive, found = _fwer(_rising, "fixed_sequence", alpha, delta, 3_000, splits, seed=2)
    se = math.sqrt(delta * (1 - delta) / splits)
    assert fwer <= delta + 3 * se, fwer
    assert found >= 0.9
    assert naive > fwer


def test_fixed_sequence_stops_at_the_first_failure():
    p = np.array([0.01, 0.02, 0.5, 0.01])
    np.testing.assert_array_equal(fwer_control(p, 0.05, "fixed_sequence"),
                                  [True, True, False, False])
    np.testing.assert_array_equal(fwer_control(p, 0.05, "fixed_sequence", order=[3, 0, 2, 1]),
                                  [True, False, False, True])
    np.testing.assert_array_equal(fwer_control(p, 0.05, "bonferroni"), [True, False, False, True])
    # Holm: 0.01 <= 0.05/4, 0.01 <= 0.05/3, 0.02 <= 0.05/2, 0.5 > 0.05
    np.testing.assert_array_equal(fwer_control(p, 0.05, "holm"), [True, True, False, True])
    with pytest.raises(ValueError, match="permutation"):
        fwer_control(p, 0.05, "fixed_sequence", order=[0, 0, 1, 2])
    with pytest.raises(ValueError, match="procedure"):
        fwer_control(p, 0.05, "hochberg")


def test_pvalues_binomial_and_hoeffding_bentkus():
    losses = np.zeros((40, 2))
    losses[:3, 0] = 1
    losses[:, 1] = np.nan
    losses[:10, 1] = 0.0
    p = ltt_pvalues(losses, 0.2)
    assert p[0] == pytest.approx(stats.binom.cdf(3, 40, 0.2))
    assert p[1] == pytest.approx(stats.binom.cdf(0, 10, 0.2))  # only applicable points count
    graded = np.full((200, 1), 0.05)
    p_hb = ltt_pvalues(graded, 0.2)  # not 0/1: Hoeffding-Bentkus
    assert 0 < p_hb[0] < 0.01
    with pytest.raises(ValueError, match="binomial"):
        ltt_pvalues(graded, 0.2, pvalue="binomial")
    with pytest.raises(ValueError, match=r"\[0, B\]"):
        ltt_pvalues(np.full((5, 1), 2.0), 0.2)


def test_nothing_certified_warns_and_predicts_no_positive():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=50)
    y = rng.uniform(size=50) < 0.3
    with pytest.warns(InfeasibleRiskWarning, match="certified no lambda"):
        ctl = PrecisionController(0.05, 0.1).fit(s, y)
    assert ctl.lambda_ == math.inf and not ctl.predict(s).any()


def test_learn_then_test_select():
    losses = np.array([[0.0, 0.0, 1.0]] * 100)
    ltt = LearnThenTest(0.2, 0.1, procedure="bonferroni", select="max").fit(losses,
                                                                             [1.0, 2.0, 3.0])
    assert list(ltt.valid_) == [True, True, False] and ltt.lambda_ == 2.0
    with pytest.raises(ValueError, match="one column per lambda"):
        LearnThenTest().fit(losses, [1.0, 2.0])
