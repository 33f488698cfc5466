"""Prediction-set scores side by side on the same splits (sklearn's bundled digits, no download).

For each of ``--splits`` random splits of digits into train (600) / calibration (``--n-cal``) /
test (the rest), one LogisticRegression is fitted on the training part and every score is
calibrated on the same calibration points and evaluated on the same test points. Reported per
score and rule: coverage, mean set size, share of empty sets, worst-class coverage.

``aps (old, inclusive)`` is the behaviour before issue 27: s = mass *including* the true label,
set {k : cumulative mass including k <= lambda} (empty when the top label's mass exceeds lambda).
``crepes (class_cond)`` is the crepes package's class-conditional hinge classifier, for reference,
when installed.

    .venv/bin/python benchmarks/conformal_scores.py [--splits 30] [--n-cal 500] [--alpha 0.1]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from icml25.conformal import ConformalClassifier, InfeasibleRiskWarning
from icml25.conformal.scores import RAPS, ClassificationScore


class OldInclusiveAPS(ClassificationScore):
    """The pre-issue-27 APS: cumulative mass including the label itself."""

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", type=int, default=30)
    ap.add_argument("--n-cal", type=int, default=500)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--methods", default="split,bq")
    args = ap.parse_args()
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
