"""Prediction-set scores side by side on the same splits (sklearn's bundled digits, no download).

For each of ``--splits`` random splits of digits into train (600) / calibration (``--n-cal``) /
test (the rest), one LogisticRegression is fitted on the training part and every score is
calibrated on the same calibration points and evaluated on the same test points. Reported per
score and rule: coverage, mean set size, share of empty sets, worst-class coverage.

``aps (old, inclusive)`` is the earlier behaviour: s = mass *including* the true label,
set {k : cumulative mass including k <= lambda} (empty when the top label's mass exceeds lambda).
``crepes (class_cond)`` is the crepes package's class-conditional hinge classifier, for reference,
when installed.

    .venv/bin/python benchmarks/conformal_scores.py [--splits 30] [--n-cal 500] [--alpha 0.1]
    .venv/bin/python benchmarks/conformal_scores.py --part weak        # 20 classes, weak model
    .venv/bin/python benchmarks/conformal_scores.py --part regression  # normalized / cqr widths
    .venv/bin/python benchmarks/conformal_scores.py --part mondrian    # class-conditional
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits, make_classification
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression

from icml25.conformal import ConformalClassifier, ConformalRegressor, InfeasibleRiskWarning
from icml25.conformal.scores import APS, RAPS, ClassificationScore, NormalizedResidual


class OldInclusiveAPS(ClassificationScore):
    """The earlier (inclusive) APS: cumulative mass including the label itself."""

    name = "aps-old"

    def label_scores(self, proba, u):
        order = np.argsort(-proba, axis=1, kind="stable")
        cum = np.cumsum(np.take_along_axis(proba, order, axis=1), axis=1)
        out = np.empty_like(proba)
        np.put_along_axis(out, order, cum, axis=1)
        return out


SCORES = {
    "lac": "lac",
    "aps (old, inclusive)": OldInclusiveAPS(),
    "aps (new default)": "aps",
    "aps_randomized": "aps_randomized",
    "raps (k_reg=1, lam=0.01)": RAPS(k_reg=1, lam=0.01),
    "raps randomized": RAPS(k_reg=1, lam=0.01, randomized=True),
    "top_k": "top_k",
}


def weak(splits: int, alpha: float) -> None:
    """20 generated classes, LogisticRegression right ~40% of the time: APS vs RAPS sizes."""
    X, y = make_classification(n_samples=8_000, n_features=30, n_informative=10, n_classes=20,
                               n_clusters_per_class=1, class_sep=1.0, random_state=0)
    model = LogisticRegression(max_iter=1_000).fit(X[:3_000], y[:3_000])
    pool = np.arange(3_000, 8_000)
    print(f"20 classes, accuracy {model.score(X[pool], y[pool]):.3f}, n_cal=1000, "
          f"{splits} splits, split rule, alpha={alpha}")
    print("| score | coverage | mean size |")
    print("|---|---|---|")
    for label, score in (("aps", APS()), ("aps_randomized", APS(randomized=True)),
                         ("raps (2, 0.05)", RAPS(2, 0.05)),
                         ("raps (2, 0.05) randomized", RAPS(2, 0.05, randomized=True)),
                         ("lac", "lac")):
        cov, size = [], []
        for r in range(splits):
            p = np.random.default_rng(r).permutation(pool)
            cal, te = p[:1_000], p[1_000:]
            clf = ConformalClassifier(model, method="split", alpha=alpha, conformity_score=score,
                                      prefit=True, random_state=r).fit(X[cal], y[cal])
            sets = clf.predict_set(X[te])
            cov.append(sets[np.arange(te.size), y[te]].mean())
            size.append(sets.sum(1).mean())
        print(f"| {label} | {np.mean(cov):.3f} | {np.mean(size):.2f} |")


def regression(splits: int, alpha: float) -> None:
    """Heteroskedastic data (noise sd 0.2 + x): widths of absolute, normalized and CQR."""
    rng = np.random.default_rng(7)
    X = rng.uniform(0, 4, size=(5_000, 2))
    y = 2 * X[:, 0] + rng.normal(size=5_000) * (0.2 + X[:, 0])
    pool = np.arange(2_000, 4_000)
    print(f"heteroskedastic regression, {splits} splits, n_cal=500, alpha={alpha}")
    print("| rule | score | coverage | mean width | share of splits below 1 - alpha |")
    print("|---|---|---|---|---|")
    scores = (("absolute", "absolute", None), ("normalized knn", "normalized", None),
              ("normalized knn_spread", NormalizedResidual("knn_spread"), None),
              ("normalized LinearRegression", NormalizedResidual(LinearRegression()), None),
              ("cqr (GradientBoosting quantile)", "cqr",
               GradientBoostingRegressor(loss="quantile", n_estimators=100, random_state=0)))
    for label, score, est in scores:
        for method in ("split", "bq"):
            reg = ConformalRegressor(est, conformity_score=score, method=method, alpha=alpha,
                                     random_state=0).fit(X[:2_000], y[:2_000])
            cov, width = [], []
            for r in range(splits):
                p = np.random.default_rng(r).permutation(pool)
                cal, te = p[:500], p[500:]
                reg.calibrate(X[cal], y[cal])
                iv = reg.predict_interval(X[te])
                cov.append(((y[te] >= iv[:, 0]) & (y[te] <= iv[:, 1])).mean())
                width.append((iv[:, 1] - iv[:, 0]).mean())
            print(f"| {method} | {label} | {np.mean(cov):.3f} | {np.mean(width):.2f} | "
                  f"{(np.asarray(cov) < 1 - alpha).mean():.2f} |")


def mondrian(splits: int, alpha: float) -> None:
    """Imbalanced 3 classes (75/20/5%): per-class coverage, marginal vs class-conditional."""
    X, y = make_classification(n_samples=8_000, n_features=6, n_informative=3, n_redundant=0,
                               n_classes=3, n_clusters_per_class=1, weights=[0.75, 0.2, 0.05],
                               class_sep=0.8, flip_y=0.0, random_state=3)
    model = LogisticRegression(max_iter=1_000).fit(X[:3_000], y[:3_000])
    pool = np.arange(3_000, 8_000)
    print(f"imbalanced classes, n_cal=1500, {splits} splits, alpha={alpha}")
    print("| calibration | coverage per class | share of splits below 1 - alpha, per class |")
    print("|---|---|---|")
    for method in ("split", "bq"):
        for cc in (False, True):
            cov = []
            for r in range(splits):
                p = np.random.default_rng(r).permutation(pool)
                cal, te = p[:1_500], p[1_500:]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", InfeasibleRiskWarning)
                    clf = ConformalClassifier(model, method=method, alpha=alpha, prefit=True,
                                              class_conditional=cc, random_state=r)
                    clf.fit(X[cal], y[cal])
                hit = clf.predict_set(X[te])[np.arange(te.size), y[te]]
                cov.append([hit[y[te] == k].mean() for k in range(3)])
            cov = np.asarray(cov)
            name = f"{'class-conditional' if cc else 'marginal'}, {method}"
            print(f"| {name} | {' / '.join(f'{v:.3f}' for v in cov.mean(0))} | "
                  f"{' / '.join(f'{v:.2f}' for v in (cov < 1 - alpha).mean(0))} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="digits",
                    choices=("digits", "weak", "regression", "mondrian"))
    ap.add_argument("--splits", type=int, default=None)
    ap.add_argument("--n-cal", type=int, default=500)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--methods", default="split,bq")
    args = ap.parse_args()
    if args.part != "digits":
        default = {"weak": 60, "regression": 200, "mondrian": 200}[args.part]
        {"weak": weak, "regression": regression, "mondrian": mondrian}[args.part](
            args.splits or default, args.alpha)
        return
    args.splits = args.splits or 30
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    methods = args.methods.split(",")
    rows: dict[tuple[str, str], list] = {}
    t0 = time.perf_counter()
    for split in range(args.splits):
        perm = np.random.default_rng(split).permutation(y.size)
        tr, cal, te = perm[:600], perm[600:600 + args.n_cal], perm[600 + args.n_cal:]
        model = LogisticRegression(max_iter=2_000).fit(X[tr], y[tr])
        for method in methods:
            for label, score in SCORES.items():
                for cc in (False, True) if label == "lac" else (False,):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", InfeasibleRiskWarning)
                        clf = ConformalClassifier(model, method=method, alpha=args.alpha,
                                                  conformity_score=score, prefit=True,
                                                  class_conditional=cc, random_state=split)
                        clf.fit(X[cal], y[cal])
                    sets = clf.predict_set(X[te])
                    hit = sets[np.arange(te.size), y[te]]
                    worst = min(hit[y[te] == k].mean() for k in range(10))
                    key = (method, label + (" class-conditional" if cc else ""))
                    rows.setdefault(key, []).append(
                        (hit.mean(), sets.sum(1).mean(), (sets.sum(1) == 0).mean(), worst))
    elapsed = time.perf_counter() - t0
    print(f"digits, {args.splits} splits, n_cal={args.n_cal}, alpha={args.alpha}, "
          f"LogisticRegression on 600 points; {elapsed:.1f} s")
    print("| rule | score | coverage | mean size | empty sets | worst-class coverage |")
    print("|---|---|---|---|---|---|")
    for (method, label), vals in rows.items():
        v = np.array(vals)
        se = v[:, 0].std(ddof=1) / np.sqrt(len(v))
        print(f"| {method} | {label} | {v[:, 0].mean():.3f} ± {se:.3f} | {v[:, 1].mean():.2f} | "
              f"{100 * v[:, 2].mean():.1f}% | {v[:, 3].mean():.3f} |")


if __name__ == "__main__":
    main()
