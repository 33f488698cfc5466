"""Exact Shapley royalty shares: summed counts (one vectorised pass over all 2^n coalitions)
vs. the naive route of retraining one model per coalition, side by side.

    .venv/bin/python benchmarks/royalties_exact_speed.py [--holders 8] [--big 15]

Both routes give the same coalition values (checked to 1e-9 here); the ratio is the speed-up.
``--big`` times our route alone at a size where retraining 2^n models is out of reach.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from icml25.royalties import (
    KneserNeyCoalitionLM,
    NgramLogRatioUtility,
    coalition_matrix,
    exact_shapley,
    make_scenario,
    shapley_from_table,
)


def retrain_each_coalition(sc, text: str, order: int) -> np.ndarray:
    """Reference: fit a separate model on baseline + S for every coalition S."""
    names = list(sc.corpora)
    table = []
    for row in coalition_matrix(len(names)):
        # the coalition's data becomes one "holder" so every model shares the full vocabulary
        pooled = [d for name, member in zip(names, row, strict=True) if member
                  for d in sc.corpora[name]]
        other = [d for name, member in zip(names, row, strict=True) if not member
                 for d in sc.corpora[name]]
        parts = {"S": pooled, "rest": other}
        parts = {k: v for k, v in parts.items() if v}
        lm = KneserNeyCoalitionLM(order=order).fit(parts, sc.baseline)
        table.append(lm.log_prob(text, [k == "S" for k in parts]))
    table = np.array(table)
    return table - table[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--holders", type=int, default=8)
    ap.add_argument("--big", type=int, default=15)
    ap.add_argument("--order", type=int, default=5)
    args = ap.parse_args()

    sc = make_scenario(0, n_holders=args.holders, artifacts_per_holder=1)
    text = next(iter(sc.artifacts.values()))
    t0 = time.perf_counter()
    lm = KneserNeyCoalitionLM(order=args.order).fit(sc.corpora, sc.baseline)
    ours_res = exact_shapley(NgramLogRatioUtility(lm, text))
    ours = time.perf_counter() - t0

    t0 = time.perf_counter()
    table = retrain_each_coalition(sc, text, args.order)
    ref_phi = shapley_from_table(table)
    ref = time.perf_counter() - t0
    gap = float(np.max(np.abs(ref_phi - ours_res.phi)))

    print(f"machine: {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}")
    print(f"{args.holders} holders, char {args.order}-gram, {2**args.holders} coalitions")
    print(f"  ours (summed counts, vectorised): {ours:8.3f} s")
    print(f"  reference (retrain per coalition): {ref:8.3f} s")
    print(f"  ratio reference / ours: {ref / ours:8.1f}x   max |phi difference| {gap:.2e}")
    if gap > 1e-6:
        raise SystemExit("the two routes disagree")

    sc = make_scenario(0, n_holders=args.big, artifacts_per_holder=1)
    t0 = time.perf_counter()
    lm = KneserNeyCoalitionLM(order=args.order).fit(sc.corpora, sc.baseline)
    exact_shapley(NgramLogRatioUtility(lm, next(iter(sc.artifacts.values()))))
    big = time.perf_counter() - t0
    print(f"{args.big} holders ({2**args.big} coalitions), ours: {big:.2f} s "
          f"(retraining would take about {ref / 2**args.holders * 2**args.big:.0f} s)")


if __name__ == "__main__":
    main()
