"""Claim: icml25.worstoff.bvn_cdf matches scipy.stats.multivariate_normal.cdf to 1e-10 and is at
least 100x faster than calling scipy point by point.

Run: .venv/bin/python benchmarks/worstoff_bvn.py [--points 200000] [--scipy-points 2000]
Both sides evaluate the same random (x, y, rho) triples in one run; scipy's per-point time is
measured on a subsample (one Python call per point) and scaled to the full set.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from scipy import stats

from icml25.worstoff import bvn_cdf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--scipy-points", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    x, y = rng.normal(0, 2, args.points), rng.normal(0, 2, args.points)
    rho = rng.uniform(-0.999, 0.999, args.points)

    bvn_cdf(x[:100], y[:100], rho[:100])  # warm-up
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        ours = bvn_cdf(x, y, rho)
        best = min(best, time.perf_counter() - t0)
    ours_per_point = best / args.points

    m = args.scipy_points
    t0 = time.perf_counter()
    ref = np.array([
        stats.multivariate_normal.cdf([a, b], mean=[0.0, 0.0], cov=[[1.0, c], [c, 1.0]])
        for a, b, c in zip(x[:m], y[:m], rho[:m], strict=True)
    ])
    scipy_per_point = (time.perf_counter() - t0) / m
    err = float(np.max(np.abs(ours[:m] - ref)))

    print(f"machine: {platform.processor() or platform.machine()}, numpy {np.__version__}")
    print(f"ours : {args.points:,} points in {best:.3f} s = {ours_per_point * 1e6:.3f} us/point")
    print(f"scipy: {m:,} points one call each = {scipy_per_point * 1e6:.1f} us/point")
    print(f"max |ours - scipy| over {m:,} points: {err:.2e} (claim: < 1e-10)")
    print(f"speed-up ratio: {scipy_per_point / ours_per_point:.0f}x (claim: >= 100x)")


if __name__ == "__main__":
    main()
