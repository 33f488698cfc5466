"""ACI under distribution shift and learn-then-test FWER: the docs/conformal.md tables.

Part ``aci``: ``--series`` series of 6,000 |N(0, s_t^2)| scores whose scale jumps 1 -> 3 -> 0.5
at t = 2,000 and 4,000. Split conformal calibrated once on the first 500 scores vs ACI
(several step sizes, window 500) vs the aggregated variant: miscoverage per regime (mean over
series) and the deterministic ACI bound. ``--plot PATH`` writes the coverage-over-time figure of
the first series.

Part ``ltt``: precision at a score threshold where precision is *not* monotone (P(y = 1 | s) =
0.95 on [0.5, 0.9), 0.3 elsewhere; true FDR from a fine grid), alpha 0.25, delta 0.1, n 2,000,
``--splits`` calibration sets: family-wise error (some certified threshold has true FDR >
alpha), power (something certified), mean chosen threshold, for Bonferroni, Holm, fixed sequence
(from the strictest threshold down) and the naive "empirical FDR <= alpha" choice.

    .venv/bin/python benchmarks/conformal_sequential.py [--series 20] [--splits 300] [--plot f.png]
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np

from icml25.conformal import InfeasibleRiskWarning
from icml25.conformal.adaptive import (
    AdaptiveConformal,
    AggregatedAdaptiveConformal,
    plot_coverage_over_time,
)
from icml25.conformal.ltt import PrecisionController

ALPHA = 0.1


def shifted(rng, t=6_000):
    scale = np.r_[np.ones(t // 3), 3 * np.ones(t // 3), 0.5 * np.ones(t - 2 * (t // 3))]
    return np.abs(rng.normal(size=t) * scale)


def part_aci(series: int, plot: str | None) -> None:
    names = ["split, calibrated once (first 500)"] + [f"ACI gamma={g}" for g in
                                                        (0.002, 0.01, 0.05)] + ["aggregated ACI"]
    err = {n: [] for n in names}
    bounds = {}
    first = {}
    for i in range(series):
        scores = shifted(np.random.default_rng(i))
        q = np.sort(scores[:500])[math.ceil((1 - ALPHA) * 501) - 1]
        runs = {names[0]: np.r_[np.zeros(500), scores[500:] > q]}
        for g in (0.002, 0.01, 0.05):
            res = AdaptiveConformal(ALPHA, g, window=500).run(scores)
            runs[f"ACI gamma={g}"] = res.errors
            bounds[f"ACI gamma={g}"] = res.bound
        runs["aggregated ACI"] = AggregatedAdaptiveConformal(ALPHA, window=500).run(scores).errors
        for n in names:
            e = runs[n]
            err[n].append([e[500:2000].mean(), e[2000:4000].mean(), e[4000:].mean(),
                           e[500:].mean()])
        if i == 0:
            first = runs
    print(f"ACI: {series} series, target miscoverage {ALPHA}; per regime (scale 1 / 3 / 0.5), "
          "t >= 500\n")
    print("| method | miss, scale 1 | miss, scale 3 | miss, scale 0.5 | long run | ACI bound |")
    print("|---|---|---|---|---|---|")
    for n in names:
        m = np.mean(err[n], axis=0)
        b = f"{bounds[n]:.3f}" if n in bounds else "-"
        print(f"| {n} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} | {m[3]:.3f} | {b} |")
    if plot:
        ax = plot_coverage_over_time({k: first[k] for k in (names[0], "ACI gamma=0.01",
                                                             "aggregated ACI")}, ALPHA, 300)
        ax.set_title("Coverage over time, scale 1 -> 3 -> 0.5 at t = 2,000 / 4,000")
        ax.figure.savefig(plot, dpi=110, bbox_inches="tight")
        print(f"\nfigure: {plot}")


def part_ltt(splits: int) -> None:
    alpha, delta, n = 0.25, 0.1, 2_000
    grid = np.linspace(0, 0.98, 50)
    fine = np.linspace(0, 1, 400_001)

    def p1(s):
        return np.where((s >= 0.5) & (s < 0.9), 0.95, 0.3)

    tf = np.array([1 - p1(fine[fine >= lam]).mean() for lam in grid])
    rows = {}
    rng = np.random.default_rng(0)
    data = [(s, rng.uniform(size=n) < p1(s)) for s in (rng.uniform(size=n)
                                                       for _ in range(splits))]
    for proc in ("bonferroni", "holm", "fixed_sequence", "naive"):
        bad = found = 0
        lams = []
        for s, y in data:
            if proc == "naive":
                pred = s[:, None] >= grid[None, :]
                emp = np.array([(~y[pred[:, j]]).mean() if pred[:, j].any() else 0.0
                                for j in range(grid.size)])
                valid = emp <= alpha
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", InfeasibleRiskWarning)
                    ctl = PrecisionController(alpha, delta, procedure=proc, lambdas=grid)
                    valid = ctl.fit(s, y).ltt_.valid_
            bad += bool(np.any(tf[valid] > alpha))
            found += bool(valid.any())
            if valid.any():
                lams.append(grid[valid].min())
        rows[proc] = (bad / splits, found / splits, np.mean(lams) if lams else math.nan)
    print(f"\nLTT: precision at a threshold, non-monotone, alpha {alpha}, delta {delta}, n {n}, "
          f"{splits} calibration sets; thresholds with true FDR <= alpha: "
          f"{grid[tf <= alpha].min():.2f}-{grid[tf <= alpha].max():.2f}\n")
    print("| procedure | family-wise error | certified something | mean lowest certified "
          "threshold |")
    print("|---|---|---|---|")
    se = math.sqrt(delta * (1 - delta) / splits)
    for proc, (fwer, power, lam) in rows.items():
        print(f"| {proc} | {fwer:.3f} | {power:.2f} | {lam:.3f} |")
    print(f"\n(delta + 3 SE = {delta + 3 * se:.3f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("aci", "ltt", "all"), default="all")
    ap.add_argument("--series", type=int, default=20)
    ap.add_argument("--splits", type=int, default=300)
    ap.add_argument("--plot", default=None)
    a = ap.parse_args()
    if a.part in ("aci", "all"):
        part_aci(a.series, a.plot)
    if a.part in ("ltt", "all"):
        part_ltt(a.splits)


if __name__ == "__main__":
    main()
