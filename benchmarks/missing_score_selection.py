"""The penalty-selection targets, every rule measured side by side on the same fits.

Setting: d = 20, n = 500, 30% MCAR, star and random sparse (p_edge = 0.1) graphs. Per seed:

- one 20-point penalty path (the grid MissingScoreGGMCV uses) on each of 5 CV folds and on
  all rows;
- the estimator at every penalty of the path (the fit MissingScoreGGMCV would return had it
  chosen that penalty: path to it, then the polish): its F1 is the "path" curve, whose maximum
  is the oracle;
- the selection rules, all read from those same fits: extended BIC (``ebic-<gamma>``,
  observed-data Gaussian log-likelihood of the Gaussian-likelihood refit on all rows); K-fold
  CV of the held-out score-matching loss of the observed coordinates, minimum (``*-min``) and
  one-standard-error rule toward sparser penalties (``*-1se``), in six variants:
  ``cv-shao-cov`` (``--with-cv-path``; MissingScoreGGMCV's default: the all-rows path's edge
  sets refitted by Gaussian likelihood on ONE fold and scored on the other four (Shao's
  leave-many-out CV), the loss preconditioned by the training fold's covariance),
  ``cv-shao-plain`` (the same, plain loss), ``cv-path-cov`` (ordinary K-fold: refit on four
  folds, score on one; preconditioned loss), ``cv-path-gauss`` (ordinary K-fold, plain loss:
  the earlier default),
  ``cv-fold-gauss`` (``--with-cv-fold``: each fold's own path, Gaussian refit, K + 1 fits)
  and ``cv`` (``--with-cv``: each fold's own path, score-matching refit; the first CV);
- sklearn's GraphicalLassoCV on mean-imputed standardised data.

F1 is of the estimator's edge set (|P_ij| > threshold in standardised units) against the truth.
Cells (one JSON per graph and seed) are kept under ``--cells`` so an interrupted run resumes.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/missing_score_selection.py \
        --seeds 0-4 5-9
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np


def f1(P_std, adj, thr) -> float:
    iu = np.triu_indices_from(adj, 1)
    est, true = np.abs(P_std[iu]) > thr, adj[iu]
    tp = int((est & true).sum())
    return 0.0 if tp == 0 else 2 * tp / (int(est.sum()) + int(true.sum()))


def problem(graph: str, seed: int, d=20, n=500, p_missing=0.3):
    from icml25.missing_score import dense_precision, mcar_mask, sample_gaussian, star_precision

    rng = np.random.default_rng(seed)
    P, adj = star_precision(d, rng) if graph == "star" else dense_precision(d, rng, p_edge=0.1)
    X = sample_gaussian(n, np.zeros(d), P, rng)
    X[mcar_mask(X.shape, p_missing, rng)] = np.nan
    return X, adj


def _cv_choices(c: dict, name: str, X, adj, seed, path_polish, full=None, **kw) -> None:
    """Record MissingScoreGGMCV's CV-minimum and one-SE choices with settings ``kw``.

    With ``full`` (the all-rows path, fitted once per cell) and ``candidates="path"`` the
    class's own ``_cv`` scores that path instead of refitting it: exactly what ``fit`` does
    (``test_cv_on_the_all_rows_path_scores_its_own_edge_sets_with_one_path_fit`` checks that
    its estimate is that path's point at ``alpha_``), at one path fit per cell for every
    variant. Without it, ``fit`` runs in full and its estimate is checked against the path."""
    from types import SimpleNamespace

    from icml25.missing_score import MissingScoreGGMCV
    from icml25.missing_score.selection import one_se_index

    t0 = time.perf_counter()
    # one K-fold split, as in the tables of docs/missing_score.md (the class default is
    # five splits: benchmarks/missing_score_cv_repeats.py)
    cv = MissingScoreGGMCV(random_state=seed, selection="cv", path_polish=path_polish,
                           n_repeats=1, **kw)
    if full is not None and kw.get("candidates") == "path":
        cv._ggm = lambda **_: SimpleNamespace(fit=lambda _X: full)
        cv._cv(X, np.asarray(c["alphas"]), {}, cv.cv)
    else:
        cv.fit(X)
        assert np.allclose(cv.cv_alphas_, c["alphas"])
    c[f"seconds_{name}"] = time.perf_counter() - t0
    r = cv.cv_results_
    c["choice"][f"{name}-min"] = int(np.argmin(r["mean_test_loss"]))
    c["choice"][f"{name}-1se"] = one_se_index(r["mean_test_loss"], r["std_test_loss"], cv.cv)
    if full is None:  # the estimate is the all-rows path point at the chosen penalty
        got = f1(cv.precision_ * np.outer(cv.scale_, cv.scale_), adj,
                 cv.best_estimator_.threshold)
        assert abs(got - c["f1_path"][c["choice"][f"{name}-min"]]) < 1e-12, (got, name)


def cell(graph: str, seed: int, path_polish: int, old: dict | None, with_cv: bool,
         with_cv_path: bool = False, with_cv_fold: bool = False) -> dict:
    """One graph and seed; reuses what ``old`` (a stored cell) already has."""
    from sklearn.covariance import GraphicalLassoCV

    from icml25.missing_score import MissingScoreGGM, MissingScoreGGMCV
    from icml25.missing_score.selection import ebic_path, extended_bic, one_se_index

    X, adj = problem(graph, seed)
    n, d = X.shape
    c = dict(old or {})
    grid = MissingScoreGGMCV(random_state=seed, path_polish=path_polish)._grid(X)
    paths = []  # the full-data path, fitted at most once per cell

    def full_path():
        # the estimator MissingScoreGGMCV returns at each penalty
        if not paths:
            paths.append(MissingScoreGGM(
                alpha=float(grid[-1]), alpha_max=float(grid[0]), n_alphas=grid.size,
                n_iter_polish=0 if path_polish else 30, n_iter_path_polish=path_polish,
                random_state=seed).fit(X))
        return paths[0]

    if "f1_path" not in c:
        t0 = time.perf_counter()
        full = full_path()
        e = ebic_path(full, X, 0.0)
        t_path = time.perf_counter() - t0
        sc = np.outer(full.scale_, full.scale_)
        Xm = np.where(np.isnan(X), np.nanmean(X, 0), X)
        Xm = (Xm - Xm.mean(0)) / Xm.std(0)
        g = GraphicalLassoCV().fit(Xm)
        c.update({"graph": graph, "seed": seed, "path_polish": path_polish,
                  "alphas": grid.tolist(),
                  "f1_path": [f1(P * sc, adj, full.threshold) for P in full.path_],
                  "loglik": e["loglik"].tolist(), "n_edges_path": e["n_edges"].tolist(),
                  "supports": e["supports"],
                  "choice": {}, "f1_glasso_cv": f1(g.precision_, adj, 1e-4),
                  "seconds_path_ebic": t_path, "n_true_edges": int(adj.sum() // 2)})
    for gamma in (0.0, 0.25, 0.5, 1.0):
        v = [extended_bic(ll, k, n, d, gamma)
             for ll, k in zip(c["loglik"], c["n_edges_path"], strict=True)]
        c["choice"][f"ebic-{gamma:g}"] = int(np.argmin(v))
    if with_cv_path and "cv-path-gauss-min" not in c["choice"]:
        _cv_choices(c, "cv-path-gauss", X, adj, seed, path_polish, full_path(), candidates="path",
                    refit="gaussian", preconditioner="identity", scheme="kfold")
    if with_cv_path and "cv-path-cov-min" not in c["choice"]:
        _cv_choices(c, "cv-path-cov", X, adj, seed, path_polish, full_path(), candidates="path",
                    refit="gaussian", preconditioner="covariance", scheme="kfold")
    if with_cv_path and "cv-shao-cov-min" not in c["choice"]:
        _cv_choices(c, "cv-shao-cov", X, adj, seed, path_polish, full_path(), candidates="path",
                    refit="gaussian", preconditioner="covariance", scheme="shao")
    if with_cv_path and "cv-shao-plain-min" not in c["choice"]:
        _cv_choices(c, "cv-shao-plain", X, adj, seed, path_polish, full_path(),
                    candidates="path",
                    refit="gaussian", preconditioner="identity", scheme="shao")
    if with_cv_fold and "cv-fold-gauss-min" not in c["choice"]:
        _cv_choices(c, "cv-fold-gauss", X, adj, seed, path_polish, candidates="fold",
                    refit="gaussian", preconditioner="identity", scheme="kfold")
    if with_cv and "cv-min" not in c["choice"]:
        t0 = time.perf_counter()
        cv = MissingScoreGGMCV(random_state=seed, selection="cv", candidates="fold", n_repeats=1,
                               refit="support", preconditioner="identity", scheme="kfold",
                               path_polish=path_polish).fit(X)
        c["seconds_cv"] = time.perf_counter() - t0
        assert np.allclose(cv.cv_alphas_, c["alphas"])
        r = cv.cv_results_
        c["choice"]["cv-min"] = int(np.argmin(r["mean_test_loss"]))
        c["choice"]["cv-1se"] = one_se_index(r["mean_test_loss"], r["std_test_loss"], cv.cv)
        c["f1_cv_output"] = f1(cv.precision_ * np.outer(cv.scale_, cv.scale_), adj,
                               cv.best_estimator_.threshold)
    return c


def parse_seeds(spec: str) -> list[int]:
    if "-" in spec:
        a, b = spec.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in spec.split(",")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", nargs="+", default=["0-4"],
                    help="seed groups, each summarised on its own (e.g. 0-4 5-9)")
    ap.add_argument("--graphs", nargs="+", default=["star", "sparse"])
    ap.add_argument("--cells", default="data/missing_score/selection_cells")
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--tag", default="_mle",
                    help="suffix of the cells folder (the EBIC refit: _mle = Gaussian "
                         "likelihood refit, the current code; '' = the score-matching refit "
                         "of the first run, kept for the CV rules)")
    ap.add_argument("--with-cv", action="store_true",
                    help="also run the first K-fold CV (fold paths, score-matching refit; "
                         "about 6x the cost of EBIC)")
    ap.add_argument("--with-cv-path", action="store_true",
                    help="also run MissingScoreGGMCV's default CV (all-rows path's edge sets, "
                         "Gaussian refit on the training folds, covariance-preconditioned "
                         "loss) and the same with the plain loss")
    ap.add_argument("--with-cv-fold", action="store_true",
                    help="also run the CV with each fold's own path and the Gaussian refit")
    ap.add_argument("--path-polish", type=int, default=3,
                    help="MissingScoreGGMCV path_polish (n_iter_path_polish of every fit)")
    a = ap.parse_args()
    out = Path(a.cells) / f"path_polish{a.path_polish}{a.tag}"
    out.mkdir(parents=True, exist_ok=True)
    import torch

    torch.set_num_threads(1)
    for group in a.seeds:
        seeds = parse_seeds(group)
        print(f"\n== seeds {group} ==")
        for graph in a.graphs:
            cells = []
            for s in seeds:
                path = out / f"{graph}_seed{s}.json"
                old = None if a.recompute or not path.exists() else json.loads(path.read_text())
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    c = cell(graph, s, a.path_polish, old, a.with_cv, a.with_cv_path,
                             a.with_cv_fold)
                path.write_text(json.dumps(c))
                cells.append(c)
            oracle = np.mean([max(c["f1_path"]) for c in cells])
            rules = sorted(set.intersection(*(set(c["choice"]) for c in cells)))
            line = [f"{graph:6s} oracle {oracle:.3f}"]
            for r in rules:
                v = np.mean([c["f1_path"][c["choice"][r]] for c in cells])
                line.append(f"{r} {v:.3f} ({v - oracle:+.3f})")
            line.append(f"GraphicalLassoCV {np.mean([c['f1_glasso_cv'] for c in cells]):.3f}")
            print("; ".join(line))
            for c in cells:
                print(f"  seed {c['seed']}: best k={int(np.argmax(c['f1_path']))} "
                      f"F1 {max(c['f1_path']):.3f}; "
                      + ", ".join(f"{r} k={c['choice'][r]} {c['f1_path'][c['choice'][r]]:.3f}"
                                  for r in rules)
                      + f"; glassoCV {c['f1_glasso_cv']:.3f}")


if __name__ == "__main__":
    main()
