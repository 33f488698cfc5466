"""Seed aggregation: mean ± standard error over training seeds, the sampling part, and the
Welch interval of a difference."""

import math

import numpy as np
import pytest

from icml25.creativity.seeds import difference, summarize


def test_summary_by_hand():
    s = summarize([0.2, 0.3, 0.4], 100)
    assert s.mean == pytest.approx(0.3)
    assert s.se == pytest.approx(0.1 / math.sqrt(3))  # sd 0.1 over 3 seeds
    assert s.sampling_se == pytest.approx(math.sqrt(0.16 + 0.21 + 0.24) / 10 / 3)
    assert s.k == 3 and "3 seeds" in s.text()


def test_standard_errors_match_simulated_spread():
    """Seeds whose true rates differ (training noise) plus binomial sampling: the mean's spread
    over many simulated experiments matches ``se`` on average, and ``sampling_se`` is the
    binomial part alone (here smaller)."""
    rng = np.random.default_rng(0)
    k, n, reps = 3, 1024, 4000
    means, ses, samp = [], [], []
    for _ in range(reps):
        true = rng.normal(0.3, 0.03, size=k)
        rates = rng.binomial(n, true) / n
        s = summarize(rates, n)
        means.append(s.mean)
        ses.append(s.se)
        samp.append(s.sampling_se)
    empirical = np.std(means)
    expected = math.sqrt((0.03 ** 2 + 0.3 * 0.7 / n) / k)
    assert empirical == pytest.approx(expected, rel=0.05)
    assert np.sqrt(np.mean(np.square(ses))) == pytest.approx(expected, rel=0.05)
    assert np.mean(samp) == pytest.approx(math.sqrt(0.3 * 0.7 / n / k), rel=0.05)


def test_welch_interval_covers_at_its_level():
    rng = np.random.default_rng(1)
    hits, reps = 0, 2000
    for _ in range(reps):
        a = summarize(rng.binomial(1024, rng.normal(0.30, 0.02, 3)) / 1024, 1024)
        b = summarize(rng.binomial(1024, rng.normal(0.25, 0.02, 3)) / 1024, 1024)
        lo, hi = difference(a, b).ci
        hits += lo <= 0.05 <= hi
    assert abs(hits / reps - 0.95) < 3 * math.sqrt(0.95 * 0.05 / reps) + 0.01


def test_zero_spread_falls_back_to_sampling_error():
    a, b = summarize([0.5, 0.5], 100), summarize([0.4, 0.4], 100)
    d = difference(a, b)
    assert d.diff == pytest.approx(0.1)
    assert d.se == pytest.approx(math.hypot(a.sampling_se, b.sampling_se))
    assert d.ci[0] < 0.1 < d.ci[1]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least 2 seeds"):
        summarize([0.3], 100)
    with pytest.raises(ValueError, match="sample sizes"):
        summarize([0.3, 0.4], [100])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        summarize([0.3, 1.4], 100)
    with pytest.raises(ValueError, match="level"):
        difference(summarize([0.1, 0.2], 10), summarize([0.1, 0.2], 10), level=1.0)
