"""Does averaging the CV loss over repeated K-fold splits (``MissingScoreGGMCV(n_repeats=R)``)
make the penalty choice less dependent on the split, and closer to the best penalty?

The selection setting: d = 20, n = 500, 30% MCAR, star and random sparse (p_edge = 0.1) graphs,
method iw, 20 penalties, 5 folds, the class default (Shao's CV, covariance-preconditioned
loss, minimum). Per graph and seed: one all-rows path fit (the estimator's candidates), then
the class's own ``_cv`` with ``n_repeats=--splits`` on that path (as
``missing_score_selection.py`` does), keeping every split's held-out loss curve. Repeat r of
``n_repeats=S`` is the same split as repeat r of any ``n_repeats > r``, so the first R repeats
are exactly what ``n_repeats=R`` computes; the other disjoint groups of R repeats are what
other fold seeds would give (the split sensitivity).

For each R it prints the mean F1 gap to the best penalty on the path (the oracle) of the
estimator's choice (repeats 0..R-1) and, over the S // R disjoint groups of R repeats, the
worst and the mean group (each group's gap averaged over the seeds) and the mean absolute
change of a seed's gap between groups.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/missing_score_cv_repeats.py \\
        --seeds 20-24 --splits 10
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from missing_score_selection import f1, parse_seeds, problem  # noqa: E402


def cell(graph: str, seed: int, splits: int, path_polish: int = 3) -> dict:
    from types import SimpleNamespace

    from icml25.missing_score import MissingScoreGGM, MissingScoreGGMCV

    X, adj = problem(graph, seed)
    cv = MissingScoreGGMCV(random_state=seed, path_polish=path_polish, n_repeats=splits)
    grid = cv._grid(X)
    t0 = time.perf_counter()
    full = MissingScoreGGM(alpha=float(grid[-1]), alpha_max=float(grid[0]), n_alphas=grid.size,
                           n_iter_polish=0, n_iter_path_polish=path_polish,
                           random_state=seed).fit(X)
    t_path = time.perf_counter() - t0
    sc = np.outer(full.scale_, full.scale_)
    t0 = time.perf_counter()
    cv._ggm = lambda **_: SimpleNamespace(fit=lambda _X: full)  # score the shared path
    cv._cv(X, grid, {}, cv.cv)
    t_cv = time.perf_counter() - t0
    r = cv.cv_results_
    k = cv.cv
    return {"graph": graph, "seed": seed, "splits": splits, "folds": k,
            "alphas": grid.tolist(),
            "f1_path": [f1(P * sc, adj, full.threshold) for P in full.path_],
            "split_losses": [r[f"split{i}_test_loss"].tolist() for i in range(k * splits)],
            "seconds_path": t_path, "seconds_cv": t_cv}


def choice(c: dict, repeats: range) -> int:
    """The CV minimum from the held-out losses of the given repeats."""
    k = c["folds"]
    rows = [c["split_losses"][r * k + i] for r in repeats for i in range(k)]
    mean = np.mean(np.asarray(rows, float), axis=0)
    return int(np.argmin(np.where(np.isfinite(mean), mean, np.inf)))


def gaps(c: dict, R: int) -> list[float]:
    """F1 gap to the oracle of each disjoint group of R repeats (group 0 = n_repeats=R)."""
    best = max(c["f1_path"])
    return [c["f1_path"][choice(c, range(g * R, (g + 1) * R))] - best
            for g in range(c["splits"] // R)]


def summary(cells: list[dict], Rs) -> list[str]:
    out = []
    for R in Rs:
        G = np.array([gaps(c, R)[: cells[0]["splits"] // R] for c in cells])  # seeds x groups
        per_group = G.mean(axis=0)
        change = float(np.mean(np.abs(G - G[:, :1]))) if G.shape[1] > 1 else float("nan")
        out.append(f"R={R:2d}: estimator {per_group[0]:+.3f}; over {G.shape[1]} split groups "
                   f"worst {per_group.min():+.3f} mean {per_group.mean():+.3f} best "
                   f"{per_group.max():+.3f}; mean |seed gap - estimator's| {change:.3f}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", nargs="+", default=["20-24"])
    ap.add_argument("--graphs", nargs="+", default=["star", "sparse"])
    ap.add_argument("--splits", type=int, default=10, help="repeats S of the K-fold split")
    ap.add_argument("--repeats", type=int, nargs="+", default=[1, 2, 3, 5, 10])
    ap.add_argument("--cells", default="data/missing_score/cv_repeats_cells")
    a = ap.parse_args()
    out = Path(a.cells)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    torch.set_num_threads(1)
    Rs = [R for R in a.repeats if R <= a.splits]
    for group in a.seeds:
        print(f"\n== seeds {group} ==", flush=True)
        for graph in a.graphs:
            cells = []
            for s in parse_seeds(group):
                path = out / f"{graph}_seed{s}.json"
                c = json.loads(path.read_text()) if path.exists() else None
                if c is None or c["splits"] < a.splits:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        c = cell(graph, s, a.splits)
                    path.write_text(json.dumps(c))
                c = {**c, "splits": a.splits,
                     "split_losses": c["split_losses"][: a.splits * c["folds"]]}
                cells.append(c)
                print(f"  {graph} seed {s}: oracle {max(c['f1_path']):.3f}, gaps by split "
                      f"(R=1) " + " ".join(f"{g:+.3f}" for g in gaps(c, 1))
                      + f"  [{c['seconds_path']:.0f} s path, {c['seconds_cv']:.0f} s CV]",
                      flush=True)
            oracle = np.mean([max(c["f1_path"]) for c in cells])
            print(f"{graph} oracle {oracle:.3f}")
            for line in summary(cells, Rs):
                print(f"  {line}", flush=True)


if __name__ == "__main__":
    main()
