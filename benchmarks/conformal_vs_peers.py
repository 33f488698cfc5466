"""Our conformal methods beside MAPIE and crepes, on the same splits.

Data bundled with scikit-learn (no download): diabetes (regression, 442 rows) and digits
(classification, 1,797 rows). For each of ``--splits`` random splits into train / calibration /
test, every method sees the same rows: split-calibrated methods fit on train and calibrate on
the calibration part; CV+ / jackknife+ (no calibration set) fit on train + calibration together.
Per method: mean coverage, mean width (regression) or set size (classification), the share of
*failing calibration sets* (splits whose test coverage falls below 1 - alpha: what the paper's
``bq`` rule bounds at 1 - beta), and the time per split (fit + calibrate + predict).

MAPIE (>= 1.0 API) and crepes are optional: install them outside the project, e.g.
``python3.11 -m venv /work/peers && /work/peers/bin/pip install mapie crepes scikit-learn`` and
run this script with that interpreter and ``PYTHONPATH=src``. Missing peers are skipped and
named in the output.

    .venv/bin/python benchmarks/conformal_vs_peers.py [--splits 30] [--alpha 0.1]
    PYTHONPATH=src /work/peers/bin/python benchmarks/conformal_vs_peers.py

``--part`` picks the sections: ``regression``, ``classification`` (APS / RAPS / top-k with the
U term and the last label included, beside MAPIE's), ``shift`` (weighted split conformal on a
covariate-shifted split of diabetes) and ``cps`` (predictive distributions beside crepes'
``predict_cps``); default all.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import defaultdict

import numpy as np
from sklearn.datasets import load_diabetes, load_digits
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split

from icml25.conformal import ConformalClassifier, ConformalRegressor, InfeasibleRiskWarning


def _peers():
    found = {}
    try:
        import mapie  # noqa: F401
        from mapie.classification import SplitConformalClassifier
        from mapie.regression import CrossConformalRegressor, SplitConformalRegressor

        found["mapie"] = (SplitConformalRegressor, CrossConformalRegressor,
                          SplitConformalClassifier)
    except ImportError as exc:
        print(f"MAPIE not available ({exc}): skipped")
    try:
        from crepes import WrapClassifier, WrapRegressor

        found["crepes"] = (WrapRegressor, WrapClassifier)
    except ImportError as exc:
        print(f"crepes not available ({exc}): skipped")
    return found


def _version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return "?"


# --------------------------------------------------------------------------- regression
def regression_methods(alpha, peers):
    conf = 1 - alpha

    def ours(method, **kw):
        def run(model, xt, yt, xc, yc, xs):
            reg = ConformalRegressor(model, method=method, alpha=alpha, prefit=True,
                                     random_state=0, **kw)
            return reg.fit(xc, yc).predict_interval(xs)
        return run

    def ours_cv(cv, method="split"):
        def run(model, xt, yt, xc, yc, xs):
            reg = ConformalRegressor(LinearRegression(), method=method, alpha=alpha, cv=cv,
                                     random_state=0)
            return reg.fit(np.vstack([xt, xc]), np.r_[yt, yc]).predict_interval(xs)
        return run

    out = {"ours split": ours("split"), "ours crc": ours("crc"), "ours bq (beta 0.95)": ours("bq"),
           "ours CV+ (K=5)": ours_cv(5), "ours jackknife+": ours_cv("jackknife+"),
           "ours CV+ (K=5), bq rank": ours_cv(5, "bq")}
    if "mapie" in peers:
        split_cls, cross_cls, _ = peers["mapie"]

        def mapie_split(model, xt, yt, xc, yc, xs):
            m = split_cls(estimator=model, confidence_level=conf, prefit=True)
            return np.asarray(m.conformalize(xc, yc).predict_interval(xs)[1])[:, :, 0]

        def mapie_cross(cv):
            def run(model, xt, yt, xc, yc, xs):
                m = cross_cls(estimator=LinearRegression(), confidence_level=conf,
                              method="plus", cv=cv, random_state=0)
                m.fit_conformalize(np.vstack([xt, xc]), np.r_[yt, yc])
                return np.asarray(m.predict_interval(xs)[1])[:, :, 0]
            return run

        out["MAPIE split"] = mapie_split
        out["MAPIE CV+ (K=5)"] = mapie_cross(5)
        out["MAPIE jackknife+"] = mapie_cross(-1)
    if "crepes" in peers:
        wrap_reg = peers["crepes"][0]

        def crepes_split(model, xt, yt, xc, yc, xs):
            w = wrap_reg(model)
            w.calibrate(xc, yc)
            return np.asarray(w.predict_int(xs, confidence=conf))

        out["crepes split"] = crepes_split
    return out


def run_regression(splits, alpha, peers, jk_splits):
    X, y = load_diabetes(return_X_y=True)
    methods = regression_methods(alpha, peers)
    stats = defaultdict(lambda: defaultdict(list))
    for s in range(splits):
        xt, xr, yt, yr = train_test_split(X, y, train_size=200, random_state=s)
        xc, xs, yc, ys = train_test_split(xr, yr, train_size=120, random_state=1000 + s)
        model = LinearRegression().fit(xt, yt)
        for name, fn in methods.items():
            if "jackknife" in name and s >= jk_splits:
                continue  # n model fits per split: only the first jk_splits splits
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    iv = fn(model, xt, yt, xc, yc, xs)
            except Exception as exc:  # noqa: BLE001 - a peer's API may differ
                stats[name]["error"] = [str(exc)[:120]]
                continue
            stats[name]["time"].append(time.perf_counter() - start)
            cov = np.mean((iv[:, 0] <= ys) & (ys <= iv[:, 1]))
            stats[name]["coverage"].append(cov)
            stats[name]["width"].append(np.mean(iv[:, 1] - iv[:, 0]))
    return stats


# --------------------------------------------------------------------------- classification
def classification_methods(alpha, peers):
    conf = 1 - alpha

    def ours(method, score="lac"):
        def run(model, xc, yc, xs, seed=0):
            clf = ConformalClassifier(model, method=method, alpha=alpha, prefit=True,
                                      conformity_score=score, random_state=seed)
            return clf.fit(xc, yc).predict_set(xs)
        return run

    from icml25.conformal.scores import APS, RAPS

    out = {"ours lac split": ours("split"), "ours lac bq": ours("bq"),
           "ours aps split": ours("split", "aps"), "ours raps split": ours("split", "raps"),
           "ours aps, no U term (before)": ours("split", APS(tie_break=False)),
           "ours raps, no U term (before)": ours("split", RAPS(tie_break=False)),
           "ours aps_randomized split": ours("split", "aps_randomized"),
           "ours top_k split": ours("split", "top_k"),
           "ours top_k_randomized split": ours("split", "top_k_randomized"),
           "ours aps bq": ours("bq", "aps")}
    if "mapie" in peers:
        cls = peers["mapie"][2]

        def mapie(score):
            def run(model, xc, yc, xs, seed=0):
                m = cls(estimator=model, confidence_level=conf, conformity_score=score,
                        prefit=True, random_state=seed)
                return np.asarray(m.conformalize(xc, yc).predict_set(xs)[1])[:, :, 0]
            return run

        out["MAPIE lac"] = mapie("lac")
        out["MAPIE aps"] = mapie("aps")
        out["MAPIE raps"] = mapie("raps")
        out["MAPIE top_k"] = mapie("top_k")
    if "crepes" in peers:
        wrap = peers["crepes"][1]

        def crepes(model, xc, yc, xs):
            w = wrap(model)
            w.calibrate(xc, yc)
            sets = w.predict_set(xs, confidence=conf)
            if isinstance(sets, list):  # crepes 0.9: a list of labels per row
                out = np.zeros((xs.shape[0], model.classes_.size), dtype=bool)
                for i, labels in enumerate(sets):
                    out[i, np.searchsorted(model.classes_, labels)] = True
                return out
            return np.asarray(sets).astype(bool)

        out["crepes hinge"] = crepes
    return out


def run_classification(splits, alpha, peers):
    X, y = load_digits(return_X_y=True)
    methods = classification_methods(alpha, peers)
    stats = defaultdict(lambda: defaultdict(list))
    for s in range(splits):
        xt, xr, yt, yr = train_test_split(X, y, train_size=600, random_state=s)
        xc, xs, yc, ys = train_test_split(xr, yr, train_size=500, random_state=1000 + s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LogisticRegression(max_iter=2_000).fit(xt, yt)
        for name, fn in methods.items():
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sets = (fn(model, xc, yc, xs) if name.startswith("crepes")
                            else fn(model, xc, yc, xs, seed=s))  # U terms seeded per split
            except Exception as exc:  # noqa: BLE001
                stats[name]["error"] = [str(exc)[:120]]
                continue
            stats[name]["time"].append(time.perf_counter() - start)
            pos = np.searchsorted(model.classes_, ys)
            stats[name]["coverage"].append(np.mean(sets[np.arange(ys.size), pos]))
            stats[name]["width"].append(np.mean(sets.sum(axis=1)))
    return stats


# --------------------------------------------------------------------------- covariate shift
def _shift_ratio(X):
    """Test patients drawn around +0.5 sd of (bmi + s5) / sqrt(2): a Gaussian bump of sd 0.3
    (the band where the linear model errs most), as a likelihood ratio up to a constant."""
    mu, sd = X.mean(0), X.std(0)

    def ratio(A):
        z = ((A[:, 2] - mu[2]) / sd[2] + (A[:, 8] - mu[8]) / sd[8]) / np.sqrt(2)
        return np.exp(-(z - 0.5) ** 2 / (2 * 0.3 ** 2))
    return ratio


def run_shift(splits, alpha, peers):
    """diabetes: model on 200 rows, calibration 121 rows (unshifted), test = 121 draws with
    replacement from the other rows with probability proportional to the ratio."""
    from icml25.conformal.weighted import WeightedConformalRegressor

    X, y = load_diabetes(return_X_y=True)
    ratio = _shift_ratio(X)
    methods = {
        "ours split, unweighted": lambda m, xc, yc, xs: ConformalRegressor(
            m, method="split", alpha=alpha, prefit=True).fit(xc, yc),
        "ours bq, unweighted": lambda m, xc, yc, xs: ConformalRegressor(
            m, method="bq", alpha=alpha, prefit=True, random_state=0).fit(xc, yc),
        "ours weighted split, known ratio": lambda m, xc, yc, xs: WeightedConformalRegressor(
            m, likelihood_ratio=ratio, alpha=alpha, prefit=True).fit(xc, yc),
        "ours weighted split, domain classifier": lambda m, xc, yc, xs:
            WeightedConformalRegressor(m, alpha=alpha, prefit=True).fit(xc, yc, X_test=xs),
        "ours weighted bq (heuristic), known ratio": lambda m, xc, yc, xs:
            WeightedConformalRegressor(m, likelihood_ratio=ratio, alpha=alpha, method="bq",
                                       prefit=True).fit(xc, yc),
    }
    if "mapie" in peers:
        split_cls = peers["mapie"][0]

        class _Mapie:
            def __init__(self, m, xc, yc):
                self.m = split_cls(estimator=m, confidence_level=1 - alpha, prefit=True)
                self.m.conformalize(xc, yc)

            def predict_interval(self, xs):
                return np.asarray(self.m.predict_interval(xs)[1])[:, :, 0]

        methods["MAPIE split, unweighted"] = lambda m, xc, yc, xs: _Mapie(m, xc, yc)
    stats = defaultdict(lambda: defaultdict(list))
    for s in range(splits):
        rng = np.random.default_rng(s)
        p = rng.permutation(y.size)
        tr, cal, pool = p[:200], p[200:321], p[321:]
        w = ratio(X[pool])
        te = rng.choice(pool, size=pool.size, replace=True, p=w / w.sum())
        model = LinearRegression().fit(X[tr], y[tr])
        for name, make in methods.items():
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                iv = make(model, X[cal], y[cal], X[te]).predict_interval(X[te])
            stats[name]["time"].append(time.perf_counter() - start)
            stats[name]["coverage"].append(np.mean((iv[:, 0] <= y[te]) & (y[te] <= iv[:, 1])))
            stats[name]["width"].append(np.median(iv[:, 1] - iv[:, 0]))
            stats[name]["infinite"].append(np.mean(~np.isfinite(iv[:, 1])))
    return stats


# --------------------------------------------------------------------------- predictive dists
def run_cps(splits, peers):
    """diabetes, train 200 / calibration 120 / test 122: our ConformalPredictiveSystem beside
    crepes' predict_cps (non-smoothed): CDF values at the true y, and the [5, 95] percentiles."""
    from icml25.conformal import ConformalPredictiveSystem

    X, y = load_diabetes(return_X_y=True)
    rows = defaultdict(list)
    for s in range(splits):
        xt, xr, yt, yr = train_test_split(X, y, train_size=200, random_state=s)
        xc, xs, yc, ys = train_test_split(xr, yr, train_size=120, random_state=1000 + s)
        model = LinearRegression().fit(xt, yt)
        cps = ConformalPredictiveSystem(model, prefit=True).fit(xc, yc)
        ours_cdf = cps.predict_cdf(xs, ys, smoothing=False)
        pct = cps.predict_percentiles(xs, [5, 95])
        rows["ours coverage [5, 95]"].append(np.mean((pct[:, 0] <= ys) & (ys <= pct[:, 1])))
        rows["ours width [5, 95]"].append(np.mean(pct[:, 1] - pct[:, 0]))
        if "crepes" in peers:
            w = peers["crepes"][0](model)
            w.calibrate(xc, yc, cps=True)
            theirs = np.asarray(w.predict_cps(xs, y=ys, smoothing=False)).ravel()
            rows["max |ours - crepes| CDF at y"].append(np.max(np.abs(ours_cdf - theirs)))
            cp = np.asarray(w.predict_cps(xs, lower_percentiles=5, higher_percentiles=95))
            rows["crepes coverage [5, 95]"].append(np.mean((cp[:, 0] <= ys) & (ys <= cp[:, 1])))
            rows["crepes width [5, 95]"].append(np.mean(cp[:, 1] - cp[:, 0]))
    return rows


def table(stats, alpha, unit):
    lines = [f"| method | coverage | mean {unit} | failing calibration sets | ms per split | "
             "splits |", "| --- | --- | --- | --- | --- | --- |"]
    for name, st in stats.items():
        if "error" in st and not st["coverage"]:
            lines.append(f"| {name} | failed: {st['error'][0]} | | | | |")
            continue
        cov = np.array(st["coverage"])
        lines.append(f"| {name} | {cov.mean():.3f} | {np.mean(st['width']):.2f} | "
                     f"{100 * np.mean(cov < 1 - alpha):.0f}% | "
                     f"{1000 * np.median(st['time']):.1f} | {cov.size} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=30)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--jackknife-splits", type=int, default=10,
                    help="jackknife+ (320 fits per split) runs on the first N splits only")
    ap.add_argument("--part", action="append",
                    choices=["regression", "classification", "shift", "cps"],
                    help="sections to run (repeatable); default all")
    a = ap.parse_args()
    parts = a.part or ["regression", "classification", "shift", "cps"]
    warnings.simplefilter("ignore", InfeasibleRiskWarning)
    peers = _peers()
    print("peers: " + (", ".join(f"{p} {_version(p)}" for p in peers) or "none") +
          f"; {a.splits} splits, alpha {a.alpha}")
    if "regression" in parts:
        print("\nregression: diabetes, train 200 / calibration 120 / test 122 "
              "(CV+ / jackknife+ fit on the 320 train + calibration rows)\n")
        print(table(run_regression(a.splits, a.alpha, peers, a.jackknife_splits), a.alpha,
                    "width"))
        print(f"\n(jackknife+ rows: the first {min(a.jackknife_splits, a.splits)} splits only)")
    if "classification" in parts:
        print("\nclassification: digits, train 600 / calibration 500 / test 697, "
              "LogisticRegression\n")
        print(table(run_classification(a.splits, a.alpha, peers), a.alpha, "set size"))
    if "shift" in parts:
        print("\ncovariate shift: diabetes, model on 200 rows, calibration 121 (unshifted), test "
              "121 draws tilted toward +0.5 sd of (bmi + s5)/sqrt(2) (median width; share of "
              "infinite intervals)\n")
        st = run_shift(a.splits, a.alpha, peers)
        print(table(st, a.alpha, "(median) width"))
        print("\n" + "; ".join(f"{k}: {100 * np.mean(v['infinite']):.0f}% infinite"
                                for k, v in st.items()))
    if "cps" in parts:
        print("\npredictive distributions: diabetes, train 200 / calibration 120 / test 122\n")
        for k, v in run_cps(a.splits, peers).items():
            print(f"| {k} | {np.mean(v):.4g} |")


if __name__ == "__main__":
    main()
