"""Adaptive conformal inference: long-run coverage under distribution shift."""

import math

import numpy as np
import pytest

from icml25.conformal.adaptive import (
    AdaptiveConformal,
    AggregatedAdaptiveConformal,
    plot_coverage_over_time,
    rolling_coverage,
)

ALPHA = 0.1


def _shifted(rng, t=6_000):
    """|noise| whose scale jumps 1 -> 3 -> 0.5 (a calibration done once stops covering)."""
    scale = np.r_[np.ones(t // 3), 3 * np.ones(t // 3), 0.5 * np.ones(t - 2 * (t // 3))]
    return np.abs(rng.normal(size=t) * scale)


def _split_error(scores, n_cal=500):
    q = np.sort(scores[:n_cal])[math.ceil((1 - ALPHA) * (n_cal + 1)) - 1]
    return scores[n_cal:] > q


@pytest.mark.parametrize("gamma", [0.002, 0.01, 0.05])
def test_aci_long_run_error_obeys_the_deterministic_bound(gamma):
    for seed in range(5):
        scores = _shifted(np.random.default_rng(seed))
        res = AdaptiveConformal(ALPHA, gamma).run(scores)
        # Gibbs & Candes Prop. 4.1: holds for every sequence, no tolerance needed
        assert abs(res.errors.mean() - ALPHA) <= res.bound + 1e-12
        assert res.bound == pytest.approx((1 - ALPHA + gamma) / (gamma * scores.size))


def test_aci_tracks_coverage_through_a_shift_where_split_conformal_fails():
    rng = np.random.default_rng(11)
    scores = _shifted(rng)
    split_err = _split_error(scores)
    third = scores.size // 3
    # after the jump the once-calibrated threshold misses far more than alpha
    assert split_err[third - 500:2 * third - 500].mean() > 3 * ALPHA
    aci = AdaptiveConformal(ALPHA, 0.01, window=500).run(scores)
    agg = AggregatedAdaptiveConformal(ALPHA, window=500).run(scores)
    for res in (aci, agg):
        for part in range(3):  # every regime, not only on average
            seg = res.errors[part * third + 300:(part + 1) * third]
            se = math.sqrt(ALPHA * (1 - ALPHA) / seg.size)
            assert abs(seg.mean() - ALPHA) < 0.03 + 3 * se, (part, seg.mean())


def test_aggregated_variant_long_run_coverage_over_many_series():
    errs = []
    for seed in range(20):
        scores = _shifted(np.random.default_rng(100 + seed), t=3_000)
        errs.append(AggregatedAdaptiveConformal(ALPHA, window=300).run(scores).errors.mean())
    errs = np.array(errs)
    se = errs.std(ddof=1) / math.sqrt(errs.size)
    assert abs(errs.mean() - ALPHA) < 3 * se + 0.01, (errs.mean(), se)


def test_exchangeable_data_give_nominal_coverage():
    rng = np.random.default_rng(5)
    scores = np.abs(rng.normal(size=4_000))
    res = AdaptiveConformal(ALPHA, 0.005).run(scores)
    assert abs(res.coverage - (1 - ALPHA)) <= res.bound


def test_online_and_batch_agree_and_intervals_use_the_radius():
    rng = np.random.default_rng(3)
    scores = np.abs(rng.normal(size=300))
    batch = AdaptiveConformal(ALPHA, 0.02, window=100).run(scores)
    online = AdaptiveConformal(ALPHA, 0.02, window=100)
    for t, s in enumerate(scores):
        assert online.radius() == batch.radius[t]
        iv = online.predict_interval(2.0)
        if math.isfinite(online.radius()):
            assert iv[1] - 2.0 == pytest.approx(online.radius())
        online.update(s)
    assert math.isinf(batch.radius[0])  # nothing seen yet: infinite interval


def test_rolling_coverage_and_plot(tmp_path):
    err = np.r_[np.zeros(50), np.ones(50)]
    cov = rolling_coverage(err, 10)
    assert cov[9] == 1.0 and cov[-1] == 0.0 and cov[54] == pytest.approx(0.5)
    scores = _shifted(np.random.default_rng(0), 1_500)
    res = AdaptiveConformal(ALPHA, 0.01).run(scores)
    ax = plot_coverage_over_time({"ACI": res, "split": _split_error(scores)}, ALPHA, window=100)
    path = tmp_path / "cov.png"
    ax.figure.savefig(path)
    assert path.stat().st_size > 5_000


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="gamma"):
        AdaptiveConformal(0.1, gamma=0)
    with pytest.raises(ValueError, match="alpha"):
        AdaptiveConformal(1.5)
    with pytest.raises(ValueError, match="window"):
        AdaptiveConformal(0.1, window=0)
    with pytest.raises(ValueError, match="NaN"):
        AdaptiveConformal(0.1).run([1.0, float("nan")])
    with pytest.raises(ValueError, match="gammas"):
        AggregatedAdaptiveConformal(0.1, gammas=())
