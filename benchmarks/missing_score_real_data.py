"""The default graph selection on real and generated data, side by side with
GraphicalLassoCV on mean-imputed data.

Data: scikit-learn's bundled wine (178 x 13), diabetes (442 x 10) and breast cancer
(569 x 30), and generated star / random sparse graphs (d = 20, n = 500, p_edge 0.1, the
package's own generators); each with 30% of its cells missing completely at random.

Methods (each on standardised columns, NaN handed to our estimator as is):

- ``ebic``: ``MissingScoreGGM()`` - the default (alpha="auto", extended BIC, gamma 0.5);
- ``stars``: ``MissingScoreGGM(selection="stars")`` (20 subsamples, beta 0.05);
- ``ebic-npn``: the default after the nonparanormal transform;
- ``glassocv-mean``: sklearn ``GraphicalLassoCV`` (5 folds) on mean-imputed data.

Measured per (data set, method, seed): edges (of d(d-1)/2), wall and CPU seconds; on
generated data the F1 of the edge set against the true graph; on real data, where no truth
exists, each method is also fitted on the complete data, and we report the F1 and the AUC of
the masked fit's edge ranking (|partial correlation|) against that complete-data graph and
the relative Frobenius error of the off-diagonal partial correlations.

Cells (one JSON per data set, method and seed) are kept under ``--cells``; an interrupted run
resumes. The README quick start (chain graph, d = 20, n = 300, 20% missing) is timed too.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/missing_score_real_data.py \
        --seeds 0-2
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

REAL = ("wine", "diabetes", "breast_cancer")
GENERATED = ("star", "random")
METHODS = ("ebic", "stars", "ebic-npn", "glassocv-mean")


def _load(name: str) -> np.ndarray:
    from sklearn import datasets

    loader = {"wine": datasets.load_wine, "diabetes": datasets.load_diabetes,
              "breast_cancer": datasets.load_breast_cancer}[name]
    X = loader().data.astype(float)
    return (X - X.mean(0)) / X.std(0)


def problem(name: str, seed: int, p_missing: float = 0.3):
    """(complete data, masked data, true adjacency or None)."""
    from icml25.missing_score import dense_precision, mcar_mask, sample_gaussian, star_precision

    rng = np.random.default_rng(1000 + seed)
    if name in REAL:
        X, adj = _load(name), None
    else:
        d, n = 20, 500
        P, adj = star_precision(d, rng) if name == "star" else dense_precision(d, rng, 0.1)
        X = sample_gaussian(n, np.zeros(d), P, rng)
    Xm = X.copy()
    Xm[mcar_mask(X.shape, p_missing, rng)] = np.nan
    return X, Xm, adj


def fit(method: str, X, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(partial correlations, edge set) of one method on X (NaN = missing)."""
    if method == "glassocv-mean":
        from sklearn.covariance import GraphicalLassoCV

        Z = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
        Z = (Z - Z.mean(0)) / Z.std(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            P = GraphicalLassoCV(cv=5).fit(Z).precision_
        edges = np.abs(P) > 1e-4
    else:
        from icml25.missing_score import MissingScoreGGM

        kw = {"ebic": {}, "stars": {"selection": "stars"},
              "ebic-npn": {"marginal_transform": "nonparanormal"}}[method]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = MissingScoreGGM(random_state=seed, **kw).fit(X)
        P = est.precision_ * np.outer(est.scale_, est.scale_)
        edges = np.abs(P) > est.threshold
    dg = np.sqrt(np.abs(np.diag(P)))
    R = -P / np.outer(dg, dg)
    np.fill_diagonal(R, 0.0)
    np.fill_diagonal(edges, False)
    return R, edges


def f1(est, ref) -> float:
    iu = np.triu_indices_from(ref, 1)
    e, t = est[iu], ref[iu]
    tp = int((e & t).sum())
    return 0.0 if tp == 0 else 2 * tp / (int(e.sum()) + int(t.sum()))


def auc(scores, ref) -> float | None:
    from sklearn.metrics import roc_auc_score

    iu = np.triu_indices_from(ref, 1)
    t = ref[iu]
    if t.all() or not t.any():
        return None
    return float(roc_auc_score(t, np.abs(scores[iu])))


def cell(name: str, method: str, seed: int) -> dict:
    X, Xm, adj = problem(name, seed)
    d = X.shape[1]
    t0, c0 = time.perf_counter(), time.process_time()
    R, E = fit(method, Xm, seed)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    iu = np.triu_indices(d, 1)
    out = {"data": name, "method": method, "seed": seed, "d": d, "n": X.shape[0],
           "edges": int(E[iu].sum()), "possible": d * (d - 1) // 2, "wall_s": wall,
           "cpu_s": cpu}
    if adj is not None:
        out["f1_truth"] = f1(E, adj)
        out["auc_truth"] = auc(R, adj)
    else:
        R0, E0 = fit(method, X, seed)
        out["edges_complete"] = int(E0[iu].sum())
        out["f1_vs_complete"] = f1(E, E0)
        out["auc_vs_complete"] = auc(R, E0)
        out["pcorr_error"] = float(np.linalg.norm(R - R0) / max(np.linalg.norm(R0), 1e-12))
    return out


def readme_quick_start() -> dict:
    from icml25.missing_score import MissingScoreGGM

    rng = np.random.default_rng(0)
    d = 20
    cov = np.linalg.inv(np.eye(d) - 0.4 * np.eye(d, k=1) - 0.4 * np.eye(d, k=-1))
    X = rng.multivariate_normal(np.zeros(d), cov, size=300)
    X[rng.random(X.shape) < 0.2] = np.nan
    t0, c0 = time.perf_counter(), time.process_time()
    est = MissingScoreGGM(random_state=0).fit(X)
    return {"data": "readme-chain", "method": "ebic", "seed": 0, "d": d, "n": 300,
            "edges": len(est.edges()), "possible": d * (d - 1) // 2,
            "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


def _seeds(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def summarise(rows: list[dict]) -> str:
    lines = ["| data | method | seeds | edges / possible | F1 | AUC | pcorr error | wall s | "
             "CPU s |", "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["data"], r["method"]) for r in rows},
                  key=lambda k: ((REAL + GENERATED + ("readme-chain",)).index(k[0]),
                                 METHODS.index(k[1])))
    for data, method in keys:
        rs = [r for r in rows if r["data"] == data and r["method"] == method]

        def m(key, rs=rs):
            v = [r[key] for r in rs if r.get(key) is not None]
            return f"{np.mean(v):.3f}" if v else "-"

        truth = data in GENERATED
        lines.append(
            f"| {data} | {method} | {len(rs)} | {np.mean([r['edges'] for r in rs]):.1f} / "
            f"{rs[0]['possible']} | {m('f1_truth' if truth else 'f1_vs_complete')} | "
            f"{m('auc_truth' if truth else 'auc_vs_complete')} | "
            f"{'-' if truth else m('pcorr_error')} | {m('wall_s')} | {m('cpu_s')} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--data", default=",".join(REAL + GENERATED))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--cells", type=Path, default=Path("results/bench-missing-real"))
    ap.add_argument("--real-seeds", default=None, help="seeds for the real data (default "
                                                       "--seeds)")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    args.cells.mkdir(parents=True, exist_ok=True)
    rows = []
    qs = args.cells / "readme.json"
    if not qs.exists():
        qs.write_text(json.dumps(readme_quick_start()))
    rows.append(json.loads(qs.read_text()))
    print(rows[-1], flush=True)
    for name in args.data.split(","):
        seeds = _seeds(args.real_seeds or args.seeds) if name in REAL else _seeds(args.seeds)
        for seed in seeds:
            for method in args.methods.split(","):
                path = args.cells / f"{name}-{method}-{seed}.json"
                if not path.exists():
                    path.write_text(json.dumps(cell(name, method, seed)))
                rows.append(json.loads(path.read_text()))
                print(rows[-1], flush=True)
    print(summarise(rows))


if __name__ == "__main__":
    main()
