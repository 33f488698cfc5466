"""Royalty shares for 10,000 holders on the cells executor: wall time, CPU seconds and the
error against the exact Shapley values (the coverage utility has them in closed form).

    .venv/bin/python benchmarks/royalties_scale.py --holders 10000 --jobs 2 --tol 1e-3 1e-5 \\
        --dump /tmp/royalties_10k.npz

``--dump`` writes the utility (holder x feature table, weights) and the exact values, so a
library outside the project can be run on the same utility (benchmarks/RESULTS.md says how
pyDVL was run on it). Prints one JSON line per tolerance.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    from icml25.core.cells import CellRunner, make_executor
    from icml25.royalties.scale import coverage_scenario, sampled_shares

    ap = argparse.ArgumentParser()
    ap.add_argument("--holders", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--tol", type=float, nargs="+", default=[1e-3])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump", default=None)
    a = ap.parse_args()
    utility = coverage_scenario(a.holders, seed=a.seed)
    exact = utility.exact_shapley()
    if a.dump:
        np.savez_compressed(a.dump, table=utility.table, weights=utility.weights, exact=exact)
    for tol in a.tol:
        c0, t0 = cpu_seconds(), time.perf_counter()
        with make_executor(a.jobs) as ex:
            est = sampled_shares(utility, tol=tol, seed=a.seed, batch_size=a.batch_size,
                                 round_batches=2 * ex.workers, runner=CellRunner(ex),
                                 min_permutations=2 * a.batch_size)
            workers = ex.workers
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        err = np.array(est.phi) - exact
        rmse = float(np.sqrt(np.mean(np.square(err))))
        print(json.dumps({
            "holders": a.holders, "jobs": workers, "tol": tol, "converged": est.converged,
            "permutations": est.n_permutations, "max_se_over_total": est.max_rel_se,
            "max_abs_error_over_total": float(np.abs(err).max() / est.grand_total),
            "rmse_over_total": rmse / est.grand_total,
            "within_2se": float(np.mean(np.abs(err) <= 2 * np.array(est.std_errors))),
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "rmse_sqrt_cpu_over_total": rmse * np.sqrt(cpu) / est.grand_total}), flush=True)


if __name__ == "__main__":
    main()
