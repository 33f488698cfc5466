"""How long would ``icml25 reproduce missing_score-* --full`` take? Times one unit of work of
each full experiment at its full settings but on a shortened schedule, and scales it up.

A unit is one fit of one method on one data set: Figure 1 (truncated Gaussian) fits at
``n_iter`` Adam steps (timed at ``--frac`` of them), the GGM experiments at ``n_alphas``
penalties (timed at ``--frac`` of the path). Each experiment's total is the sum over its jobs
(levels x reps x methods) of the scaled unit times. Extrapolation assumes cost linear in
steps / penalties (true of the fitting loops; the warm start is counted in full).

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/missing_score_full_cost.py

``--from-cells DIR`` instead reads the CPU seconds the finished ``--full`` cells recorded
(``benchmarks/missing_score_full_cells.py``), per experiment and level, and estimates what the
unfinished cells will cost from them (a level with no finished cell takes the mean of the
experiment's measured levels, flagged). This is the estimate to trust once cells have run:
the unit timings above were taken before the EM and pairwise-covariance speed-ups, at load 18.

    .venv/bin/python benchmarks/missing_score_full_cost.py \\
        --from-cells data/missing_score/full_cells --out data/missing_score/full_cost.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

LEVELS = {"missing_score-truncated-gaussian": "ns", "missing_score-star-auc": "p_missing",
          "missing_score-dimension-sweep": "ds"}


def from_cells(root: Path) -> dict:
    """Measured cost per cell (CPU seconds; wall seconds for old cells without CPU time) and
    the estimated cost of the cells not yet run, per experiment."""
    from icml25.core import load_experiments, select

    load_experiments()
    est: dict = {"method": "measured from the finished --full cells (CPU seconds per cell); "
                           "unfinished cells estimated from the mean of their level",
                 "cells_dir": str(root)}
    left = 0.0
    for name, key in LEVELS.items():
        (exp,) = select([name])
        full = exp.full
        levels, reps = full[key], full["reps"]
        per: dict[int, list[float]] = {i: [] for i in range(len(levels))}
        wall_only = 0  # cells from before CPU time was recorded: wall time, an upper bound
        for f in sorted((root / name).glob("level*_rep*.json")):
            i = int(f.stem.split("_")[0][5:])
            c = json.loads(f.read_text())
            wall_only += "cpu_seconds" not in c
            per[i].append(float(c.get("cpu_seconds", c["seconds"])))
        measured = [v for vs in per.values() for v in vs]
        if not measured:
            est[name] = {"cells": len(levels) * reps, "finished": 0,
                         "remaining_cpu_hours": None, "note": "no cell finished: not measured"}
            continue
        fallback = float(np.mean(measured))
        by_level, remaining = {}, 0.0
        for i, lv in enumerate(levels):
            mean = float(np.mean(per[i])) if per[i] else fallback
            by_level[f"{key}={lv}"] = {"finished": len(per[i]), "of": reps,
                                       "cpu_seconds_per_cell": round(mean, 1),
                                       **({} if per[i] else {"extrapolated": True})}
            remaining += (reps - len(per[i])) * mean
        left += remaining
        est[name] = {"cells": len(levels) * reps, "finished": len(measured),
                     "cells_timed_by_wall_clock": wall_only,
                     "finished_cpu_hours": round(sum(measured) / 3600, 2),
                     "remaining_cpu_hours": round(remaining / 3600, 2), "by_level": by_level}
    est["remaining_cpu_hours_total"] = round(left / 3600, 2)
    est["note"] = ("one thread per run; wall time equals CPU time on an idle core and was "
                   "1-2x it on the shared 2-core VM")
    return est


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frac", type=float, default=0.1)
    ap.add_argument("--out", default=None, help="write the estimate as JSON here")
    ap.add_argument("--from-cells", type=Path, default=None,
                    help="estimate from the finished --full cells in this folder instead")
    a = ap.parse_args()
    if a.from_cells is not None:
        est = from_cells(a.from_cells)
        text = json.dumps(est, indent=1)
        print(text)
        if a.out:
            Path(a.out).write_text(text + "\n")
        return
    import torch

    torch.set_num_threads(1)
    from icml25.core import load_experiments, select
    from icml25.missing_score import MissingScoreGGM, em_glasso, glasso_mean_impute, glasso_pairwise
    from icml25.missing_score.experiments import (
        fit_truncated,
        star_problem,
        truncated_gaussian_problem,
    )

    load_experiments()
    full = {e.name: e.full for e in select(["missing_score"])}
    rng = np.random.default_rng(0)
    est: dict[str, dict] = {}

    # Figure 1: 5 n x 20 reps x 4 methods, n_iter Adam steps each
    s = dict(full["missing_score-truncated-gaussian"])
    steps = s["n_iter"]
    s["n_iter"] = max(10, int(steps * a.frac))
    mu, P, box = truncated_gaussian_problem(s["d"], rng)
    from icml25.missing_score.data import mcar_mask, sample_gaussian

    unit = {}
    for n in (min(s["ns"]), max(s["ns"])):
        X = sample_gaussian(n, mu, P, rng, domain=box)
        X = np.where(mcar_mask(X.shape, s["p_missing"], rng), np.nan, X)
        for m in s["methods"]:
            t = time.perf_counter()
            fit_truncated(X, box, m, s, 0)
            unit[(n, m)] = (time.perf_counter() - t) * steps / s["n_iter"]
    total = 0.0
    for n in s["ns"]:  # linear interpolation in n between the two timed sizes
        lo, hi = min(s["ns"]), max(s["ns"])
        w = (n - lo) / (hi - lo)
        total += s["reps"] * sum((1 - w) * unit[(lo, m)] + w * unit[(hi, m)]
                                 for m in s["methods"])
    est["missing_score-truncated-gaussian"] = {
        "unit_seconds": {f"n={n} {m}": round(v, 1) for (n, m), v in unit.items()},
        "jobs": len(s["ns"]) * s["reps"] * len(s["methods"]), "total_hours": total / 3600}
    print(json.dumps(est, indent=1), flush=True)

    def ggm_unit(s, d, p, method, truncate):
        X, adj, dom = star_problem(d, s["n"], p, rng, truncate)
        k = max(2, int(s["n_alphas"] * a.frac))
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method in ("glasso_mean", "glasso_pairwise", "em_glasso"):
                {"glasso_mean": glasso_mean_impute, "glasso_pairwise": glasso_pairwise,
                 "em_glasso": em_glasso}[method](X)
                return time.perf_counter() - t
            t0 = time.perf_counter()
            MissingScoreGGM(method=method, alpha=s["alpha_min"], n_alphas=1, lr=s["lr"],
                            n_iter_start=s["n_iter_start"], n_iter_per_alpha=1,
                            proposal_scale=s.get("proposal_scale", 1.0),
                            var_hidden=tuple(s["var_hidden"]), var_steps=s["var_steps"],
                            domain=dom, n_iter_polish=0, random_state=0).fit(X)
            start = time.perf_counter() - t0
            t0 = time.perf_counter()
            MissingScoreGGM(method=method, alpha=s["alpha_min"], n_alphas=k, lr=s["lr"],
                            n_iter_start=0, n_iter_per_alpha=s["n_iter_per_alpha"],
                            proposal_scale=s.get("proposal_scale", 1.0),
                            var_hidden=tuple(s["var_hidden"]), var_steps=s["var_steps"],
                            domain=dom, n_iter_polish=0, random_state=0).fit(X)
            per_alpha = (time.perf_counter() - t0) / k
        return start + per_alpha * s["n_alphas"]

    s = full["missing_score-star-auc"]
    unit = {m: ggm_unit(s, s["d"], 0.5, m, s["truncate"]) for m in s["methods"]}
    jobs = len(s["p_missing"]) * s["reps"]
    est["missing_score-star-auc"] = {"unit_seconds": {m: round(v, 1) for m, v in unit.items()},
                                     "jobs": jobs * len(s["methods"]),
                                     "total_hours": jobs * sum(unit.values()) / 3600}
    print(json.dumps(est["missing_score-star-auc"], indent=1), flush=True)

    s = full["missing_score-dimension-sweep"]
    unit = {(d, m): ggm_unit(s, d, s["p_missing"], m, False)
            for d in s["ds"] for m in s["methods"]}
    est["missing_score-dimension-sweep"] = {
        "unit_seconds": {f"d={d} {m}": round(v, 1) for (d, m), v in unit.items()},
        "jobs": len(unit) * s["reps"], "total_hours": s["reps"] * sum(unit.values()) / 3600}
    print(json.dumps(est["missing_score-dimension-sweep"], indent=1), flush=True)
    import os

    est["load_average"] = os.getloadavg()
    est["frac"] = a.frac
    if a.out:
        with open(a.out, "w") as f:
            json.dump(est, f, indent=1)
    print("total hours:", round(sum(v["total_hours"] for k, v in est.items()
                                    if isinstance(v, dict)), 1))


if __name__ == "__main__":
    main()
