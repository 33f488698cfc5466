"""The vectorised bivariate normal CDF against scipy and a quadrature of Plackett's identity."""

import numpy as np
import pytest
from scipy import integrate, special, stats

from icml25.worstoff import bvn_cdf


def test_matches_scipy_to_1e10_over_the_plane():
    rng = np.random.default_rng(0)
    n = 400
    x, y = rng.normal(0, 2.5, n), rng.normal(0, 2.5, n)
    r = rng.uniform(-1, 1, n)
    r[:80] = rng.choice([-0.9999, -0.99, -0.95, -0.925, 0.925, 0.93, 0.97, 0.999, 0.999999], 80)
    r[80:100] = rng.choice([-0.3, 0.3, 0.75, -0.75, 0.0], 20)  # rule boundaries
    ours = bvn_cdf(x, y, r)
    ref = np.array([stats.multivariate_normal.cdf([a, b], mean=[0, 0], cov=[[1, c], [c, 1]])
                    for a, b, c in zip(x, y, r, strict=True)])
    assert np.max(np.abs(ours - ref)) < 1e-10


def test_lower_tail_relative_accuracy():
    def plackett(h, k, r):
        f = lambda t: np.exp(-(h * h + k * k - 2 * h * k * np.sin(t)) / (2 * np.cos(t) ** 2))  # noqa: E731
        v, _ = integrate.quad(f, 0, np.arcsin(r), epsabs=0, epsrel=1e-13, limit=500)
        return special.ndtr(h) * special.ndtr(k) + v / (2 * np.pi)

    for h, k, r in [(-6, -5, 0.5), (-4, -1, 0.3), (-3, -3, 0.9), (-5, -2, 0.8)]:
        assert bvn_cdf(h, k, r) == pytest.approx(plackett(h, k, r), rel=1e-9)


def test_exact_special_cases():
    assert bvn_cdf(0, 0, 0.5) == pytest.approx(1 / 3, abs=1e-15)
    assert bvn_cdf(0.3, -0.2, 0.0) == pytest.approx(special.ndtr(0.3) * special.ndtr(-0.2))
    assert bvn_cdf(0.3, -0.2, 1.0) == pytest.approx(special.ndtr(-0.2))
    assert bvn_cdf(0.3, -0.2, -1.0) == pytest.approx(special.ndtr(0.3) - special.ndtr(0.2))
    assert bvn_cdf(-np.inf, 1.0, 0.4) == 0.0
    assert bvn_cdf(np.inf, 1.0, 0.4) == pytest.approx(special.ndtr(1.0))
    assert bvn_cdf(0.5, np.inf, -0.4) == pytest.approx(special.ndtr(0.5))
    # symmetry and continuity across the |rho| = 0.925 switch
    assert bvn_cdf(0.4, -1.1, 0.6) == pytest.approx(bvn_cdf(-1.1, 0.4, 0.6), abs=1e-15)
    lo, hi = bvn_cdf(0.2, 0.1, 0.925 - 1e-12), bvn_cdf(0.2, 0.1, 0.925)
    assert abs(lo - hi) < 1e-12


def test_shapes_and_errors():
    assert bvn_cdf(np.zeros((3, 1)), np.zeros(4), 0.2).shape == (3, 4)
    assert isinstance(bvn_cdf(0.1, 0.2, 0.3), float)
    with pytest.raises(ValueError, match="rho"):
        bvn_cdf(0, 0, 1.5)
    with pytest.raises(ValueError, match="NaN"):
        bvn_cdf(np.nan, 0, 0.5)
