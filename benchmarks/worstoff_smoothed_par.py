"""Raw vs smoothed empirical PAR against the population PAR (closed form), one run side by side.

Gaussian data (n = 2000, R^2 = 0.2, beta = 0.2, steps 0.1), B = 1000 bootstrap resamples,
seed 0; prints the table in docs/worstoff.md ("A smoothed PAR curve").

    .venv/bin/python benchmarks/worstoff_smoothed_par.py [--n 2000] [--bandwidth 0.05]
"""

from __future__ import annotations

import argparse

import numpy as np

from icml25.worstoff import bootstrap_evaluation, smoothed_par, value


def population_par(alpha, beta, r2, d_alpha, d_r2):
    """Population value of the empirical PAR (residual scaling gives a predictor whose squared
    correlation with Y is c2; recall depends only on it)."""
    delta = 1 - np.sqrt(1 - d_r2 / (1 - r2))
    c2 = (r2 + delta * (1 - r2)) ** 2 / (r2 + delta ** 2 * (1 - r2))
    v = value(alpha, beta, r2)
    return (value(alpha + d_alpha, beta, r2) - v) / (value(alpha, beta, c2) - v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--r2", type=float, default=0.2)
    ap.add_argument("--beta", type=float, default=0.2)
    ap.add_argument("--bandwidth", type=float, default=0.05)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    yhat = rng.normal(0, np.sqrt(a.r2), a.n)
    y = yhat + rng.normal(0, np.sqrt(1 - a.r2), a.n)
    al = np.round(np.arange(0.25, 0.51, 0.05), 2)
    ev = bootstrap_evaluation(y, yhat, al, a.beta, n_boot=a.n_boot, seed=a.seed)
    sm = smoothed_par(y, yhat, a.beta, alphas=al, bandwidth=a.bandwidth, n_boot=a.n_boot,
                      seed=a.seed)
    rows = {"population PAR (closed form)": [population_par(x, a.beta, a.r2, 0.1, 0.1)
                                             for x in al],
            "raw empirical PAR": ev.par,
            "raw 95 % interval width": ev.par_ci[:, 1] - ev.par_ci[:, 0],
            f"smoothed PAR (bandwidth {a.bandwidth:g})": sm.par,
            "smoothed 95 % band width": sm.par_ci[:, 1] - sm.par_ci[:, 0]}
    print("| alpha | " + " | ".join(f"{x:.2f}" for x in al) + " |")
    print("|---" * (len(al) + 1) + "|")
    for name, v in rows.items():
        print(f"| {name} | " + " | ".join(f"{x:.2f}" for x in v) + " |")


if __name__ == "__main__":
    main()
