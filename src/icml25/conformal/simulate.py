"""The paper's three experiments as vectorised simulations (pure functions, no I/O).

Every trial draws a calibration set from a fixed pool, chooses lambda with each rule, and measures
the realised risk on the rest of the pool. All trials are searched at once (``calibrate_many``):
each bisection step evaluates one lambda per undecided trial, and the grid of each trial is the
set of points where its losses jump, so the result is the exact continuous-range answer.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from icml25.conformal.calibration import calibrate_many
from icml25.conformal.data import random_subsets
from icml25.core.stats import clopper_pearson

__all__ = ["MethodSpec", "TrialSummary", "clopper_pearson", "run_binomial",
           "run_heteroskedastic", "run_multilabel", "summarise"]


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    """One row of a results table: a rule plus its settings."""

    label: str
    method: str
    concentration: str = "hoeffding"  # the paper's RCPS baseline
    n_draws: int = 10_000
    exact: bool | None = None  # None: closed form where possible (only for 0/1 families)
    variant: str = "paper"


PAPER_METHODS = (
    MethodSpec("CRC", "crc"),
    MethodSpec("RCPS", "rcps"),
    MethodSpec("BQ", "bq"),
)


@dataclasses.dataclass
class TrialSummary:
    label: str
    failures: int
    trials: int
    failure_rate: float
    ci_low: float
    ci_high: float
    mean_lambda: float
    mean_risk: float
    mean_size: float  # interval length or set size (nan where not meaningful)
    infeasible: int

    def row(self) -> dict:
        return dataclasses.asdict(self)


def summarise(label: str, lam: np.ndarray, risk: np.ndarray, alpha: float,
              size: np.ndarray | None = None, feasible: np.ndarray | None = None) -> TrialSummary:
    fails = int((risk > alpha).sum())
    lo, hi = clopper_pearson(fails, risk.size)
    finite = np.isfinite(lam)
    return TrialSummary(
        label, fails, int(risk.size), fails / risk.size, lo, hi,
        float(lam[finite].mean()) if finite.any() else math.nan, float(risk.mean()),
        float(np.mean(size)) if size is not None else math.nan,
        int((~feasible).sum()) if feasible is not None else 0)


# --------------------------------------------------------------------------- binomial (5.1)
def run_binomial(pool: np.ndarray, n_cal: int, n_trials: int, alpha: float, beta: float,
                 methods=PAPER_METHODS, rng=None, random_state: int = 0,
                 cal_idx: np.ndarray | None = None) -> dict:
    """Section 5.1: loss(lambda) = share of a row's K uniforms above lambda; true risk 1-lambda."""
    rng = np.random.default_rng(rng)
    n_pool, k = pool.shape
    if cal_idx is None:
        cal_idx = random_subsets(n_pool, n_cal, n_trials, rng)
    cal = pool[cal_idx]  # (T, n, K)
    # Each trial's losses jump only at its own values: the grid is those values plus 0 and 1.
    grid = np.concatenate([np.zeros((n_trials, 1)), np.sort(cal.reshape(n_trials, -1), axis=1),
                           np.ones((n_trials, 1))], axis=1)
    rows_all = np.arange(n_trials)

    def loss_fn(rows, idx):
        lam = grid[rows, idx]
        return (cal[rows] > lam[:, None, None]).mean(axis=2)

    pool_sorted = np.sort(pool.ravel())
    n_val = n_pool - n_cal
    out = {}
    for m in methods:
        # The binomial loss is not 0/1: Monte Carlo for every row (see calibrate_many).
        res = calibrate_many(loss_fn, grid, n_trials, alpha, beta, m.method, 1.0,
                             direction="decreasing", concentration=m.concentration,
                             n_draws=m.n_draws, random_state=random_state, exact=False,
                             variant=m.variant)
        lam = res.lambdas
        above_pool = pool_sorted.size - np.searchsorted(pool_sorted, lam, side="right")
        above_cal = loss_fn(rows_all, np.maximum(res.index, 0)).sum(axis=1) * k
        risk = (above_pool - above_cal) / (n_val * k)
        out[m.label] = {"lambda": lam, "risk": risk, "feasible": res.feasible,
                        "summary": summarise(m.label, lam, risk, alpha, feasible=res.feasible)}
    out["_calibration"] = cal
    out["_cal_idx"] = cal_idx
    return out


# --------------------------------------------------------------------------- heteroskedastic (5.2)
def run_heteroskedastic(y: np.ndarray, n_cal: int, n_trials: int, alpha: float, beta: float,
                        methods=PAPER_METHODS, rng=None, random_state: int = 0,
                        cal_idx: np.ndarray | None = None) -> dict:
    """Section 5.2: interval [-lambda, lambda] around a zero prediction, miscoverage loss."""
    rng = np.random.default_rng(rng)
    scores = np.abs(np.asarray(y, dtype=float))
    n_pool = scores.size
    if cal_idx is None:
        cal_idx = random_subsets(n_pool, n_cal, n_trials, rng)
    cal = np.sort(scores[cal_idx], axis=1)  # (T, n), sorted: the jump points
    grid = np.concatenate([np.zeros((n_trials, 1)), cal], axis=1)

    def loss_fn(rows, idx):
        lam = grid[rows, idx]
        return (cal[rows] > lam[:, None]).astype(float)

    pool_sorted = np.sort(scores)
    n_val = n_pool - n_cal
    out = {}
    for m in methods:
        res = calibrate_many(loss_fn, grid, n_trials, alpha, beta, m.method, 1.0,
                             direction="decreasing", concentration=m.concentration,
                             n_draws=m.n_draws, random_state=random_state, exact=m.exact,
                             variant=m.variant)
        lam = res.lambdas
        miss_pool = n_pool - np.searchsorted(pool_sorted, lam, side="right")
        miss_cal = _count_above(cal, lam)
        risk = (miss_pool - miss_cal) / n_val
        out[m.label] = {"lambda": lam, "risk": risk, "feasible": res.feasible,
                        "summary": summarise(m.label, lam, risk, alpha, size=2 * lam,
                                             feasible=res.feasible)}
    out["_calibration"] = cal
    out["_cal_idx"] = cal_idx
    return out


def _count_above(sorted_rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    return (sorted_rows > values[:, None]).sum(axis=1)


# --------------------------------------------------------------------------- multilabel FNR (5.3)
def run_multilabel(scores: np.ndarray, labels: np.ndarray, n_cal: int, n_trials: int,
                   alpha: float, beta: float, methods=PAPER_METHODS, rng=None,
                   random_state: int = 0) -> dict:
    """Section 5.3: set = classes with score >= lambda; loss = false-negative rate (rises
    with lambda, so the least conservative admissible lambda is the largest)."""
    rng = np.random.default_rng(rng)
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels).astype(bool)
    n_pool, _ = scores.shape
    n_true = labels.sum(axis=1)
    keep = n_true > 0
    if not keep.all():  # FNR is undefined without true labels; the paper drops such images
        scores, labels, n_true = scores[keep], labels[keep], n_true[keep]
        n_pool = scores.shape[0]
    width = int(n_true.max())
    true_scores = np.full((n_pool, width), np.inf)  # +inf padding never counts as a miss
    r, c = np.nonzero(labels)
    rank = np.cumsum(labels, axis=1)[r, c] - 1
    true_scores[r, rank] = scores[r, c]
    grid = np.concatenate([[0.0], np.unique(true_scores[np.isfinite(true_scores)])])
    cal_idx = random_subsets(n_pool, n_cal, n_trials, rng)

    def fnr(images: np.ndarray, lam: np.ndarray) -> np.ndarray:
        out = np.empty(images.shape)
        step = max(1, 2_000_000 // (images.shape[1] * width))
        for s in range(0, images.shape[0], step):
            im = images[s:s + step]
            miss = (true_scores[im] < lam[s:s + step, None, None]).sum(axis=2)
            out[s:s + step] = miss / n_true[im]
        return out

    def loss_fn(rows, idx):
        return fnr(cal_idx[rows], grid[idx])

    all_scores = np.sort(scores.ravel())
    n_test = n_pool - n_cal
    out = {}
    for m in methods:
        res = calibrate_many(loss_fn, grid, n_trials, alpha, beta, m.method, 1.0,
                             direction="increasing", concentration=m.concentration,
                             n_draws=m.n_draws, random_state=random_state, exact=False,
                             variant=m.variant)
        lam = np.where(res.feasible, res.lambdas, 0.0)  # trivial predictor: every class
        pool_fnr = _pool_fnr(true_scores, n_true, lam)
        cal_fnr = fnr(cal_idx, lam).sum(axis=1)
        risk = (pool_fnr - cal_fnr) / n_test
        size_pool = all_scores.size - np.searchsorted(all_scores, lam, side="left")
        size_cal = _set_size_sum(scores, cal_idx, lam)
        size = (size_pool - size_cal) / n_test
        out[m.label] = {"lambda": lam, "risk": risk, "feasible": res.feasible,
                        "summary": summarise(m.label, lam, risk, alpha, size=size,
                                             feasible=res.feasible)}
    out["_calibration"] = cal_idx
    out["_grid"] = grid
    return out


def _pool_fnr(true_scores: np.ndarray, n_true: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Sum over the whole pool of per-image FNR at each lambda in ``lam``."""
    # The pool sum is a step function of lambda: sum of 1/n_true over true scores < lambda.
    flat = true_scores[np.isfinite(true_scores)]
    weight = np.broadcast_to((1.0 / n_true)[:, None], true_scores.shape)[np.isfinite(true_scores)]
    order = np.argsort(flat)
    cum = np.concatenate([[0.0], np.cumsum(weight[order])])
    return cum[np.searchsorted(flat[order], lam, side="left")]


def _set_size_sum(scores: np.ndarray, cal_idx: np.ndarray, lam: np.ndarray) -> np.ndarray:
    out = np.empty(cal_idx.shape[0])
    step = max(1, 4_000_000 // (cal_idx.shape[1] * scores.shape[1]))
    for s in range(0, cal_idx.shape[0], step):
        block = scores[cal_idx[s:s + step]]
        out[s:s + step] = (block >= lam[s:s + step, None, None]).sum(axis=(1, 2))
    return out
